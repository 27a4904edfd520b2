package httpapi

import (
	"github.com/queen-go/queen/core/jsonscan"
	"github.com/queen-go/queen/core/push"
)

// fastPush parses the common shape of a push body without reflection and without
// copying payloads: each item's Payload is a subslice of body (zero-copy
// ingest; body lives until the push has committed). It handles exactly this shape:
//
//	{"items":[{"queue":"…","partition":"…"|null,"transactionId":"…"|null,"payload":<any>, <other keys>}, …], <other keys>}
//
// with names free of escape sequences. Anything else — invalid JSON, other types, escaped
// names, missing fields, empty names — returns ok=false and the caller falls back to the
// reflective parser, which owns every error message. So this function never decides
// that a body is bad; it only accepts, faster, bodies the slow path would accept
// identically (a differential fuzz test holds it to that).
func fastPush(body []byte) (items []push.Item, ok bool) {
	s := jsonscan.New(body)
	found := false
	ok = s.Object(func(key []byte) bool {
		if string(key) != "items" {
			return s.SkipField(key, "items")
		}
		if found {
			return false // a repeated "items" merges into the first in encoding/json
		}
		found = true
		items, ok = fastItems(&s)
		return ok
	})
	return items, ok && found && s.End()
}

// fastItems reads the items array.
func fastItems(s *jsonscan.Scanner) ([]push.Item, bool) {
	var out []push.Item
	ok := s.Array(func() bool {
		out = append(out, push.Item{})
		return fastItem(s, &out[len(out)-1])
	})
	if ok && out == nil {
		out = []push.Item{}
	}
	return out, ok
}

// fastItem reads one item object into it.
func fastItem(s *jsonscan.Scanner, it *push.Item) bool {
	var hasQueue, hasPayload bool
	ok := s.Object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "queue":
			it.Queue, ok = pushName(s, false)
			hasQueue = ok
			return ok
		case "partition":
			it.Partition, ok = pushName(s, true)
			return ok
		case "transactionId":
			it.TransactionID, ok = pushName(s, true)
			return ok
		case "payload":
			start, end, ok := s.SkipValue()
			it.Payload, hasPayload = s.Bytes()[start:end], ok
			return ok
		default:
			return s.SkipField(key, "queue", "partition", "transactionId", "payload")
		}
	})
	return ok && hasQueue && hasPayload
}

// pushName reads a non-empty, escape-free, valid UTF-8 string; with nullable, null reads as
// "" (absent).
func pushName(s *jsonscan.Scanner, nullable bool) (string, bool) {
	if s.Null() {
		return "", nullable
	}
	raw, ok := s.Name()
	return string(raw), ok
}
