package load

import (
	"bytes"
	"encoding/json"

	"github.com/queen-go/queen/core/jsonscan"
)

// The load tool reads every pop and ack answer on the cores the broker runs on, so it
// decodes them with core/jsonscan instead of encoding/json: a 100-message pop answer
// (about 40 KB) cost it 5-6 µs of CPU per message through json.Unmarshal (reflection, a
// validation pass, one allocation per string field), about half of the tool's CPU in the
// consume mode. The scanner handles the answers' usual form (string values without
// escapes, keys spelt as the broker spells them) and reports anything else as not
// handled; the callers then decode with encoding/json, which gives the same result (or
// the error) for those.

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
	s := jsonscan.New(body)
	ok := s.Object(func(key []byte) bool {
		switch string(key) {
		case "leaseId":
			return s.StringInto(text, &b.LeaseID)
		case "consumerGroup":
			return s.StringInto(text, &b.ConsumerGroup)
		case "messages":
			return messages(&s, text, raw, b)
		}
		return s.SkipField(key, batchFields...)
	})
	return ok && s.End()
}

// messages reads the messages array (null leaves it nil).
func messages(s *jsonscan.Scanner, text string, raw []byte, b *Batch) bool {
	if b.Messages != nil {
		return false // a repeated key: encoding/json reuses the first array, not worth copying
	}
	if s.Null() {
		return true
	}
	// A message takes some 350 bytes of an answer (less with tiny payloads): room for
	// the usual batch in one allocation, without counting first.
	b.Messages = make([]Message, 0, (len(s.Bytes())-s.Offset())/256+1)
	return s.Array(func() bool {
		b.Messages = append(b.Messages, Message{})
		return message(s, text, raw, &b.Messages[len(b.Messages)-1])
	})
}

// message reads one message object into m.
func message(s *jsonscan.Scanner, text string, raw []byte, m *Message) bool {
	return s.Object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return s.StringInto(text, &m.ID)
		case "transactionId":
			return s.StringInto(text, &m.TransactionID)
		case "partitionId":
			return s.StringInto(text, &m.PartitionID)
		case "partition":
			return s.StringInto(text, &m.Partition)
		case "leaseId":
			return s.StringInto(text, &m.LeaseID)
		case "consumerGroup":
			return s.StringInto(text, &m.ConsumerGroup)
		case "deliveryAttempt":
			return s.IntInto(&m.DeliveryAttempt)
		case "data":
			start, end, ok := s.SkipValue()
			m.Data = raw[start:end:end]
			return ok
		}
		return s.SkipField(key, messageFields...)
	})
}

// scanAckRefused counts the items of an ack answer whose success is not true (absent,
// false or null: encoding/json leaves the bool false for all three); ok is false when the
// scanner does not handle the answer.
func scanAckRefused(body []byte) (refused int, ok bool) {
	s := jsonscan.New(body)
	ok = s.Array(func() bool {
		success := false
		done := s.Object(func(key []byte) bool {
			if string(key) != "success" {
				return s.SkipField(key, "success")
			}
			start, end, ok := s.SkipValue()
			switch string(s.Bytes()[start:end]) {
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
	return refused, ok && s.End()
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
