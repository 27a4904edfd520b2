package admin

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// otherTenant owns rows every tenant-scoped read must leave out.
const otherTenant = "00000000-0000-0000-0000-0000000000ff"

// anaT0 is a minute on a 15-minute boundary (buckets are aligned on the epoch).
var anaT0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

func anaMin(n int) time.Time { return anaT0.Add(time.Duration(n) * time.Minute) }

// queueMinute inserts one queue row with the counters given by name (the rest 0), and
// adds it to its 5- and 60-minute rollups as a broker's flush does (anaRollupSQL).
func (f *fixture) queueMinute(t *testing.T, tenantID string, minute time.Time, queue string, c ports.Counters) {
	t.Helper()
	f.exec(t, `WITH mm AS (
	  INSERT INTO queen.metrics_queue_minutes (minute, tenant_id, queue_name, push_requests, push_messages,
	    pop_requests, pop_messages, pop_empty, ack_requests, ack_success, ack_failed, dlq_moves, transactions,
	    partitions_created, partitions_deleted, parked_max, lag_count, lag_sum_ms, lag_max_ms)
	  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
	  RETURNING *)`+anaRollupSQL,
		minute, tenantID, queue, c.PushRequests, c.PushMessages, c.PopRequests, c.PopMessages, c.PopEmpty,
		c.AckRequests, c.AckSuccess, c.AckFailed, c.DLQMoves, c.Transactions, c.PartitionsCreated,
		c.PartitionsDeleted, c.ParkedMax, c.LagCount, c.LagSumMs, c.LagMaxMs)
}

// anaRollupSQL adds the minute rows of CTE mm to their 5- and 60-minute rollups
// (schema/016_metrics.sql): counters add, the maxima take the larger.
const anaRollupSQL = `
	INSERT INTO queen.metrics_queue_rollups AS r (width, bucket, tenant_id, queue_name, push_requests, push_messages,
	    pop_requests, pop_messages, pop_empty, ack_requests, ack_success, ack_failed, dlq_moves, transactions,
	    partitions_created, partitions_deleted, parked_max, lag_count, lag_sum_ms, lag_max_ms)
	SELECT w.width, date_bin(make_interval(mins => w.width), mm.minute, timestamptz '1970-01-01 00:00:00+00'),
	       mm.tenant_id, mm.queue_name, mm.push_requests, mm.push_messages, mm.pop_requests, mm.pop_messages,
	       mm.pop_empty, mm.ack_requests, mm.ack_success, mm.ack_failed, mm.dlq_moves, mm.transactions,
	       mm.partitions_created, mm.partitions_deleted, mm.parked_max, mm.lag_count, mm.lag_sum_ms, mm.lag_max_ms
	  FROM mm CROSS JOIN unnest(ARRAY[5, 60]::int2[]) AS w(width)
	ON CONFLICT (width, bucket, tenant_id, queue_name) DO UPDATE SET
	    push_requests = r.push_requests + EXCLUDED.push_requests, push_messages = r.push_messages + EXCLUDED.push_messages,
	    pop_requests = r.pop_requests + EXCLUDED.pop_requests, pop_messages = r.pop_messages + EXCLUDED.pop_messages,
	    pop_empty = r.pop_empty + EXCLUDED.pop_empty, ack_requests = r.ack_requests + EXCLUDED.ack_requests,
	    ack_success = r.ack_success + EXCLUDED.ack_success, ack_failed = r.ack_failed + EXCLUDED.ack_failed,
	    dlq_moves = r.dlq_moves + EXCLUDED.dlq_moves, transactions = r.transactions + EXCLUDED.transactions,
	    partitions_created = r.partitions_created + EXCLUDED.partitions_created,
	    partitions_deleted = r.partitions_deleted + EXCLUDED.partitions_deleted,
	    parked_max = GREATEST(r.parked_max, EXCLUDED.parked_max), lag_count = r.lag_count + EXCLUDED.lag_count,
	    lag_sum_ms = r.lag_sum_ms + EXCLUDED.lag_sum_ms, lag_max_ms = GREATEST(r.lag_max_ms, EXCLUDED.lag_max_ms)`

