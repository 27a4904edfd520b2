package dashboard

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/core/maintenance"
	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

// The world the fragments are tested over: the real core use cases over in-memory
// ports holding a fixed picture (queues, groups, dead letters, traces, flags). Methods
// a test does not reach are left to the embedded nil interface (a call panics).

var t0 = time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)

// quiet is the logger of the use cases under test.
var quiet = slog.New(slog.DiscardHandler)

type fakeResources struct {
	ports.ResourceStore
	queues []ports.QueueResource
	parts  map[string][]ports.PartitionResource
}

func (f *fakeResources) ListQueues(_ context.Context, _ string, flt ports.ResourceFilter, p ports.ResourcePage) ([]ports.QueueResource, int64, error) {
	end := min(p.Offset+p.Limit, len(f.queues))
	if p.Offset >= end {
		return nil, int64(len(f.queues)), nil
	}
	return f.queues[p.Offset:end], int64(len(f.queues)), nil
}

func (f *fakeResources) QueueDetail(_ context.Context, _ string, name string, p ports.ResourcePage) (ports.QueueResourceDetail, bool, error) {
	for _, q := range f.queues {
		if q.Name != name {
			continue
		}
		parts := f.parts[name]
		d := ports.QueueResourceDetail{Config: queues.Defaults(name), CreatedAt: q.CreatedAt, Partitions: int64(len(parts)),
			Totals: q.Counts}
		end := min(p.Offset+p.Limit, len(parts))
		if p.Offset < end {
			d.Page = parts[p.Offset:end]
		}
		return d, true, nil
	}
	return ports.QueueResourceDetail{}, false, nil
}

func (f *fakeResources) Overview(context.Context, string) (ports.ResourceOverview, error) {
	o := ports.ResourceOverview{Queues: int64(len(f.queues)), ConsumerGroups: 1}
	for _, q := range f.queues {
		o.Partitions += q.Partitions
		o.Counts = o.Counts.Add(q.Counts)
	}
	return o, nil
}

func (f *fakeResources) CountsBy(context.Context, string, ports.ResourceKey, ports.ResourcePage) ([]ports.KeyCounts, error) {
	return nil, nil
}

func (f *fakeResources) StorageTotals(context.Context) (ports.StorageTotals, error) {
	return ports.StorageTotals{}, nil
}

type fakeGroups struct {
	ports.GroupStore
	pairs     []ports.GroupSummary
	positions []ports.GroupPosition
}

func (f *fakeGroups) GroupSummaries(_ context.Context, _ string, p ports.GroupPage) (time.Time, []ports.GroupSummary, error) {
	end := min(p.Offset+p.Limit, len(f.pairs))
	if p.Offset >= end {
		return t0, nil, nil
	}
	return t0, f.pairs[p.Offset:end], nil
}

func (f *fakeGroups) GroupPositions(_ context.Context, _ string, group string, p ports.GroupPage) (time.Time, []ports.GroupPosition, error) {
	var out []ports.GroupPosition
	for _, g := range f.positions {
		if g.Group == group {
			out = append(out, g)
		}
	}
	end := min(p.Offset+p.Limit, len(out))
	if p.Offset >= end {
		return t0, nil, nil
	}
	return t0, out[p.Offset:end], nil
}

func (f *fakeGroups) LaggingPositions(_ context.Context, _ string, _ time.Duration, limit int) (time.Time, []ports.GroupPosition, error) {
	return t0, f.positions[:min(limit, len(f.positions))], nil
}

type fakeQueueAdmin struct {
	ports.QueueAdmin
	letters []ports.DeadLetter
}

func (f *fakeQueueAdmin) DeadLetters(_ context.Context, _ string, flt ports.DeadLetterFilter) ([]ports.DeadLetter, error) {
	var out []ports.DeadLetter
	for _, l := range f.letters {
		if flt.Queue == "" || l.Queue == flt.Queue {
			out = append(out, l)
		}
	}
	end := min(flt.Offset+flt.Limit, len(out))
	if flt.Offset >= end {
		return nil, nil
	}
	return out[flt.Offset:end], nil
}

type fakeMessages struct{ ports.MessageStore }

func (fakeMessages) BrowseSegments(context.Context, string, ports.MessageFilter, *ports.BrowseKey, int) (ports.BrowsePage, error) {
	return ports.BrowsePage{Now: t0}, nil
}

func (fakeMessages) BrowseModes(context.Context, string, ports.MessageFilter) (ports.GroupModes, error) {
	return ports.GroupModes{}, nil
}

func (fakeMessages) FindMessage(context.Context, string, string, [16]byte) (ports.StoredMessage, bool, error) {
	return ports.StoredMessage{}, false, nil
}

type fakeTraces struct {
	ports.TraceStore
	traces []ports.Trace
}

