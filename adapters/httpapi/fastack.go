package httpapi

import "github.com/queen-go/queen/core/jsonscan"

// fastAckBatch parses the usual shape of an ack/batch body without reflection, the way
// fastPush parses a push body: json.Unmarshal cost the broker about 2 µs of CPU per
// acknowledged message (reflection, one allocation per string field), a sixth of its
// consume path. It handles
//
//	{"consumerGroup":"…"|null, "acknowledgments":[{<ackItem's keys>: "…"|null, <other keys>}, …]|null, <other keys>}
//
// with keys spelt as the fields' tags and string values free of escapes. Anything else
// returns false and the caller decodes with encoding/json, which owns every error
// message; what this accepts it decodes as encoding/json would (a differential fuzz test
// holds it to that). The strings are substrings of one copy of raw.
func fastAckBatch(raw []byte, body *ackBatchBody) bool {
	text := string(raw)
	s := jsonscan.New(raw)
	ok := s.Object(func(key []byte) bool {
		switch string(key) {
		case "consumerGroup":
			return s.StringInto(text, &body.ConsumerGroup)
		case "acknowledgments":
			// A repeated key merges into the first array in encoding/json.
			return body.Acknowledgments == nil && ackItems(&s, text, body)
		default:
			return s.SkipField(key, "consumerGroup", "acknowledgments")
		}
	})
	return ok && s.End()
}

// ackItems reads the acknowledgments array (null leaves it absent).
func ackItems(s *jsonscan.Scanner, text string, body *ackBatchBody) bool {
	if s.Null() {
		return true
	}
	// An item takes some 150 bytes of a body: room for the usual batch in one
	// allocation, without counting first.
	items := make([]ackItem, 0, (len(s.Bytes())-s.Offset())/128+1)
	ok := s.Array(func() bool {
		items = append(items, ackItem{})
		return readAckItem(s, text, &items[len(items)-1])
	})
	body.Acknowledgments = &items
	return ok
}

// readAckItem reads one item object into it.
func readAckItem(s *jsonscan.Scanner, text string, it *ackItem) bool {
	return s.Object(func(key []byte) bool {
		switch string(key) {
		case "transactionId":
			return s.StringInto(text, &it.TransactionID)
		case "partitionId":
			return s.StringInto(text, &it.PartitionID)
		case "status":
			return s.StringInto(text, &it.Status)
		case "consumerGroup":
			return s.StringInto(text, &it.ConsumerGroup)
		case "leaseId":
			return s.StringInto(text, &it.LeaseID)
		case "error":
			return s.StringInto(text, &it.Error)
		default:
			return s.SkipField(key, "transactionId", "partitionId", "status", "consumerGroup", "leaseId", "error")
		}
	})
}
