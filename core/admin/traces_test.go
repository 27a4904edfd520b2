package admin

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

func TestTracesLifetime(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		o    ports.QueueOptions
		want time.Duration
	}{
		{"no retention", ports.QueueOptions{}, DefaultTraceLifetime},
		{"retention configured but disabled", ports.QueueOptions{RetentionSeconds: 60, CompletedRetentionSeconds: 30}, DefaultTraceLifetime},
		{"retention", ports.QueueOptions{RetentionEnabled: true, RetentionSeconds: 3600}, time.Hour},
		{"completed retention, the shorter", ports.QueueOptions{RetentionEnabled: true, RetentionSeconds: 3600, CompletedRetentionSeconds: 600}, 10 * time.Minute},
		{"enabled without a period", ports.QueueOptions{RetentionEnabled: true}, DefaultTraceLifetime},
		{"age eviction without retention", ports.QueueOptions{MaxWaitTimeSeconds: 120}, 2 * time.Minute},
		{"age eviction, the shorter", ports.QueueOptions{RetentionEnabled: true, RetentionSeconds: 60, MaxWaitTimeSeconds: 120}, time.Minute},
		{"longer than the default", ports.QueueOptions{RetentionEnabled: true, RetentionSeconds: 30 * 86400}, 30 * 24 * time.Hour},
	} {
		if got := TraceLifetime(tt.o); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// fakeTraceStore is an in-memory ports.TraceStore holding one partition.
type fakeTraceStore struct {
	pid      string
	opts     ports.QueueOptions
	added    []ports.NewTrace
	lifetime time.Duration
	expire   int
	calls    int
}

func (f *fakeTraceStore) AddTrace(_ context.Context, _ string, t ports.NewTrace, lifetime func(ports.QueueOptions) time.Duration, expire int) (ports.Trace, bool, error) {
	f.calls++
	if t.PartitionID != f.pid {
		return ports.Trace{}, false, nil
	}
	f.added = append(f.added, t)
	f.lifetime, f.expire = lifetime(f.opts), expire
	return ports.Trace{ID: "id", NewTrace: t}, true, nil
}

func (f *fakeTraceStore) MessageTraces(context.Context, string, string, string, int) ([]ports.Trace, error) {
	f.calls++
	return nil, nil
}

func (f *fakeTraceStore) TracesByName(context.Context, string, string, int, int) ([]ports.Trace, error) {
	f.calls++
	return nil, nil
}

func (f *fakeTraceStore) TraceNames(context.Context, string, int, int) ([]ports.TraceName, error) {
	f.calls++
	return nil, nil
}

const tracesPID = "0196f1a0-0000-7000-8000-000000000001"

func TestTracesRecord(t *testing.T) {
	t.Parallel()
	valid := func(mod func(*TraceInput)) TraceInput {
		in := TraceInput{PartitionID: tracesPID, TransactionID: "t", Data: json.RawMessage(`{"a":1}`)}
		if mod != nil {
			mod(&in)
		}
		return in
	}
	tests := []struct {
		name  string
		in    TraceInput
		param string // "" = accepted
		want  ports.NewTrace
	}{
		{"defaults", valid(nil), "", ports.NewTrace{PartitionID: tracesPID, TransactionID: "t",
			ConsumerGroup: ports.QueueModeGroup, EventType: "info", Data: []byte(`{"a":1}`)}},
		{"everything, names deduplicated in order", valid(func(in *TraceInput) {
			in.ConsumerGroup, in.EventType, in.Names = "g", "error", []string{"b", "a", "b"}
		}), "", ports.NewTrace{PartitionID: tracesPID, TransactionID: "t", ConsumerGroup: "g", EventType: "error",
			Names: []string{"b", "a"}, Data: []byte(`{"a":1}`)}},
		{"null data", valid(func(in *TraceInput) { in.Data = json.RawMessage("null") }), "",
			ports.NewTrace{PartitionID: tracesPID, TransactionID: "t", ConsumerGroup: ports.QueueModeGroup, EventType: "info", Data: []byte("null")}},
		{"no transaction id", valid(func(in *TraceInput) { in.TransactionID = "" }), "transactionId", ports.NewTrace{}},
		{"control character in the transaction id", valid(func(in *TraceInput) { in.TransactionID = "a\n" }), "transactionId", ports.NewTrace{}},
		{"no partition id", valid(func(in *TraceInput) { in.PartitionID = "" }), "partitionId", ports.NewTrace{}},
		{"partition id not a UUID", valid(func(in *TraceInput) { in.PartitionID = "p" }), "partitionId", ports.NewTrace{}},
		{"no data", valid(func(in *TraceInput) { in.Data = nil }), "data", ports.NewTrace{}},
		{"data too large", valid(func(in *TraceInput) {
			in.Data = json.RawMessage(`"` + strings.Repeat("x", MaxTraceDataBytes) + `"`)
		}), "data", ports.NewTrace{}},
		{"data not JSON", valid(func(in *TraceInput) { in.Data = json.RawMessage(`{`) }), "data", ports.NewTrace{}},
		{"bad group", valid(func(in *TraceInput) { in.ConsumerGroup = strings.Repeat("g", 256) }), "consumerGroup", ports.NewTrace{}},
		{"bad event type", valid(func(in *TraceInput) { in.EventType = "\x7f" }), "eventType", ports.NewTrace{}},
		{"empty name", valid(func(in *TraceInput) { in.Names = []string{""} }), "traceNames", ports.NewTrace{}},
		{"too many names", valid(func(in *TraceInput) { in.Names = make([]string, MaxTraceNames+1) }), "traceNames", ports.NewTrace{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeTraceStore{pid: tracesPID, opts: ports.QueueOptions{MaxWaitTimeSeconds: 90}}
			tr := NewTraces(f, TracesOptions{})
			_, err := tr.Record(context.Background(), "tenant", tt.in)
			if tt.param != "" {
				var ie *InputError
				if !errors.As(err, &ie) || ie.Param != tt.param {
					t.Fatalf("err %v, want an InputError naming %s", err, tt.param)
				}
				if f.calls != 0 {
					t.Fatal("the store was asked")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := f.added[0]
			if got.PartitionID != tt.want.PartitionID || got.TransactionID != tt.want.TransactionID ||
				got.ConsumerGroup != tt.want.ConsumerGroup || got.EventType != tt.want.EventType ||
				!slices.Equal(got.Names, tt.want.Names) || string(got.Data) != string(tt.want.Data) {
				t.Fatalf("stored %+v, want %+v", got, tt.want)
			}
			if f.lifetime != 90*time.Second || f.expire != 100 {
				t.Fatalf("lifetime %v expire batch %d, want the queue's 90 s and 100", f.lifetime, f.expire)
			}
		})
	}
}

func TestTracesRecordUnknownPartition(t *testing.T) {
	t.Parallel()
	tr := NewTraces(&fakeTraceStore{pid: tracesPID}, TracesOptions{})
	_, err := tr.Record(context.Background(), "tenant", TraceInput{PartitionID: "0196f1a0-0000-7000-8000-000000000002",
		TransactionID: "t", Data: json.RawMessage("1")})
	if !errors.Is(err, ErrNotFound) || err.Error() != "Partition not found" {
		t.Fatalf("err %v, want Partition not found", err)
	}
}

func TestTracesRejectBadPages(t *testing.T) {
	t.Parallel()
	f := &fakeTraceStore{pid: tracesPID}
	tr := NewTraces(f, TracesOptions{})
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		call  func() error
		param string
	}{
		{"by name: empty name", func() error { _, err := tr.ByName(ctx, "t", "", 1, 0); return err }, "traceName"},
		{"by name: limit 0", func() error { _, err := tr.ByName(ctx, "t", "n", 0, 0); return err }, "limit"},
		{"by name: limit too large", func() error { _, err := tr.ByName(ctx, "t", "n", MaxTracesLimit+1, 0); return err }, "limit"},
		{"names: negative offset", func() error { _, err := tr.Names(ctx, "t", 1, -1); return err }, "offset"},
		{"names: offset too deep", func() error { _, err := tr.Names(ctx, "t", 1, MaxTracesOffset+1); return err }, "offset"},
		{"of a message: bad partition id", func() error { _, err := tr.ForMessage(ctx, "t", "p", "x"); return err }, "partitionId"},
	} {
		var ie *InputError
		if err := tt.call(); !errors.As(err, &ie) || ie.Param != tt.param {
			t.Errorf("%s: %v, want an InputError naming %s", tt.name, err, tt.param)
		}
	}
	if f.calls != 0 {
		t.Fatal("the store was asked")
	}
	for _, call := range []func() error{
		func() error { _, err := tr.ByName(ctx, "t", "n", MaxTracesLimit, MaxTracesOffset); return err },
		func() error { _, err := tr.Names(ctx, "t", 1, 0); return err },
		func() error { _, err := tr.ForMessage(ctx, "t", tracesPID, "x"); return err },
	} {
		if err := call(); err != nil {
			t.Fatal(err)
		}
	}
	if f.calls != 3 {
		t.Fatalf("%d store calls, want 3", f.calls)
	}
}