func (f *fakeTraces) TraceNames(context.Context, string, int, int) ([]ports.TraceName, int64, error) {
	return []ports.TraceName{{Name: "checkout", Traces: int64(len(f.traces)), Messages: 1, LastSeen: t0}}, 1, nil
}

func (f *fakeTraces) TracesByName(_ context.Context, _ string, name string, limit, offset int) ([]ports.Trace, int64, error) {
	out := make([]ports.Trace, 0, len(f.traces))
	for i := len(f.traces) - 1; i >= 0; i-- { // newest first
		out = append(out, f.traces[i])
	}
	end := min(offset+limit, len(out))
	if offset >= end {
		return nil, int64(len(out)), nil
	}
	return out[offset:end], int64(len(out)), nil
}

func (f *fakeTraces) MessageTraces(context.Context, string, string, string, int) ([]ports.Trace, error) {
	return f.traces, nil
}

// fakeHistory is the metrics history: queue rows, a broker's rows, PostgreSQL's
// statistics.
type fakeHistory struct {
	ports.MetricsReader
	queue  []ports.QueueBucket // one row per (bucket, queue)
	broker []ports.BrokerBucket
	asked  []ports.MetricsSpan
}

func (f *fakeHistory) QueueSeries(_ context.Context, _ string, span ports.MetricsSpan, flt ports.ResourceFilter, names []string) ([]ports.QueueBucket, error) {
	f.asked = append(f.asked, span)
	var out []ports.QueueBucket
	for _, r := range f.queue {
		if flt.Queue == "" || r.Queue == flt.Queue {
			r.Bucket = r.Bucket.Truncate(span.Bucket) // aligned on the epoch: the buckets divide a day
			out = append(out, r)
		}
	}
	return out, nil
}

func (f *fakeHistory) QueueTotals(_ context.Context, _ string, _ ports.MetricsSpan, flt ports.ResourceFilter) ([]ports.QueueTotal, error) {
	sums := map[string]ports.Counters{}
	var names []string
	for _, r := range f.queue {
		if flt.Queue != "" && r.Queue != flt.Queue {
			continue
		}
		c, ok := sums[r.Queue]
		if !ok {
			names = append(names, r.Queue)
		}
		c.Add(r.Counters)
		sums[r.Queue] = c
	}
	out := make([]ports.QueueTotal, len(names))
	for i, n := range names {
		out[i] = ports.QueueTotal{Queue: n, Counters: sums[n]}
	}
	return out, nil
}

func (f *fakeHistory) BrokerSeries(_ context.Context, span ports.MetricsSpan, _ ports.BrokerFilter) ([]ports.BrokerBucket, error) {
	out := make([]ports.BrokerBucket, len(f.broker))
	for i, r := range f.broker {
		r.Bucket = r.Bucket.Truncate(span.Bucket)
		out[i] = r
	}
	return out, nil
}

func (f *fakeHistory) PostgresStats(context.Context, time.Duration) (ports.PostgresStats, error) {
	return ports.PostgresStats{Database: ports.DatabaseFigures{Name: "queen", CacheFigures: ports.CacheFigures{Hits: 99, Reads: 1}},
		Sizes:         []ports.TableSize{{Table: "queen.segments", TableBytes: 3 << 20, TotalBytes: 4 << 20}},
		Activity:      []ports.TableActivity{{Table: "queen.partitions", LiveTuples: 10, DeadTuples: 90, VacuumThreshold: 50}},
		ActiveQueries: []ports.ActiveQuery{{PID: 42, State: "active", Query: "SELECT '<x>'", Duration: 3 * time.Second}}}, nil
}

// history is a metrics history of the last two minutes before t0: 30 then 12 messages
// pushed to orders, a broker seen at t0 with 3 database errors.
func history() *fakeHistory {
	b1, b2 := t0.Add(-2*time.Minute), t0.Add(-time.Minute)
	return &fakeHistory{
		queue: []ports.QueueBucket{
			{Bucket: b1, Queue: "orders", Counters: ports.Counters{PushMessages: 30, PopMessages: 10, AckSuccess: 10}},
			{Bucket: b2, Queue: "orders", Counters: ports.Counters{PushMessages: 12, AckSuccess: 2, LagCount: 2, LagSumMs: 300, LagMaxMs: 200}},
		},
		broker: []ports.BrokerBucket{{Bucket: b2, Broker: "b-1", Hostname: "host-a", Port: 6632, Minutes: 1, LastMinute: b2,
			Figures: ports.BrokerFigures{DBErrors: 3, Requests: 120, CPUUserUs: 6e6, Samples: 2,
				RSS: ports.Gauge{Sum: 200 << 20, Min: 100 << 20, Max: 100 << 20, Last: 100 << 20}}}},
	}
}

type fakeFlags struct{ push, pop bool }