// brokerMinute inserts one broker row: counters, the CPU and sample figures, and one
// sampled gauge value (rss, idle, active) per sample.
type brokerMinute struct {
	minute           time.Time
	broker, hostname string
	push, pops       int64
	cpuUser, cpuSys  int64
	rss, idle, act   []int64
	vsz, poolSize    int64
	latSum, latMax   int64
	requests, errors int64
	parked           string
}

func gaugeOf(v []int64) (sum, lo, hi, last int64) {
	for i, x := range v {
		sum += x
		if i == 0 || x < lo {
			lo = x
		}
		hi = max(hi, x)
		last = x
	}
	return
}

func (f *fixture) brokerMinute(t *testing.T, b brokerMinute) {
	t.Helper()
	if b.parked == "" {
		b.parked = "{}"
	}
	rs, rl, rh, rz := gaugeOf(b.rss)
	is, il, ih, iz := gaugeOf(b.idle)
	as, al, ah, az := gaugeOf(b.act)
	f.exec(t, `INSERT INTO queen.metrics_broker_minutes (minute, broker, hostname, port, push_requests, push_messages,
	    pop_messages, cpu_user_us, cpu_sys_us, samples, rss_sum, rss_min, rss_max, rss_last, vsz_last, pool_size,
	    pool_idle_sum, pool_idle_min, pool_idle_max, pool_idle_last, pool_active_sum, pool_active_min, pool_active_max,
	    pool_active_last, latency_sum_us, latency_max_us, requests, db_errors, parked)
	  VALUES ($1, $2, $3, 6632, $4, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22,
	          $23, $24, $25, $26, $27)`,
		b.minute, b.broker, b.hostname, b.push, b.pops, b.cpuUser, b.cpuSys, len(b.rss), rs, rl, rh, rz, b.vsz, b.poolSize,
		is, il, ih, iz, as, al, ah, az, b.latSum, b.latMax, b.requests, b.errors, b.parked)
}

