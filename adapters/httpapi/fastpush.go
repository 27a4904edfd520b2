package httpapi

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

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
	if !json.Valid(body) {
		return nil, false
	}
	s := scanner{b: body}
	if s.next() != '{' {
		return nil, false
	}
	s.i++
	found := false
	for s.next() != '}' {
		key, ok := s.plainString()
		if !ok || s.next() != ':' {
			return nil, false
		}
		s.i++
		if string(key) != "items" {
			if bytes.EqualFold(key, []byte("items")) {
				return nil, false // encoding/json matches keys case-insensitively
			}
			s.skip()
		} else if found {
			return nil, false // a repeated "items" merges into the first in encoding/json
		} else if items, ok = s.items(); !ok {
			return nil, false
		} else {
			found = true
		}
		if s.next() == ',' {
			s.i++
		}
	}
	return items, found
}

// scanner walks JSON already known to be valid.
type scanner struct {
	b []byte
	i int
}

// next skips whitespace and returns the next byte (0 at the end).
func (s *scanner) next() byte {
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return c
		}
	}
	return 0
}

// plainString reads a string without escape sequences and returns its bytes.
func (s *scanner) plainString() ([]byte, bool) {
	if s.next() != '"' {
		return nil, false
	}
	start := s.i + 1
	end := bytes.IndexByte(s.b[start:], '"')
	if end < 0 {
		return nil, false
	}
	raw := s.b[start : start+end]
	if bytes.IndexByte(raw, '\\') >= 0 {
		return nil, false
	}
	s.i = start + end + 1
	return raw, true
}

// skip passes over one value.
func (s *scanner) skip() {
	depth := 0
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case '"':
			s.i++
			for s.i < len(s.b) && s.b[s.i] != '"' {
				if s.b[s.i] == '\\' {
					s.i++
				}
				s.i++
			}
			s.i++
			if depth == 0 {
				return
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return // end of the enclosing container: a scalar ended here
			}
			depth--
			if depth == 0 {
				s.i++
				return
			}
		case ',':
			if depth == 0 {
				return
			}
		}
		s.i++
	}
}

// members walks the object at the scanner: for each member it calls member with the key,
// the scanner standing at the value, which member reads or skips. It reports false when
// the object cannot be read here (then encoding/json decides) or member said so.
func (s *scanner) members(member func(key []byte) bool) bool {
	if s.next() != '{' {
		return false
	}
	s.i++
	for s.next() != '}' {
		key, ok := s.plainString()
		if !ok || s.next() != ':' {
			return false
		}
		s.i++
		if !member(key) {
			return false
		}
		if s.next() == ',' {
			s.i++
		}
	}
	s.i++
	return true
}

// items reads the items array.
func (s *scanner) items() ([]push.Item, bool) {
	if s.next() != '[' {
		return nil, false
	}
	s.i++
	var out []push.Item
	for s.next() != ']' {
		it, ok := s.item()
		if !ok {
			return nil, false
		}
		out = append(out, it)
		if s.next() == ',' {
			s.i++
		}
	}
	s.i++
	if out == nil {
		out = []push.Item{}
	}
	return out, true
}

// item reads one item object.
func (s *scanner) item() (push.Item, bool) {
	var it push.Item
	var hasQueue, hasPayload bool
	ok := s.members(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "queue":
			it.Queue, ok = s.name(false)
			hasQueue = ok
			return ok
		case "partition":
			it.Partition, ok = s.name(true)
			return ok
		case "transactionId":
			it.TransactionID, ok = s.name(true)
			return ok
		case "payload":
			s.next()
			start := s.i
			s.skip()
			it.Payload, hasPayload = bytes.TrimRight(s.b[start:s.i], " \t\r\n"), true
			return true
		default:
			if foldsToField(key) {
				return false // encoding/json matches keys case-insensitively
			}
			s.skip()
			return true
		}
	})
	return it, ok && hasQueue && hasPayload
}

// name reads a non-empty, escape-free, valid UTF-8 string; with nullable, null reads as
// "" (absent).
func (s *scanner) name(nullable bool) (string, bool) {
	if s.next() == 'n' {
		if !nullable {
			return "", false
		}
		s.i += len("null")
		return "", true
	}
	raw, ok := s.plainString()
	if !ok || len(raw) == 0 || !utf8.Valid(raw) {
		return "", false
	}
	return string(raw), true
}

// foldsToField reports whether key is an item field name in another case.
func foldsToField(key []byte) bool {
	for _, f := range []string{"queue", "partition", "transactionId", "payload"} {
		if bytes.EqualFold(key, []byte(f)) {
			return true
		}
	}
	return false
}