func (f *fakeFlags) Flags(context.Context) (map[string]bool, error) {
	return map[string]bool{ports.MaintenancePush: f.push, ports.MaintenancePop: f.pop}, nil
}

func (f *fakeFlags) SetFlag(context.Context, string, bool) error { return nil }

const (
	pidOrders = "0195a5b2-0000-7000-8000-000000000001"
	dlqID     = "0195a5b2-0000-7000-8000-0000000000d1"
)

// world returns the services over the fixed picture: queues "orders" (a backlog, a dead
// letter, two partitions), "audit/2025" (a name with a slash) and n more empty ones;
// group "billing" on orders; a trace named checkout.
func world(t *testing.T, n int) Services {
	return worldWith(t, n, nil)
}

// worldWith is world with the metrics history h (nil: none).
func worldWith(t *testing.T, n int, h ports.MetricsReader) Services {
	t.Helper()
	codec, err := segment.NewCodec(1)
	if err != nil {
		t.Fatal(err)
	}
	blob := codec.Encode([]segment.Frame{{TransactionID: "order-7", Payload: []byte(`{"orderId":7,"note":"<b>x</b>"}`)}})
	res := &fakeResources{parts: map[string][]ports.PartitionResource{}}
	res.queues = append(res.queues,
		ports.QueueResource{ID: "q1", Name: "audit/2025", CreatedAt: t0, Partitions: 1, Counts: ports.WatermarkCounts{Total: 3}},
		ports.QueueResource{ID: "q2", Name: "orders", CreatedAt: t0, Partitions: 2,
			Counts: ports.WatermarkCounts{Total: 40, Pending: 25, Processing: 5, DeadLetter: 1}})
	for i := range n {
		res.queues = append(res.queues, ports.QueueResource{ID: fmt.Sprint("x", i), Name: fmt.Sprintf("q%05d", i), CreatedAt: t0})
	}
	oldest := t0.Add(-90 * time.Second)
	res.parts["orders"] = []ports.PartitionResource{
		{ID: pidOrders, Name: "cust-1", CreatedAt: t0, Counts: ports.WatermarkCounts{Total: 30, Pending: 20}, Oldest: &oldest},
		{ID: "p2", Name: "cust-2", CreatedAt: t0, Counts: ports.WatermarkCounts{Total: 10, Pending: 5}},
	}
	groups := &fakeGroups{
		pairs: []ports.GroupSummary{{Group: "billing", Queue: "orders", Cursors: 2, PartitionsWithLag: 2, TotalLag: 25,
			OldestUnconsumedAt: &oldest, LiveLeases: 1, LastActivity: &t0}},
		positions: []ports.GroupPosition{{Group: "billing", Queue: "orders", Partition: "cust-1", PartitionID: pidOrders,
			Cursor: true, Committed: 9, LastOffset: 29, Lag: 20, OldestUnconsumedAt: &oldest}},
	}
	errMsg := "boom"
	qa := &fakeQueueAdmin{letters: []ports.DeadLetter{{DeadLetterInfo: ports.DeadLetterInfo{ID: dlqID, Queue: "orders",
		Partition: "cust-1", PartitionID: pidOrders, ConsumerGroup: "billing", TransactionID: "order-7", ErrorMessage: &errMsg,
		RetryCount: 3, CreatedAt: t0, FailedAt: t0}, Blob: blob}}}
	traces := &fakeTraces{traces: []ports.Trace{
		{ID: "t1", NewTrace: ports.NewTrace{PartitionID: pidOrders, TransactionID: "order-7", EventType: "received",
			Names: []string{"checkout"}, Data: []byte(`{"step":1}`)}, Queue: "orders", Partition: "cust-1", CreatedAt: t0},
		{ID: "t2", NewTrace: ports.NewTrace{PartitionID: pidOrders, TransactionID: "order-7", EventType: "charged",
			Names: []string{"checkout"}, Data: []byte(`{"step":2}`)}, Queue: "orders", Partition: "cust-1", CreatedAt: t0.Add(1500 * time.Millisecond)},
	}}
	now := func() time.Time { return t0 }
	var analytics *admin.Analytics
	if h != nil {
		analytics = admin.NewAnalytics(h, admin.AnalyticsOptions{Now: now})
	}
	return Services{
		Analytics:   analytics,
		Resources:   admin.NewResources(res, admin.ResourcesOptions{Now: now}),
		Groups:      admin.NewGroups(groups, admin.GroupsOptions{Now: now}),
		Messages:    admin.NewMessages(fakeMessages{}, admin.MessagesOptions{Now: now}),
		Traces:      admin.NewTraces(traces, admin.TracesOptions{}),
		Queues:      queues.New(qa, queues.Options{}),
		Maintenance: maintenance.New(&fakeFlags{push: true}, maintenance.Options{Logger: quiet}),
	}
}
