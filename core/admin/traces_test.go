package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
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

// tracesWorld is a store over which traces are recorded: queue q, with maxWaitTimeSeconds
// 90 (a trace lifetime of 90 s), holds partition p. It returns the world and p's id.
func tracesWorld(t *testing.T) (*memWorld, string) {
	t.Helper()
	w := newMemWorld(t, msgT0)
	w.configure("tenant", "q", func(c *ports.QueueConfig) { c.MaxWaitTimeSeconds = 90 })
	return w, w.pushTxns("tenant", "q", "p", "m0")
}

func TestTracesRecord(t *testing.T) {
	t.Parallel()
	valid := func(mod func(*TraceInput)) TraceInput {
		in := TraceInput{TransactionID: "t", Data: json.RawMessage(`{"a":1}`)}
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
		{"defaults", valid(nil), "", ports.NewTrace{TransactionID: "t",
			ConsumerGroup: ports.QueueModeGroup, EventType: "info", Data: []byte(`{"a":1}`)}},
		{"everything, names deduplicated in order", valid(func(in *TraceInput) {
			in.ConsumerGroup, in.EventType, in.Names = "g", "error", []string{"b", "a", "b"}
		}), "", ports.NewTrace{TransactionID: "t", ConsumerGroup: "g", EventType: "error",
			Names: []string{"b", "a"}, Data: []byte(`{"a":1}`)}},
		{"null data", valid(func(in *TraceInput) { in.Data = json.RawMessage("null") }), "",
			ports.NewTrace{TransactionID: "t", ConsumerGroup: ports.QueueModeGroup, EventType: "info", Data: []byte("null")}},
		{"no transaction id", valid(func(in *TraceInput) { in.TransactionID = "" }), "transactionId", ports.NewTrace{}},
		{"control character in the transaction id", valid(func(in *TraceInput) { in.TransactionID = "a\n" }), "transactionId", ports.NewTrace{}},
		{"no partition id", valid(func(in *TraceInput) { in.PartitionID = "-" }), "partitionId", ports.NewTrace{}},
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
			w, pid := tracesWorld(t)
			tr := NewTraces(w.s, TracesOptions{})
			switch tt.in.PartitionID {
			case "":
				tt.in.PartitionID = pid
			case "-":
				tt.in.PartitionID = ""
			}
			ctx := context.Background()
			_, err := tr.Record(ctx, "tenant", tt.in)
			if tt.param != "" {
				var ie *InputError
				if !errors.As(err, &ie) || ie.Param != tt.param {
					t.Fatalf("err %v, want an InputError naming %s", err, tt.param)
				}
				if w.count() != 0 || w.s.StoredTraces() != 0 {
					t.Fatal("the store was asked")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			stored, err := tr.ForMessage(ctx, "tenant", pid, "t")
			if err != nil || len(stored) != 1 {
				t.Fatalf("ForMessage = %+v, %v", stored, err)
			}
			got, want := stored[0], tt.want
			want.PartitionID = pid
			if got.PartitionID != want.PartitionID || got.TransactionID != want.TransactionID ||
				got.ConsumerGroup != want.ConsumerGroup || got.EventType != want.EventType ||
				!slices.Equal(got.Names, want.Names) || string(got.Data) != string(want.Data) || got.Queue != "q" || got.Partition != "p" {
				t.Fatalf("stored %+v, want %+v", got, want)
			}
			// Kept for the queue's 90 s.
			w.at(msgT0.Add(89 * time.Second))
			if got, err := tr.ForMessage(ctx, "tenant", pid, "t"); err != nil || len(got) != 1 {
				t.Fatalf("the trace expired before its queue's lifetime: %+v, %v", got, err)
			}
			w.at(msgT0.Add(90 * time.Second))
			if got, err := tr.ForMessage(ctx, "tenant", pid, "t"); err != nil || len(got) != 0 {
				t.Fatalf("after the queue's 90 s: %+v, %v", got, err)
			}
		})
	}
}

// Each recorded trace deletes up to ExpireBatch expired ones (100 by default).
func TestTracesExpireBatch(t *testing.T) {
	t.Parallel()
	w, pid := tracesWorld(t)
	tr := NewTraces(w.s, TracesOptions{})
	ctx := context.Background()
	for i := range 150 {
		if _, err := tr.Record(ctx, "tenant", TraceInput{PartitionID: pid, TransactionID: fmt.Sprint("old", i), Data: json.RawMessage("1")}); err != nil {
			t.Fatal(err)
		}
	}
	w.at(msgT0.Add(time.Hour)) // every one of them expired
	for _, want := range []int{51, 2} {
		if _, err := tr.Record(ctx, "tenant", TraceInput{PartitionID: pid, TransactionID: "new", Data: json.RawMessage("1")}); err != nil {
			t.Fatal(err)
		}
		if n := w.s.StoredTraces(); n != want {
			t.Fatalf("%d traces stored, want %d", n, want)
		}
	}
}

func TestTracesRecordUnknownPartition(t *testing.T) {
	t.Parallel()
	w, _ := tracesWorld(t)
	tr := NewTraces(w.s, TracesOptions{})
	_, err := tr.Record(context.Background(), "tenant", TraceInput{PartitionID: "0196f1a0-0000-7000-8000-000000000002",
		TransactionID: "t", Data: json.RawMessage("1")})
	if !errors.Is(err, ErrNotFound) || err.Error() != "Partition not found" {
		t.Fatalf("err %v, want Partition not found", err)
	}
}

