package consume

import (
	"errors"
	"strings"
	"testing"
)

// TestAckItemRefusesWhatNoMessageCarries: an ack whose values no push could have stored,
// or that PostgreSQL cannot hold as text, is refused on its own (an *InputError for its
// per-item answer) instead of failing its whole batch in the database.
func TestAckItemRefusesWhatNoMessageCarries(t *testing.T) {
	t.Parallel()
	const pid = "0193a4f2-7c2d-7a31-8000-000000000001"
	tests := []struct {
		name    string
		in      AckInput
		wantErr string // "" = accepted
	}{
		{"a valid ack", AckInput{TransactionID: "t-1", PartitionID: pid}, ""},
		{"a NUL in transactionId", AckInput{TransactionID: "a\x00b", PartitionID: pid}, "transactionId contains a control character"},
		{"invalid UTF-8 in transactionId", AckInput{TransactionID: "a\xffb", PartitionID: pid}, "transactionId is not valid UTF-8"},
		{"a transactionId over the push limit", AckInput{TransactionID: strings.Repeat("x", 65536), PartitionID: pid}, "transactionId exceeds"},
		{"a NUL in the error text", AckInput{TransactionID: "t", PartitionID: pid, Status: "failed", Error: "boom\x00"}, "error must be UTF-8 text"},
		{"a control character in the error text is text", AckInput{TransactionID: "t", PartitionID: pid, Status: "failed", Error: "line\nbreak"}, ""},
		{"a NUL in the consumer group", AckInput{TransactionID: "t", PartitionID: pid, Group: "g\x00"}, "consumerGroup contains a control character"},
		{"a missing transactionId", AckInput{PartitionID: pid}, "transactionId is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tt.in.Item()
			var ie *InputError
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Item() = %v, want accepted", err)
			case tt.wantErr != "" && (!errors.As(err, &ie) || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Item() = %v, want an *InputError containing %q", err, tt.wantErr)
			}
		})
	}
}
