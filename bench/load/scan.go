package load

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The load tool reads every pop and ack answer on the cores the broker runs on, so it
// decodes them with a small scanner instead of encoding/json: a 100-message pop answer
// (about 40 KB) cost it 5-6 µs of CPU per message through json.Unmarshal (reflection, a
// validation pass, one allocation per string field), about half of the tool's CPU in the
// consume mode (docs/benchmarks.md). The scanner handles the answers' usual form (string values
// without escapes, keys spelt as the broker spells them) and reports anything else as
// not handled; the callers then decode with encoding/json, which gives the same result
// (or the error) for those.

// scanner walks one JSON document.
type scanner struct {
	b []byte
	i int
}

// ws skips insignificant whitespace.
func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// consume skips whitespace and then c; false when the next byte is not c.
func (s *scanner) consume(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// plainString reads a string without escapes or control characters and returns its
// contents' bounds; ok is false for anything else.
func (s *scanner) plainString() (start, end int, ok bool) {
	if !s.consume('"') {
		return 0, 0, false
	}
	start = s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return start, s.i - 1, true
		case c == '\\' || c < 0x20:
			return 0, 0, false
		}
		s.i++
	}
	return 0, 0, false
}

// skipString skips a string, escapes included.
func (s *scanner) skipString() bool {
	if !s.consume('"') {
		return false
	}
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return true
		case c == '\\':
			if !s.escape() {
				return false
			}
			continue
		case c < 0x20:
			return false
		}
		s.i++
	}
	return false
}

// escape skips the escape sequence at s.i.
func (s *scanner) escape() bool {
	if s.i+1 >= len(s.b) {
		return false
	}
	switch s.b[s.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i += 2
		return true
	case 'u':
		if s.i+6 > len(s.b) {
			return false
		}
		for _, h := range s.b[s.i+2 : s.i+6] {
			if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
				return false
			}
		}
		s.i += 6
		return true
	}
	return false
}

// skipValue skips one value of any kind and returns its bounds.
func (s *scanner) skipValue() (start, end int, ok bool) {
	s.ws()
	start = s.i
	if s.i >= len(s.b) {
		return 0, 0, false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		ok = s.skipString()
	case c == '{':
		ok = s.skipContainer('}', true)
	case c == '[':
		ok = s.skipContainer(']', false)
	case c == 't':
		ok = s.literal("true")
	case c == 'f':
		ok = s.literal("false")
	case c == 'n':
		ok = s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		ok = s.number()
	}
	return start, s.i, ok
}

func (s *scanner) literal(lit string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return false
	}
	s.i += len(lit)
	return true
}

// number skips a number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	s.skip('-')
	switch {
	case s.skip('0'):
	case s.digits() == 0:
		return false
	}
	if s.skip('.') && s.digits() == 0 {
		return false
	}
	if s.skip('e') || s.skip('E') {
		_ = s.skip('+') || s.skip('-')
		if s.digits() == 0 {
			return false
		}
	}
	return true
}

// skip consumes c if it is next (no whitespace first).
func (s *scanner) skip(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// digits consumes a run of digits and returns its length.
func (s *scanner) digits() int {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}

// skipContainer skips an object (keyed) or an array whose opening byte is next.
func (s *scanner) skipContainer(closing byte, keyed bool) bool {
	s.i++
	if s.consume(closing) {
		return true
	}
	for {
		if keyed {
			if !s.skipString() || !s.consume(':') {
				return false
			}
		}
		if _, _, ok := s.skipValue(); !ok {
			return false
		}
		if s.consume(closing) {
			return true
		}
		if !s.consume(',') {
			return false
		}
	}
}

// object calls field with each key of the object that is next; field reads the value.
// A key with escapes, or one field refuses, ends the walk with false.
func (s *scanner) object(field func(key []byte) bool) bool {
	if !s.consume('{') {
		return false
	}
	if s.consume('}') {
		return true
	}
	for {
		ks, ke, ok := s.plainString()
		if !ok || !s.consume(':') || !field(s.b[ks:ke]) {
			return false
		}
		if s.consume('}') {
			return true
		}
		if !s.consume(',') {
			return false
		}
	}
}

// array calls elem for each element of the array that is next.
func (s *scanner) array(elem func() bool) bool {
	if !s.consume('[') {
		return false
	}
	if s.consume(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.consume(']') {
			return true
		}
		if !s.consume(',') {
			return false
		}
	}
}

// end reports whether only whitespace is left.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// skipField skips the value of key unless encoding/json would store it in a field
// tagged with one of names (it matches keys without regard to case): false then, so
// the caller falls back.
func (s *scanner) skipField(key []byte, names ...string) bool {
	for _, n := range names {
		if strings.EqualFold(string(key), n) {
			return false
		}
	}
	_, _, ok := s.skipValue()
	return ok
}

// stringInto reads a string (or null, which leaves dst alone as encoding/json does) into
// dst as a substring of text, the document as one string.
func (s *scanner) stringInto(text string, dst *string) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == 'n' {
		return s.literal("null")
	}
	start, end, ok := s.plainString()
	if !ok || !utf8.Valid(s.b[start:end]) { // encoding/json would replace invalid bytes
		return false
	}
	*dst = text[start:end]
	return true
}