func TestTracesRejectBadPages(t *testing.T) {
	t.Parallel()
	w, pid := tracesWorld(t)
	tr := NewTraces(w.s, TracesOptions{})
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		call  func() error
		param string
	}{
		{"by name: empty name", func() error { _, _, err := tr.ByName(ctx, "t", "", 1, 0); return err }, "traceName"},
		{"by name: limit 0", func() error { _, _, err := tr.ByName(ctx, "t", "n", 0, 0); return err }, "limit"},
		{"by name: negative limit", func() error { _, _, err := tr.ByName(ctx, "t", "n", -1, 0); return err }, "limit"},
		{"names: negative offset", func() error { _, _, err := tr.Names(ctx, "t", 1, -1); return err }, "offset"},
		{"names: offset too deep", func() error { _, _, err := tr.Names(ctx, "t", 1, MaxTracesOffset+1); return err }, "offset"},
		{"of a message: bad partition id", func() error { _, err := tr.ForMessage(ctx, "t", "p", "x"); return err }, "partitionId"},
	} {
		var ie *InputError
		if err := tt.call(); !errors.As(err, &ie) || ie.Param != tt.param {
			t.Errorf("%s: %v, want an InputError naming %s", tt.name, err, tt.param)
		}
	}
	if w.count() != 0 {
		t.Fatal("the store was asked")
	}
	for _, call := range []func() error{
		func() error { _, _, err := tr.ByName(ctx, "t", "n", MaxTracesLimit, MaxTracesOffset); return err },
		func() error { _, _, err := tr.Names(ctx, "t", 1, 0); return err },
		func() error { _, err := tr.ForMessage(ctx, "t", pid, "x"); return err },
	} {
		if err := call(); err != nil {
			t.Fatal(err)
		}
	}
	if w.count() != 3 {
		t.Fatalf("%d store calls, want 3", w.count())
	}
}

// traceLimits is a TraceStore recording the limits it is asked for.
type traceLimits struct {
	ports.TraceStore
	limits []int
}

func (s *traceLimits) TracesByName(ctx context.Context, tenant, name string, limit, offset int) ([]ports.Trace, int64, error) {
	s.limits = append(s.limits, limit)
	return s.TraceStore.TracesByName(ctx, tenant, name, limit, offset)
}

func (s *traceLimits) TraceNames(ctx context.Context, tenant string, limit, offset int) ([]ports.TraceName, int64, error) {
	s.limits = append(s.limits, limit)
	return s.TraceStore.TraceNames(ctx, tenant, limit, offset)
}

// A limit above the maximum is clamped, not refused; the page says what was applied.
func TestTracesClampTheLimit(t *testing.T) {
	t.Parallel()
	w, _ := tracesWorld(t)
	ctx := context.Background()
	for _, tt := range []struct {
		name      string
		limit     int
		wantLimit int
	}{
		{"the maximum", MaxTracesLimit, MaxTracesLimit},
		{"one above", MaxTracesLimit + 1, MaxTracesLimit},
		{"what Queen's CLI asks", 10000, MaxTracesLimit},
		{"far above", math.MaxInt, MaxTracesLimit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := &traceLimits{TraceStore: w.s}
			tr := NewTraces(store, TracesOptions{})
			_, byName, err := tr.ByName(ctx, "tenant", "n", tt.limit, 3)
			if err != nil {
				t.Fatal(err)
			}
			_, names, err := tr.Names(ctx, "tenant", tt.limit, 0)
			if err != nil {
				t.Fatal(err)
			}
			if byName != (Page{Limit: tt.wantLimit, Offset: 3}) || names != (Page{Limit: tt.wantLimit}) ||
				!slices.Equal(store.limits, []int{tt.wantLimit, tt.wantLimit}) {
				t.Fatalf("pages %+v %+v, store asked for %v; want limit %d", byName, names, store.limits, tt.wantLimit)
			}
		})
	}
}

// The pages of the listings carry their totals over every page, as Queen reports them.
func TestTracesPageTotals(t *testing.T) {
	t.Parallel()
	w, pid := tracesWorld(t)
	tr := NewTraces(w.s, TracesOptions{})
	ctx := context.Background()
	for _, names := range [][]string{{"n"}, {"n", "m"}, {"n"}} {
		if _, err := tr.Record(ctx, "tenant", TraceInput{PartitionID: pid, TransactionID: "m0", Names: names,
			Data: json.RawMessage(`1`)}); err != nil {
			t.Fatal(err)
		}
	}
	ts, page, err := tr.ByName(ctx, "tenant", "n", 2, 0)
	if err != nil || len(ts) != 2 || page != (Page{Limit: 2, Total: 3}) {
		t.Fatalf("ByName = %d traces, %+v, %v; want 2 of 3", len(ts), page, err)
	}
	if ts, page, err = tr.ByName(ctx, "tenant", "n", 2, 5); err != nil || len(ts) != 0 || page != (Page{Limit: 2, Offset: 5, Total: 3}) {
		t.Fatalf("ByName past the end = %d traces, %+v, %v; want none of 3", len(ts), page, err)
	}
	ns, page, err := tr.Names(ctx, "tenant", 1, 0)
	if err != nil || len(ns) != 1 || page != (Page{Limit: 1, Total: 2}) {
		t.Fatalf("Names = %+v, %+v, %v; want 1 of 2", ns, page, err)
	}
}
