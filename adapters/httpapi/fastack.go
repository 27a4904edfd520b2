package httpapi

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// fastAckBatch parses the usual shape of an ack/batch body without reflection, the way
// fastPush parses a push body: json.Unmarshal cost the broker about 2 µs of CPU per
// acknowledged message (reflection, one allocation per string field), a sixth of its
// consume path (docs/benchmarks.md). It handles
//
//	{"consumerGroup":"…"|null, "acknowledgments":[{<ackItem's keys>: "…"|null, <other keys>}, …]|null, <other keys>}
//
// with keys spelt as the fields' tags and string values free of escapes. Anything else
// returns false and the caller decodes with encoding/json, which owns every error
// message; what this accepts it decodes as encoding/json would (a differential fuzz test
// holds it to that). The strings are substrings of one copy of raw.
func fastAckBatch(raw []byte, body *ackBatchBody) bool {
	if !json.Valid(raw) {
		return false
	}
	text := string(raw)
	s := scanner{b: raw}
	return s.members(func(key []byte) bool {
		switch string(key) {
		case "consumerGroup":
			return s.textInto(text, &body.ConsumerGroup)
		case "acknowledgments":
			// A repeated key merges into the first array in encoding/json.
			return body.Acknowledgments == nil && s.ackItems(text, body)
		default:
			s.skip()
			return !foldsToAny(key, "consumerGroup", "acknowledgments")
		}
	})
}

// ackItems reads the acknowledgments array (null leaves it absent).
func (s *scanner) ackItems(text string, body *ackBatchBody) bool {
	if s.next() == 'n' {
		s.i += len("null")
		return true
	}
	if s.next() != '[' {
		return false
	}
	s.i++
	// An item takes some 150 bytes of a body: room for the usual batch in one
	// allocation, without counting first.
	items := make([]ackItem, 0, (len(s.b)-s.i)/128+1)
	for s.next() != ']' {
		items = append(items, ackItem{})
		if !s.ackItem(text, &items[len(items)-1]) {
			return false
		}
		if s.next() == ',' {
			s.i++
		}
	}
	s.i++
	body.Acknowledgments = &items
	return true
}

// ackItem reads one item object into it.
func (s *scanner) ackItem(text string, it *ackItem) bool {
	return s.members(func(key []byte) bool {
		switch string(key) {
		case "transactionId":
			return s.textInto(text, &it.TransactionID)
		case "partitionId":
			return s.textInto(text, &it.PartitionID)
		case "status":
			return s.textInto(text, &it.Status)
		case "consumerGroup":
			return s.textInto(text, &it.ConsumerGroup)
		case "leaseId":
			return s.textInto(text, &it.LeaseID)
		case "error":
			return s.textInto(text, &it.Error)
		default:
			s.skip()
			return !foldsToAny(key, "transactionId", "partitionId", "status", "consumerGroup", "leaseId", "error")
		}
	})
}

// textInto reads an escape-free, valid UTF-8 string into dst as a substring of text (the
// body as one string); null leaves dst alone, as in encoding/json.
func (s *scanner) textInto(text string, dst *string) bool {
	if s.next() == 'n' {
		s.i += len("null")
		return true
	}
	start := s.i + 1
	raw, ok := s.plainString()
	if !ok || !utf8.Valid(raw) { // encoding/json would replace invalid bytes
		return false
	}
	*dst = text[start : start+len(raw)]
	return true
}

// foldsToAny reports whether key is one of names in another letter case (encoding/json
// matches keys without regard to case).
func foldsToAny(key []byte, names ...string) bool {
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}