// intInto reads an integer (or null) into dst.
func (s *scanner) intInto(dst *int) bool {
	start, end, ok := s.skipValue()
	if !ok || string(s.b[start:end]) == "null" {
		return ok
	}
	n, err := strconv.Atoi(string(s.b[start:end]))
	if err != nil {
		return false
	}
	*dst = n
	return true
}

// batchFields and messageFields are the JSON names of Batch's and Message's fields.
var (
	batchFields   = []string{"leaseId", "consumerGroup", "messages"}
	messageFields = []string{"id", "transactionId", "partitionId", "partition", "leaseId", "consumerGroup", "data", "deliveryAttempt"}
)

// scanBatch decodes a pop answer into b; false when the scanner does not handle it.
// Strings are substrings of one copy of body (one allocation, not one per field), and
// Data slices of another: body itself is the client's reused buffer.
func scanBatch(body []byte, b *Batch) bool {
	text := string(body)
	raw := bytes.Clone(body)
	s := &scanner{b: body}
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "leaseId":
			return s.stringInto(text, &b.LeaseID)
		case "consumerGroup":
			return s.stringInto(text, &b.ConsumerGroup)
		case "messages":
			return s.messages(text, raw, b)
		}
		return s.skipField(key, batchFields...)
	})
	return ok && s.end()
}

// messages reads the messages array (null leaves it nil).
func (s *scanner) messages(text string, raw []byte, b *Batch) bool {
	if b.Messages != nil {
		return false // a repeated key: encoding/json reuses the first array, not worth copying
	}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == 'n' {
		return s.literal("null")
	}
	// A message takes some 350 bytes of an answer (less with tiny payloads): room for
	// the usual batch in one allocation, without counting first.
	b.Messages = make([]Message, 0, (len(s.b)-s.i)/256+1)
	return s.array(func() bool {
		b.Messages = append(b.Messages, Message{})
		return s.message(text, raw, &b.Messages[len(b.Messages)-1])
	})
}

// message reads one message object into m.
func (s *scanner) message(text string, raw []byte, m *Message) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return s.stringInto(text, &m.ID)
		case "transactionId":
			return s.stringInto(text, &m.TransactionID)
		case "partitionId":
			return s.stringInto(text, &m.PartitionID)
		case "partition":
			return s.stringInto(text, &m.Partition)
		case "leaseId":
			return s.stringInto(text, &m.LeaseID)
		case "consumerGroup":
			return s.stringInto(text, &m.ConsumerGroup)
		case "deliveryAttempt":
			return s.intInto(&m.DeliveryAttempt)
		case "data":
			start, end, ok := s.skipValue()
			m.Data = raw[start:end:end]
			return ok
		}
		return s.skipField(key, messageFields...)
	})
}

// scanAckRefused counts the items of an ack answer whose success is not true (absent,
// false or null: encoding/json leaves the bool false for all three); ok is false when the
// scanner does not handle the answer.
func scanAckRefused(body []byte) (refused int, ok bool) {
	s := &scanner{b: body}
	ok = s.array(func() bool {
		success := false
		done := s.object(func(key []byte) bool {
			if string(key) != "success" {
				return s.skipField(key, "success")
			}
			start, end, ok := s.skipValue()
			switch string(s.b[start:end]) {
			case "true":
				success = true
			case "false":
				success = false
			case "null":
			default:
				return false
			}
			return ok
		})
		if !success {
			refused++
		}
		return done
	})
	return refused, ok && s.end()
}

// appendQuoted appends s as a JSON string. strconv.AppendQuote cost the consume mode a
// sixth of its CPU (a printability test per rune) and writes Go escapes, some of which
// JSON does not have (\x00); the usual id or name goes through as is.
func appendQuoted(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			b, _ := json.Marshal(s) // a string always encodes
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