func TestQueueSeries(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.push(t, "billing.a", "p", 1) // queue rows for the namespace filter (billing)
	f.push(t, "ops.b", "p", 1)
	f.queueMinute(t, tenant, anaMin(0), "billing.a", ports.Counters{PushRequests: 1, PushMessages: 10, LagCount: 2, LagSumMs: 30, LagMaxMs: 20, ParkedMax: 3})
	f.queueMinute(t, tenant, anaMin(1), "billing.a", ports.Counters{PushRequests: 2, PushMessages: 5, LagCount: 1, LagSumMs: 50, LagMaxMs: 50, ParkedMax: 1})
	f.queueMinute(t, tenant, anaMin(4), "ops.b", ports.Counters{PopMessages: 7, PopEmpty: 1, PartitionsCreated: 2})
	f.queueMinute(t, tenant, anaMin(5), "ops.b", ports.Counters{AckSuccess: 4, AckFailed: 1, DLQMoves: 1})
	f.queueMinute(t, tenant, anaMin(5), "gone.c", ports.Counters{Transactions: 9}) // a queue deleted since
	f.queueMinute(t, otherTenant, anaMin(0), "billing.a", ports.Counters{PushMessages: 1000})
	span := ports.MetricsSpan{From: anaMin(0), To: anaMin(9), Bucket: 5 * time.Minute}

	tests := []struct {
		name   string
		span   ports.MetricsSpan
		f      ports.ResourceFilter
		queues []string
		want   []ports.QueueBucket
	}{
		{"every queue per bucket", span, ports.ResourceFilter{}, nil, []ports.QueueBucket{
			{Bucket: anaMin(0), Counters: ports.Counters{PushRequests: 3, PushMessages: 15, PopMessages: 7, PopEmpty: 1,
				PartitionsCreated: 2, LagCount: 3, LagSumMs: 80, LagMaxMs: 50, ParkedMax: 3}},
			{Bucket: anaMin(5), Counters: ports.Counters{AckSuccess: 4, AckFailed: 1, DLQMoves: 1, Transactions: 9}},
		}},
		{"one queue", span, ports.ResourceFilter{Queue: "ops.b"}, nil, []ports.QueueBucket{
			{Bucket: anaMin(0), Counters: ports.Counters{PopMessages: 7, PopEmpty: 1, PartitionsCreated: 2}},
			{Bucket: anaMin(5), Counters: ports.Counters{AckSuccess: 4, AckFailed: 1, DLQMoves: 1}},
		}},
		{"a namespace (joins the queues: a deleted queue's rows drop out)", span, ports.ResourceFilter{Namespace: "billing"}, nil, []ports.QueueBucket{
			{Bucket: anaMin(0), Counters: ports.Counters{PushRequests: 3, PushMessages: 15, LagCount: 3, LagSumMs: 80, LagMaxMs: 50, ParkedMax: 3}},
		}},
		{"a task", span, ports.ResourceFilter{Task: "b"}, nil, []ports.QueueBucket{
			{Bucket: anaMin(0), Counters: ports.Counters{PopMessages: 7, PopEmpty: 1, PartitionsCreated: 2}},
			{Bucket: anaMin(5), Counters: ports.Counters{AckSuccess: 4, AckFailed: 1, DLQMoves: 1}},
		}},
		{"per queue, the ones named", span, ports.ResourceFilter{}, []string{"billing.a", "gone.c"}, []ports.QueueBucket{
			{Bucket: anaMin(0), Queue: "billing.a", Counters: ports.Counters{PushRequests: 3, PushMessages: 15, LagCount: 3, LagSumMs: 80, LagMaxMs: 50, ParkedMax: 3}},
			{Bucket: anaMin(5), Queue: "gone.c", Counters: ports.Counters{Transactions: 9}},
		}},
		{"minute buckets, bounds inclusive", ports.MetricsSpan{From: anaMin(1).Add(30 * time.Second), To: anaMin(4).Add(59 * time.Second), Bucket: time.Minute},
			ports.ResourceFilter{}, nil, []ports.QueueBucket{
				{Bucket: anaMin(1), Counters: ports.Counters{PushRequests: 2, PushMessages: 5, LagCount: 1, LagSumMs: 50, LagMaxMs: 50, ParkedMax: 1}},
				{Bucket: anaMin(4), Counters: ports.Counters{PopMessages: 7, PopEmpty: 1, PartitionsCreated: 2}},
			}},
		{"an empty range", ports.MetricsSpan{From: anaMin(60), To: anaMin(70), Bucket: time.Minute}, ports.ResourceFilter{}, nil, []ports.QueueBucket{}},
		{"no queue named", span, ports.ResourceFilter{}, []string{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.admin.QueueSeries(ctx, tenant, tt.span, tt.f, tt.queues)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestQueueTotals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.push(t, "a", "p1", 1)
	f.push(t, "a", "p2", 1)
	f.queueMinute(t, tenant, anaMin(0), "a", ports.Counters{PushMessages: 3, LagCount: 1, LagSumMs: 10, LagMaxMs: 10})
	f.queueMinute(t, tenant, anaMin(7), "a", ports.Counters{PushMessages: 4, LagCount: 1, LagSumMs: 40, LagMaxMs: 40})
	f.queueMinute(t, tenant, anaMin(3), "b", ports.Counters{PopMessages: 1})
	f.queueMinute(t, tenant, anaMin(30), "b", ports.Counters{PopMessages: 100}) // outside the span
	f.queueMinute(t, otherTenant, anaMin(3), "b", ports.Counters{PopMessages: 1000})
	got, err := f.admin.QueueTotals(ctx, tenant, ports.MetricsSpan{From: anaMin(0), To: anaMin(10), Bucket: time.Minute}, ports.ResourceFilter{})
	if err != nil {
		t.Fatal(err)
	}
	want := []ports.QueueTotal{
		{Queue: "a", Partitions: 2, Counters: ports.Counters{PushMessages: 7, LagCount: 2, LagSumMs: 50, LagMaxMs: 40}},
		{Queue: "b", Counters: ports.Counters{PopMessages: 1}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	got, err = f.admin.QueueTotals(ctx, tenant, ports.MetricsSpan{From: anaMin(100), To: anaMin(110), Bucket: time.Minute}, ports.ResourceFilter{})
	if err != nil || len(got) != 0 {
		t.Fatalf("an empty range: %+v, %v", got, err)
	}
}

func TestBrokerSeries(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	// Two brokers write the same minutes; b1 twice in one bucket.
	f.brokerMinute(t, brokerMinute{minute: anaMin(0), broker: "b1", hostname: "h1", push: 2, pops: 1, cpuUser: 6_000_000, cpuSys: 1_000_000,
		rss: []int64{100, 300}, idle: []int64{4, 2}, act: []int64{1, 3}, vsz: 1000, poolSize: 5, latSum: 900, latMax: 500, requests: 3, errors: 1})
	f.brokerMinute(t, brokerMinute{minute: anaMin(1), broker: "b1", hostname: "h1", push: 3, cpuUser: 12_000_000, cpuSys: 0,
		rss: []int64{200}, idle: []int64{5}, act: []int64{0}, vsz: 2000, poolSize: 6, latSum: 100, latMax: 100, requests: 1})
	f.brokerMinute(t, brokerMinute{minute: anaMin(0), broker: "b2", hostname: "h2", push: 7, cpuUser: 60_000_000,
		rss: []int64{50}, idle: []int64{1}, act: []int64{1}, vsz: 10, poolSize: 2})
	f.brokerMinute(t, brokerMinute{minute: anaMin(20), broker: "b2", hostname: "h2", push: 1000}) // outside
	span := ports.MetricsSpan{From: anaMin(0), To: anaMin(4), Bucket: 5 * time.Minute}

	got, err := f.admin.BrokerSeries(ctx, span, ports.BrokerFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d buckets, want 2 (one per broker): %+v", len(got), got)
	}
	b1 := got[0]
	want := ports.BrokerBucket{Bucket: anaMin(0), Broker: "b1", Hostname: "h1", Port: 6632, Minutes: 2, LastMinute: anaMin(1),
		Counters: ports.Counters{PushRequests: 5, PushMessages: 5, PopMessages: 1},
		Figures: ports.BrokerFigures{CPUUserUs: 18_000_000, CPUSysUs: 1_000_000, Requests: 4, LatencySumUs: 1000, LatencyMaxUs: 500,
			DBErrors: 1, Samples: 3, RSS: ports.Gauge{Sum: 600, Min: 100, Max: 300, Last: 200},
			PoolIdle: ports.Gauge{Sum: 11, Min: 2, Max: 5, Last: 5}, PoolActive: ports.Gauge{Sum: 4, Min: 0, Max: 3, Last: 0},
			VirtualBytes: 2000, PoolSize: 6},
		PerMinute: ports.MinuteGauges{CPUUserUs: ports.Gauge{Sum: 18_000_000, Min: 6_000_000, Max: 12_000_000, Last: 12_000_000},
			CPUSysUs:     ports.Gauge{Sum: 1_000_000, Min: 0, Max: 1_000_000, Last: 0},
			VirtualBytes: ports.Gauge{Sum: 3000, Min: 1000, Max: 2000, Last: 2000},
			PoolSize:     ports.Gauge{Sum: 11, Min: 5, Max: 6, Last: 6}}}
	if !reflect.DeepEqual(b1, want) {
		t.Fatalf("b1:\n got  %+v\nwant %+v", b1, want)
	}
	if got[1].Broker != "b2" || got[1].PushMessages != 7 || got[1].Minutes != 1 || got[1].PerMinute.CPUUserUs.Max != 60_000_000 {
		t.Fatalf("b2: %+v", got[1])
	}

	for _, tt := range []struct {
		name string
		f    ports.BrokerFilter
		want []string
	}{
		{"by hostname", ports.BrokerFilter{Hostname: "h2"}, []string{"b2"}},
		{"by broker", ports.BrokerFilter{Broker: "b1"}, []string{"b1"}},
		{"neither", ports.BrokerFilter{Hostname: "h1", Broker: "b2"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.admin.BrokerSeries(ctx, span, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, b := range got {
				names = append(names, b.Broker)
			}
			if !reflect.DeepEqual(names, tt.want) {
				t.Fatalf("brokers %v, want %v", names, tt.want)
			}
		})
	}
}

func TestParkedSeries(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.brokerMinute(t, brokerMinute{minute: anaMin(0), broker: "b1", hostname: "h1", parked: `{"a": 2, "b": 1}`})
	f.brokerMinute(t, brokerMinute{minute: anaMin(1), broker: "b1", hostname: "h1", parked: `{"a": 5}`})
	f.brokerMinute(t, brokerMinute{minute: anaMin(1), broker: "b2", hostname: "h2", parked: `{"a": 1}`})
	span := ports.MetricsSpan{From: anaMin(0), To: anaMin(2), Bucket: 5 * time.Minute}
	got, err := f.admin.ParkedSeries(ctx, span, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []ports.ParkedBucket{
		{Bucket: anaMin(0), Queue: "a", Broker: "b1", Hostname: "h1", Parked: 5},
		{Bucket: anaMin(0), Queue: "a", Broker: "b2", Hostname: "h2", Parked: 1},
		{Bucket: anaMin(0), Queue: "b", Broker: "b1", Hostname: "h1", Parked: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	got, err = f.admin.ParkedSeries(ctx, span, "b")
	if err != nil || len(got) != 1 || got[0].Queue != "b" {
		t.Fatalf("queue b: %+v, %v", got, err)
	}
}

func TestRetentionRuns(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.push(t, "billing.a", "p", 1)
	f.push(t, "ops.b", "p", 1)
	run := func(at time.Time, job, tenantID, queue string, rows, bytes int64) {
		t.Helper()
		var tid any
		if tenantID != "" {
			tid = tenantID
		}
		f.exec(t, `INSERT INTO queen.retention_runs (ran_at, job, tenant_id, queue_name, rows_removed, bytes_removed)
		  VALUES ($1, $2, $3, $4, $5, $6)`, at, job, tid, queue, rows, bytes)
	}
	run(anaMin(0).Add(10*time.Second), ports.JobRetention, tenant, "billing.a", 10, 100)
	run(anaMin(3), ports.JobRetention, tenant, "ops.b", 5, 50)
	run(anaMin(3), ports.JobCompletedRetention, tenant, "billing.a", 2, 20)
	run(anaMin(6), ports.JobEviction, tenant, "ops.b", 1, 10)
	run(anaMin(6), "traces", "", "", 7, 70)                               // a job of no queue
	run(anaMin(6), ports.JobRetention, otherTenant, "billing.a", 1000, 1) // another tenant's
	run(anaMin(30), ports.JobRetention, tenant, "billing.a", 1000, 1)     // outside
	span := ports.MetricsSpan{From: anaMin(0), To: anaMin(9), Bucket: 5 * time.Minute}
	row := func(b time.Time, key, job string, runs, rows, bytes int64) ports.RetentionRow {
		return ports.RetentionRow{Bucket: b, Key: key, Job: job, Runs: runs, Rows: rows, Bytes: bytes}
	}

	tests := []struct {
		name         string
		f            ports.ResourceFilter
		key          ports.RetentionKey
		series, grps []ports.RetentionRow
	}{
		{"every run", ports.ResourceFilter{}, ports.RetentionNoGroups, []ports.RetentionRow{
			row(anaMin(0), "", ports.JobCompletedRetention, 1, 2, 20),
			row(anaMin(0), "", ports.JobRetention, 2, 15, 150),
			row(anaMin(5), "", ports.JobEviction, 1, 1, 10),
			row(anaMin(5), "", "traces", 1, 7, 70),
		}, []ports.RetentionRow{}},
		{"one queue, grouped by namespace", ports.ResourceFilter{Queue: "ops.b"}, ports.RetentionByNamespace, []ports.RetentionRow{
			row(anaMin(0), "", ports.JobRetention, 1, 5, 50),
			row(anaMin(5), "", ports.JobEviction, 1, 1, 10),
		}, []ports.RetentionRow{
			row(time.Time{}, "ops", ports.JobEviction, 1, 1, 10),
			row(time.Time{}, "ops", ports.JobRetention, 1, 5, 50),
		}},
		{"by queue (runs of no queue left out of the groups)", ports.ResourceFilter{}, ports.RetentionByQueue, nil, []ports.RetentionRow{
			row(time.Time{}, "billing.a", ports.JobCompletedRetention, 1, 2, 20),
			row(time.Time{}, "billing.a", ports.JobRetention, 1, 10, 100),
			row(time.Time{}, "ops.b", ports.JobEviction, 1, 1, 10),
			row(time.Time{}, "ops.b", ports.JobRetention, 1, 5, 50),
		}},
		{"by task within a namespace", ports.ResourceFilter{Namespace: "billing"}, ports.RetentionByTask, []ports.RetentionRow{
			row(anaMin(0), "", ports.JobCompletedRetention, 1, 2, 20),
			row(anaMin(0), "", ports.JobRetention, 1, 10, 100),
		}, []ports.RetentionRow{
			row(time.Time{}, "a", ports.JobCompletedRetention, 1, 2, 20),
			row(time.Time{}, "a", ports.JobRetention, 1, 10, 100),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			series, groups, err := f.admin.Retention(ctx, tenant, span, tt.f, tt.key)
			if err != nil {
				t.Fatal(err)
			}
			if tt.series != nil && !reflect.DeepEqual(series, tt.series) {
				t.Errorf("series:\n got  %+v\nwant %+v", series, tt.series)
			}
			if !reflect.DeepEqual(groups, tt.grps) {
				t.Errorf("groups:\n got  %+v\nwant %+v", groups, tt.grps)
			}
		})
	}
}

func TestDeadLetterErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	pa := f.push(t, "billing.a", "p", 1)
	pb := f.push(t, "ops.b", "p", 1)
	dead := func(queue, pid, msg string, n int) {
		t.Helper()
		var text any
		if msg != "" {
			text = msg
		}
		for i := range n {
			f.exec(t, `INSERT INTO queen.dlq (queue_id, partition_id, consumer_group, msg_offset, transaction_id, error_message,
			    retry_count, created_at, frame_index, blob)
			  SELECT id, $2, 'g', $3, 't', $4, 3, now(), 0, '\x01' FROM queen.queues WHERE name = $1`, queue, pid, i, text)
		}
	}
	dead("billing.a", pa, "timeout", 3)
	dead("ops.b", pb, "timeout", 1)
	dead("ops.b", pb, "bad payload", 2)
	dead("ops.b", pb, "", 1)

	tests := []struct {
		name  string
		f     ports.ResourceFilter
		limit int
		want  []ports.DeadLetterError
	}{
		{"every queue", ports.ResourceFilter{}, 5, []ports.DeadLetterError{{Error: "timeout", Count: 4}, {Error: "bad payload", Count: 2}, {Error: "", Count: 1}}},
		{"the most frequent", ports.ResourceFilter{}, 1, []ports.DeadLetterError{{Error: "timeout", Count: 4}}},
		{"a namespace", ports.ResourceFilter{Namespace: "ops"}, 5, []ports.DeadLetterError{{Error: "bad payload", Count: 2}, {Error: "", Count: 1}, {Error: "timeout", Count: 1}}},
		{"no limit, no read", ports.ResourceFilter{}, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.admin.DeadLetterErrors(ctx, tenant, tt.f, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestLag(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	got, err := f.admin.Lag(ctx, tenant)
	if err != nil || got != (ports.LagFigures{}) {
		t.Fatalf("no group: %+v, %v", got, err)
	}
	p1 := f.push(t, "a", "p1", 4) // offsets 0..3
	f.push(t, "a", "p2", 2)       // offsets 0..1
	f.exec(t, `UPDATE queen.log_segments SET created_at = now() - interval '100 seconds'`)
	// g: 2 behind on p1 (a cursor), 2 on p2 (none: from the start); h: done on p1, 2 on p2.
	f.exec(t, `INSERT INTO queen.log_consumers (partition_id, consumer_group, committed, batch_end) VALUES ($1, 'g', 1, 1), ($1, 'h', 3, 3)`, p1)
	got, err = f.admin.Lag(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	if got.Positions != 4 || got.OffsetAvg != 1.5 || got.OffsetMedian != 2 || got.OffsetMax != 2 {
		t.Fatalf("offset lag: %+v", got)
	}
	near := func(x, want float64) bool { return x >= want && x < want+30 } // seconds pass while the test runs
	if !near(got.TimeMax, 100) || !near(got.TimeMedian, 100) || !near(got.TimeAvg, 75) {
		t.Fatalf("time lag: %+v", got)
	}
	if other, err := f.admin.Lag(ctx, otherTenant); err != nil || other.Positions != 0 {
		t.Fatalf("another tenant: %+v, %v", other, err)
	}
}

func TestPostgresStats(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.push(t, "a", "p", 3)

	// A statement of another session, running while the stats are read.
	conn, err := f.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	f.exec(t, `SELECT 1`) // the pool's other connection, so that the reader does not take conn's
	if _, err := conn.ExecContext(ctx, `SET application_name = 'analytics-sleeper'`); err != nil {
		t.Fatal(err)
	}
	sleepCtx, stop := context.WithCancel(ctx)
	slept := make(chan error, 1)
	go func() { _, err := conn.ExecContext(sleepCtx, `SELECT pg_sleep(60)`); slept <- err }()
	defer func() { stop(); <-slept }()

	var st ports.PostgresStats
	found := false
	for deadline := time.Now().Add(10 * time.Second); !found && time.Now().Before(deadline); {
		if st, err = f.admin.PostgresStats(ctx, 0); err != nil {
			t.Fatal(err)
		}
		for _, q := range st.ActiveQueries {
			found = found || (q.ApplicationName == "analytics-sleeper" && q.Query == "SELECT pg_sleep(60)" &&
				q.State == "active" && q.Duration >= 0 && q.WaitEvent != nil)
		}
		if !found {
			time.Sleep(20 * time.Millisecond) // the session has not started its statement yet
		}
	}
	if !found {
		t.Fatalf("the other session's statement is not listed: %+v", st.ActiveQueries)
	}

	var name string
	if err := f.db.QueryRow(`SELECT current_database()`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	if st.Database.Name != name || st.Database.SizeBytes <= 0 || st.Database.Hits <= 0 {
		t.Fatalf("database: %+v (want %s)", st.Database, name)
	}
	has := func(list []string, want string) bool { return slices.Contains(list, want) }
	var tables, sized, active, indexes, settings []string
	for _, x := range st.Tables {
		tables = append(tables, x.Table)
	}
	for _, x := range st.Sizes {
		sized = append(sized, x.Table)
		if x.TotalBytes < x.TableBytes || x.TotalBytes < x.IndexBytes {
			t.Fatalf("size: %+v", x)
		}
	}
	for _, x := range st.Activity {
		active = append(active, x.Table)
		if x.VacuumThreshold < 50 {
			t.Fatalf("vacuum threshold below autovacuum_vacuum_threshold: %+v", x)
		}
	}
	for _, x := range st.Indexes {
		indexes = append(indexes, x.Index)
	}
	for _, x := range st.Settings {
		settings = append(settings, x.Name)
		if x.Name == "shared_buffers" && x.Bytes < 128<<10 {
			t.Fatalf("shared_buffers: %+v", x)
		}
	}
	for what, list := range map[string][]string{"table cache": tables, "sizes": sized, "activity": active} {
		if !has(list, "queen.log_segments") || !has(list, "queen.metrics_queue_minutes") {
			t.Errorf("%s lacks the queen tables: %v", what, list)
		}
	}
	if !has(indexes, "queen.log_segments_pkey") || !has(settings, "shared_buffers") || !has(settings, "work_mem") {
		t.Errorf("indexes %v, settings %v", indexes, settings)
	}

	// pg_buffercache: read only where installed.
	if st.BufferUsage != nil {
		t.Fatalf("buffer usage without the extension: %+v", st.BufferUsage)
	}
	if _, err := f.db.Exec(`CREATE EXTENSION IF NOT EXISTS pg_buffercache`); err != nil {
		t.Logf("pg_buffercache unavailable here, its reading untested: %v", err)
		return
	}
	if st, err = f.admin.PostgresStats(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	if len(st.BufferUsage) == 0 || st.BufferTotal <= 0 || st.BufferUsage[0].Bytes != st.BufferUsage[0].Buffers*8192 {
		t.Fatalf("buffer usage %+v of %d", st.BufferUsage, st.BufferTotal)
	}
	if len(st.ActiveQueries) != 0 {
		t.Fatalf("no statement runs an hour: %+v", st.ActiveQueries)
	}
}

// TestAnalyticsFiltersAreValues: on sessions with standard_conforming_strings = off, the
// history reads take an injection payload in a filter as the name it is: no row of
// another queue or broker comes back, no sleep runs (it would end the call with a
// timeout error).
func TestAnalyticsFiltersAreValues(t *testing.T) {
	f := newInjectFixture(t)
	a, ctx := f.admin, context.Background()
	now := time.Now().UTC().Truncate(time.Minute)
	f.queueMinute(t, tenant, now, "victim", ports.Counters{PushMessages: 1})
	f.brokerMinute(t, brokerMinute{minute: now, broker: "vb", hostname: "vh", push: 1, parked: `{"victim": 1}`})
	f.exec(t, `INSERT INTO queen.retention_runs (job, tenant_id, queue_name, rows_removed) VALUES ('retention', $1, 'victim', 1)`, tenant)
	span := ports.MetricsSpan{From: now.Add(-time.Hour), To: now.Add(time.Hour), Bucket: time.Hour}
	for _, in := range injections {
		p := in.value
		for _, c := range []struct {
			name string
			call func() (rows int, err error)
		}{
			{"queue series by queue", func() (int, error) {
				r, err := a.QueueSeries(ctx, tenant, span, ports.ResourceFilter{Queue: p}, nil)
				return len(r), err
			}},
			{"queue series by namespace", func() (int, error) {
				r, err := a.QueueSeries(ctx, tenant, span, ports.ResourceFilter{Namespace: p}, nil)
				return len(r), err
			}},
			{"queue series of named queues", func() (int, error) {
				r, err := a.QueueSeries(ctx, tenant, span, ports.ResourceFilter{}, []string{p})
				return len(r), err
			}},
			{"queue totals by task", func() (int, error) {
				r, err := a.QueueTotals(ctx, tenant, span, ports.ResourceFilter{Task: p})
				return len(r), err
			}},
			{"broker series by hostname", func() (int, error) {
				r, err := a.BrokerSeries(ctx, span, ports.BrokerFilter{Hostname: p})
				return len(r), err
			}},
			{"broker series by broker", func() (int, error) {
				r, err := a.BrokerSeries(ctx, span, ports.BrokerFilter{Broker: p})
				return len(r), err
			}},
			{"parked by queue", func() (int, error) {
				r, err := a.ParkedSeries(ctx, span, p)
				return len(r), err
			}},
			{"retention by queue", func() (int, error) {
				s, g, err := a.Retention(ctx, tenant, span, ports.ResourceFilter{Queue: p}, ports.RetentionByNamespace)
				return len(s) + len(g), err
			}},
			{"dead letter errors by queue", func() (int, error) {
				r, err := a.DeadLetterErrors(ctx, tenant, ports.ResourceFilter{Queue: p}, 5)
				return len(r), err
			}},
		} {
			t.Run(in.name+"/"+c.name, func(t *testing.T) {
				n, err := c.call()
				if err != nil {
					t.Fatalf("%v (a timeout means the sleep ran)", err)
				}
				if n != 0 {
					t.Fatalf("%d rows: the payload matched rows", n)
				}
			})
		}
	}
}
