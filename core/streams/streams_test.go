package streams_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/core/streams"
	"github.com/queen-go/queen/ports"
)

func newService(t *testing.T) *streams.Service {
	t.Helper()
	codec, err := segment.NewCodec(1)
	if err != nil {
		t.Fatal(err)
	}
	return streams.New(memory.NewStore(), push.New(nil, push.Options{Codec: codec}), streams.Options{})
}

func key(s string) *string { return &s }

const pid = "00000000-0000-4000-8000-000000000001"

// TestCycleRefusals: what a cycle refuses before the store, as a 400 (*InputError) or
// as a failed cycle (*Failure), and the registration's errors.
func TestCycleRefusals(t *testing.T) {
	t.Parallel()
	s := newService(t)
	reg, err := s.Register(context.Background(), ports.StreamQuery{Name: "q", SourceQueue: "src", ConfigHash: "h"}, false)
	if err != nil {
		t.Fatal(err)
	}
	q := reg.Query.ID
	tests := []struct {
		name    string
		in      streams.CycleInput
		input   bool   // an *InputError (400)
		failure string // else a *Failure containing this
	}{
		{"query id not a UUID", streams.CycleInput{QueryID: "x", PartitionID: pid}, true, ""},
		{"partition id not a UUID", streams.CycleInput{QueryID: q, PartitionID: "x"}, true, ""},
		{"lease id not a UUID", streams.CycleInput{QueryID: q, PartitionID: pid, Ack: &streams.Ack{TransactionID: "t", LeaseID: "x"}}, true, ""},
		{"unknown op", streams.CycleInput{QueryID: q, PartitionID: pid, Ops: []streams.Op{{Type: "merge", Key: key("k")}}}, false, "Unknown state_op type: merge"},
		{"op without key", streams.CycleInput{QueryID: q, PartitionID: pid, Ops: []streams.Op{{Type: "upsert"}}}, false, "key is required"},
		{"ack without transaction id", streams.CycleInput{QueryID: q, PartitionID: pid, Ack: &streams.Ack{}}, false, "ack.transactionId is required"},
		{"unknown ack status", streams.CycleInput{QueryID: q, PartitionID: pid, Ack: &streams.Ack{TransactionID: "t", Status: "maybe"}}, false, "Unknown ack.status: maybe"},
		{"item without queue", streams.CycleInput{QueryID: q, PartitionID: pid, Items: []push.SinkItem{{}}}, false, "queue"},
		{"unknown message", streams.CycleInput{QueryID: q, PartitionID: pid, Ack: &streams.Ack{TransactionID: "t"}}, false, "Message not found"},
		{"upsert for an unknown query", streams.CycleInput{QueryID: pid, PartitionID: pid, Ops: []streams.Op{{Type: "upsert", Key: key("k")}}}, false, "unknown query_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Cycle(context.Background(), ports.DefaultTenant, "", tt.in)
			var ie *streams.InputError
			var f *streams.Failure
			switch {
			case tt.input && !errors.As(err, &ie):
				t.Fatalf("%v, want an input error", err)
			case !tt.input && (!errors.As(err, &f) || !strings.Contains(f.Msg, tt.failure)):
				t.Fatalf("%v, want a failure with %q", err, tt.failure)
			}
		})
	}
	for _, bad := range []ports.StreamQuery{{SourceQueue: "s", ConfigHash: "h"}, {Name: "n", ConfigHash: "h"}, {Name: "n", SourceQueue: "s"}} {
		if _, err := s.Register(context.Background(), bad, false); !errors.As(err, new(*streams.InputError)) {
			t.Fatalf("register %+v: %v, want an input error", bad, err)
		}
	}
	_, err = s.Register(context.Background(), ports.StreamQuery{Name: "q", SourceQueue: "src", ConfigHash: "h2"}, false)
	var mm *streams.Mismatch
	if !errors.As(err, &mm) || mm.Query.ID != q || !strings.Contains(err.Error(), "config_hash mismatch") {
		t.Fatalf("changed hash: %v", err)
	}
}

// TestSinkTransactionID: the id depends on everything that identifies the output, and
// on nothing else.
func TestSinkTransactionID(t *testing.T) {
	t.Parallel()
	base := streams.SinkTransactionID("q", "p", "ack\x1fg\x1ft", 0, "sink", "Default", []byte(`{"a":1}`))
	if !strings.HasPrefix(base, "stream-") || len(base) != len("stream-")+32 {
		t.Fatalf("shape: %q", base)
	}
	if again := streams.SinkTransactionID("q", "p", "ack\x1fg\x1ft", 0, "sink", "Default", []byte(`{"a":1}`)); again != base {
		t.Fatalf("not deterministic: %q %q", base, again)
	}
	for name, id := range map[string]string{
		"query":     streams.SinkTransactionID("q2", "p", "ack\x1fg\x1ft", 0, "sink", "Default", []byte(`{"a":1}`)),
		"partition": streams.SinkTransactionID("q", "p2", "ack\x1fg\x1ft", 0, "sink", "Default", []byte(`{"a":1}`)),
		"basis":     streams.SinkTransactionID("q", "p", "ack\x1fg\x1fu", 0, "sink", "Default", []byte(`{"a":1}`)),
		"index":     streams.SinkTransactionID("q", "p", "ack\x1fg\x1ft", 1, "sink", "Default", []byte(`{"a":1}`)),
		"queue":     streams.SinkTransactionID("q", "p", "ack\x1fg\x1ft", 0, "sink2", "Default", []byte(`{"a":1}`)),
		"payload":   streams.SinkTransactionID("q", "p", "ack\x1fg\x1ft", 0, "sink", "Default", []byte(`{"a":2}`)),
		// Length-prefixed fields: moving a byte from one field to the next changes the id.
		"boundary": streams.SinkTransactionID("qp", "", "ack\x1fg\x1ft", 0, "sink", "Default", []byte(`{"a":1}`)),
	} {
		if id == base {
			t.Errorf("%s does not change the id", name)
		}
	}
}
