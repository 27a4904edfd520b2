package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// The server side of Queen's streams SDKs: /streams/v1/queries,
// /streams/v1/state/get and /streams/v1/cycle, as the SDKs drive them (docs/streams.md §4).

type streamQueryResp struct {
	Success    bool   `json:"success"`
	QueryID    string `json:"query_id"`
	Name       string `json:"name"`
	ConfigHash string `json:"config_hash"`
	Fresh      bool   `json:"fresh"`
	Reset      bool   `json:"reset"`
	Error      string `json:"error"`
}

type streamRow struct {
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	UpdatedAt string          `json:"updated_at"`
}

type cycleResp struct {
	Success         bool    `json:"success"`
	QueryID         string  `json:"query_id"`
	PartitionID     string  `json:"partition_id"`
	QueueName       *string `json:"queueName"`
	StateOpsApplied int     `json:"state_ops_applied"`
	PushResults     []struct {
		Index         int     `json:"index"`
		TransactionID string  `json:"transaction_id"`
		Status        string  `json:"status"`
		MessageID     *string `json:"message_id"`
		PartitionID   string  `json:"partition_id"`
		QueueName     string  `json:"queueName"`
	} `json:"push_results"`
	AckResult *struct {
		Success       bool `json:"success"`
		Count         int  `json:"count"`
		LeaseReleased bool `json:"lease_released"`
		DLQ           bool `json:"dlq"`
	} `json:"ack_result"`
	Error string `json:"error"`
}

func (b *broker) registerQuery(t *testing.T, body map[string]any) (int, streamQueryResp) {
	t.Helper()
	code, raw := b.post(t, "/streams/v1/queries", mustJSON(t, body))
	var out streamQueryResp
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("register answer %s: %v", raw, err)
	}
	return code, out
}

func (b *broker) mustRegister(t *testing.T, name, hash string) string {
	t.Helper()
	code, r := b.registerQuery(t, map[string]any{"name": name, "source_queue": "src", "sink_queue": "sink", "config_hash": hash})
	if code != http.StatusOK || !r.Success || r.QueryID == "" {
		t.Fatalf("register %s: %d %+v", name, code, r)
	}
	return r.QueryID
}

// stateOf reads a shard (body adds the filters) as key -> compact value.
func (b *broker) stateOf(t *testing.T, body map[string]any) map[string]string {
	t.Helper()
	code, raw := b.post(t, "/streams/v1/state/get", mustJSON(t, body))
	var out struct {
		Success bool        `json:"success"`
		Rows    []streamRow `json:"rows"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || code != http.StatusOK || !out.Success || out.Rows == nil {
		t.Fatalf("state/get %v: %d %s (%v)", body, code, raw, err)
	}
	m := make(map[string]string, len(out.Rows))
	for _, r := range out.Rows {
		if !microTime.MatchString(r.UpdatedAt) {
			t.Fatalf("updated_at %q", r.UpdatedAt)
		}
		m[r.Key] = compactJSON(t, string(r.Value))
	}
	return m
}

func (b *broker) cycle(t *testing.T, body map[string]any) cycleResp {
	t.Helper()
	code, raw := b.post(t, "/streams/v1/cycle", mustJSON(t, body))
	var out cycleResp
	if err := json.Unmarshal(raw, &out); err != nil || code != http.StatusOK {
		t.Fatalf("cycle: %d %s (%v)", code, raw, err)
	}
	return out
}

// cycleAsync is cycle for another goroutine than the test's: a failure is the answer's
// (success false, the error in Error), never t.Fatal.
func (b *broker) cycleAsync(body map[string]any) cycleResp {
	raw, err := json.Marshal(body)
	if err != nil {
		return cycleResp{Error: err.Error()}
	}
	resp, out, err := b.request(context.Background(), http.MethodPost, "/streams/v1/cycle", strings.NewReader(string(raw)))
	var r cycleResp
	if err == nil {
		err = json.Unmarshal(out, &r)
	}
	if err != nil || resp.StatusCode != http.StatusOK {
		return cycleResp{Error: fmt.Sprintf("%v %s", err, out)}
	}
	return r
}

func wantRows(t *testing.T, got map[string]string, want map[string]string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
}

func TestStreamsRegistration(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	code, first := b.registerQuery(t, map[string]any{"name": "orders.per_min", "source_queue": "src", "config_hash": "h1"})
	if code != http.StatusOK || !first.Success || !first.Fresh || first.Reset || first.Name != "orders.per_min" || first.ConfigHash != "h1" {
		t.Fatalf("fresh: %d %+v", code, first)
	}
	pid := "00000000-0000-4000-8000-000000000001"
	if r := b.cycle(t, map[string]any{"query_id": first.QueryID, "partition_id": pid,
		"state_ops": []any{map[string]any{"type": "upsert", "key": "k", "value": map[string]any{"n": 1}}}}); !r.Success {
		t.Fatalf("cycle: %+v", r)
	}
	state := func() map[string]string {
		return b.stateOf(t, map[string]any{"query_id": first.QueryID, "partition_id": pid})
	}
	for _, reset := range []bool{false, true} {
		code, again := b.registerQuery(t, map[string]any{"name": "orders.per_min", "source_queue": "src", "config_hash": "h1", "reset": reset})
		if code != http.StatusOK || again.Fresh || again.Reset || again.QueryID != first.QueryID {
			t.Fatalf("same hash, reset %v: %d %+v", reset, code, again)
		}
		wantRows(t, state(), map[string]string{"k": `{"n":1}`})
	}
	code, mm := b.registerQuery(t, map[string]any{"name": "orders.per_min", "source_queue": "src", "config_hash": "h2"})
	if code != http.StatusConflict || mm.Success || mm.QueryID != first.QueryID || !strings.Contains(mm.Error, "config_hash mismatch") {
		t.Fatalf("changed hash: %d %+v", code, mm)
	}
	wantRows(t, state(), map[string]string{"k": `{"n":1}`})
	code, rs := b.registerQuery(t, map[string]any{"name": "orders.per_min", "source_queue": "src", "config_hash": "h2", "reset": true})
	if code != http.StatusOK || !rs.Reset || rs.Fresh || rs.QueryID != first.QueryID {
		t.Fatalf("reset: %d %+v", code, rs)
	}
	wantRows(t, state(), map[string]string{})

	for _, tc := range []struct{ name, body, want string }{
		{"empty", ``, "Empty request body"},
		{"invalid json", `{`, "Invalid JSON"},
		{"not an object", `[1]`, "request body must be a JSON object"},
		{"no name", `{"source_queue":"s","config_hash":"h"}`, "name is required"},
		{"empty name", `{"name":"","source_queue":"s","config_hash":"h"}`, "name is required"},
		{"no source", `{"name":"n","config_hash":"h"}`, "source_queue is required"},
		{"hash not a string", `{"name":"n","source_queue":"s","config_hash":1}`, "config_hash is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, raw := b.doBad(t, http.MethodPost, "/streams/v1/queries", strings.NewReader(tc.body))
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), tc.want) {
				t.Fatalf("%d %s, want 400 %q", resp.StatusCode, raw, tc.want)
			}
		})
	}
}

func TestStreamsStateGet(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	q := b.mustRegister(t, "filters", "h")
	pid := "00000000-0000-4000-8000-000000000002"
	ops := []any{}
	for k, v := range map[string]any{
		"tumb:60\x1fa": map[string]any{"windowEnd": 1000}, "tumb:60\x1fb": map[string]any{"windowEnd": 2000},
		"tumb_60x": map[string]any{"windowEnd": 10}, "tumb:600\x1fc": map[string]any{"windowEnd": "1000"},
		"__wm__": map[string]any{"eventTimeMs": 5}, "": nil,
	} {
		ops = append(ops, map[string]any{"type": "upsert", "key": k, "value": v})
	}
	if r := b.cycle(t, map[string]any{"query_id": q, "partition_id": pid, "state_ops": ops}); !r.Success || r.StateOpsApplied != 6 {
		t.Fatalf("cycle: %+v", r)
	}
	base := func(extra map[string]any) map[string]any {
		m := map[string]any{"query_id": q, "partition_id": pid}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	all := b.stateOf(t, base(map[string]any{"keys": nil}))
	if len(all) != 6 || all[""] != "null" {
		t.Fatalf("whole shard: %v", all)
	}
	wantRows(t, b.stateOf(t, base(map[string]any{"keys": []any{}, "key_prefix": "tumb:60\x1f", "ripe_at_or_before": 1500})),
		map[string]string{"tumb:60\x1fa": `{"windowEnd":1000}`})
	// A literal prefix: "_" is no wildcard.
	wantRows(t, b.stateOf(t, base(map[string]any{"key_prefix": "tumb_"})), map[string]string{"tumb_60x": `{"windowEnd":10}`})
	// Only a JSON number is a ripe bound; windowEnd must be a number too.
	if got := b.stateOf(t, base(map[string]any{"ripe_at_or_before": "1500"})); len(got) != 6 {
		t.Fatalf("string bound: %v", got)
	}
	wantRows(t, b.stateOf(t, base(map[string]any{"ripe_at_or_before": 1e9, "key_prefix": "tumb:600"})), map[string]string{})
	wantRows(t, b.stateOf(t, base(map[string]any{"keys": []any{"", "__wm__", "nope"}})),
		map[string]string{"": "null", "__wm__": `{"eventTimeMs":5}`})
	// Unknown but well-formed ids: no rows.
	wantRows(t, b.stateOf(t, map[string]any{"query_id": "00000000-0000-4000-8000-0000000000ff", "partition_id": pid}), map[string]string{})
	wantRows(t, b.stateOf(t, map[string]any{"query_id": q, "partition_id": "00000000-0000-4000-8000-0000000000ff"}), map[string]string{})

	// push_items are bounded as a push's items are (QUEEN_MAX_PUSH_ITEMS).
	many := make([]any, 10001)
	for i := range many {
		many[i] = map[string]any{"queue": "sg-sink"}
	}
	if code, raw := b.post(t, "/streams/v1/cycle", mustJSON(t, map[string]any{"query_id": q, "partition_id": pid, "push_items": many})); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("10001 push items: %d %s", code, raw)
	}

	// Malformed ids are a 400 on every route.
	for _, tc := range []struct{ path, body, want string }{
		{"/streams/v1/state/get", `{"query_id":"nope","partition_id":"` + pid + `"}`, "query_id is not a UUID"},
		{"/streams/v1/state/get", `{"query_id":"` + q + `","partition_id":"x"}`, "partition_id is not a UUID"},
		{"/streams/v1/state/get", `{"partition_id":"` + pid + `"}`, "query_id is required"},
		{"/streams/v1/state/get", `{"query_id":"` + q + `","partition_id":7}`, "partition_id is required"},
		{"/streams/v1/cycle", `{"query_id":"nope","partition_id":"` + pid + `"}`, "query_id is not a UUID"},
		{"/streams/v1/cycle", `{"query_id":"` + q + `"}`, "partition_id is required"},
		{"/streams/v1/cycle", `{"query_id":"` + q + `","partition_id":"` + pid + `","ack":{"transactionId":"t","leaseId":"x"}}`, "ack.leaseId is not a UUID"},
	} {
		resp, raw := b.doBad(t, http.MethodPost, tc.path, strings.NewReader(tc.body))
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), tc.want) {
			t.Fatalf("%s %s: %d %s, want 400 %q", tc.path, tc.body, resp.StatusCode, raw, tc.want)
		}
	}
}

// source pushes n messages to src/partition and pops them for group as one batch.
func (b *broker) source(t *testing.T, queue, partition, group string, n int) *popResp {
	t.Helper()
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"queue": queue, "partition": partition, "transactionId": fmt.Sprint(partition, "-m", i),
			"payload": map[string]any{"v": i + 1}}
	}
	b.push(t, items...)
	p := b.pop(t, fmt.Sprintf("/api/v1/pop/queue/%s/partition/%s?batch=%d&consumerGroup=%s&wait=false", queue, partition, n, group))
	if p == nil || len(p.Messages) != n {
		t.Fatalf("pop %s/%s: %+v", queue, partition, p)
	}
	return p
}

// sinkTxns pops everything of queue (its own group) and returns the transaction ids.
func (b *broker) sinkPayloads(t *testing.T, queue, group string) []string {
	t.Helper()
	var out []string
	for {
		p := b.pop(t, "/api/v1/pop/queue/"+queue+"?batch=100&wait=false&consumerGroup="+group)
		if p == nil || len(p.Messages) == 0 {
			return out
		}
		for _, m := range p.Messages {
			out = append(out, compactJSON(t, string(m.Data)))
		}
		b.ackAll(t, p, "completed")
	}
}

func TestStreamsCycleCommits(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	q := b.mustRegister(t, "commit", "h")
	p := b.source(t, "cy-src", "p0", "streams.commit", 3)
	last := p.Messages[2]
	r := b.cycle(t, map[string]any{
		"query_id": q, "partition_id": last.PartitionID, "consumer_group": "streams.commit", "release_lease": true,
		"state_ops": []any{map[string]any{"type": "upsert", "key": "w", "value": map[string]any{"sum": 6}},
			map[string]any{"type": "upsert", "key": "gone", "value": 1}, map[string]any{"type": "delete", "key": "gone"}},
		"push_items": []any{map[string]any{"queue": "cy-sink", "payload": map[string]any{"i": 0}},
			map[string]any{"queue": "cy-sink", "payload": map[string]any{"i": 1}},
			map[string]any{"queue": "cy-sink", "payload": map[string]any{"i": 2}, "partition": "Default"}},
		"ack": map[string]any{"transactionId": last.TransactionID, "leaseId": last.LeaseID, "status": "completed", "count": 3},
	})
	if !r.Success || r.StateOpsApplied != 3 || len(r.PushResults) != 3 || r.AckResult == nil || !r.AckResult.LeaseReleased ||
		r.AckResult.Count != 3 || r.QueueName == nil || *r.QueueName != "cy-src" {
		t.Fatalf("cycle: %+v", r)
	}
	for i, pr := range r.PushResults {
		if pr.Index != i || pr.Status != "queued" || pr.MessageID == nil || pr.QueueName != "cy-sink" ||
			!strings.HasPrefix(pr.TransactionID, "stream-") {
			t.Fatalf("push result %d: %+v", i, pr)
		}
	}
	wantRows(t, b.stateOf(t, map[string]any{"query_id": q, "partition_id": last.PartitionID}), map[string]string{"w": `{"sum":6}`})
	if got := b.sinkPayloads(t, "cy-sink", "reader"); strings.Join(got, " ") != `{"i":0} {"i":1} {"i":2}` {
		t.Fatalf("sink: %v", got)
	}
	b.popEmpty(t, "/api/v1/pop/queue/cy-src?consumerGroup=streams.commit&wait=false")
}

// TestStreamsSinkWakesLongPoll: a sink message wakes a pop parked on the sink queue.
func TestStreamsSinkWakesLongPoll(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	q := b.mustRegister(t, "wake", "h")
	done := make(chan *popResp, 1)
	go func() {
		// Not b.get: t.Fatal must not run on this goroutine.
		resp, raw, err := b.request(context.Background(), http.MethodGet, "/api/v1/pop/queue/wk-sink?wait=true&timeout=20000", nil)
		if err != nil {
			done <- nil
			return
		}
		p, _ := decodePop(resp.StatusCode, raw)
		done <- p
	}()
	time.Sleep(300 * time.Millisecond) // let the pop park (a miss only makes the test slower, never wrong)
	start := time.Now()
	r := b.cycle(t, map[string]any{"query_id": q, "partition_id": "00000000-0000-4000-8000-000000000003",
		"push_items": []any{map[string]any{"queue": "wk-sink", "payload": map[string]any{"x": 1}}}})
	if !r.Success {
		t.Fatalf("cycle: %+v", r)
	}
	select {
	case p := <-done:
		if p == nil || len(p.Messages) != 1 || time.Since(start) > 5*time.Second {
			t.Fatalf("woken pop: %+v after %v", p, time.Since(start))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the parked pop was not woken by the cycle's sink push")
	}
}

func TestStreamsFailedAckRollsBack(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	q := b.mustRegister(t, "rollback", "h")
	p := b.source(t, "rb-src", "p0", "streams.rollback", 2)
	m := p.Messages[1]
	for _, ack := range []map[string]any{
		{"transactionId": m.TransactionID, "leaseId": "00000000-0000-4000-8000-00000000beef"},
		{"transactionId": "no-such-message", "leaseId": m.LeaseID},
		{"transactionId": m.TransactionID, "status": "nonsense"},
		{"status": "completed"},
	} {
		r := b.cycle(t, map[string]any{"query_id": q, "partition_id": m.PartitionID, "consumer_group": "streams.rollback",
			"state_ops":  []any{map[string]any{"type": "upsert", "key": "w", "value": 1}},
			"push_items": []any{map[string]any{"queue": "rb-sink", "payload": 1}},
			"ack":        ack})
		if r.Success || r.Error == "" || r.StateOpsApplied != 0 || r.PushResults == nil || len(r.PushResults) != 0 || r.AckResult != nil {
			t.Fatalf("ack %v: %+v", ack, r)
		}
	}
	if r := b.cycle(t, map[string]any{"query_id": q, "partition_id": m.PartitionID,
		"state_ops": []any{map[string]any{"type": "merge", "key": "w"}}}); r.Success || !strings.Contains(r.Error, "Unknown state_op type: merge") {
		t.Fatalf("unknown op: %+v", r)
	}
	if r := b.cycle(t, map[string]any{"query_id": q, "partition_id": m.PartitionID,
		"state_ops": []any{map[string]any{"type": "upsert", "key": nil, "value": 1}}}); r.Success || !strings.Contains(r.Error, "key is required") {
		t.Fatalf("null key: %+v", r)
	}
	// A value PostgreSQL cannot store (jsonb refuses \u0000) fails the cycle, not the route.
	if r := b.cycle(t, map[string]any{"query_id": q, "partition_id": m.PartitionID,
		"state_ops": []any{map[string]any{"type": "upsert", "key": "z", "value": "a\u0000b"}}}); r.Success {
		t.Fatalf("NUL in a value: %+v", r)
	}
	wantRows(t, b.stateOf(t, map[string]any{"query_id": q, "partition_id": m.PartitionID}), map[string]string{})
	b.popEmpty(t, "/api/v1/pop/queue/rb-sink?wait=false")
	// The lease was left alone: the right ack commits.
	r := b.cycle(t, map[string]any{"query_id": q, "partition_id": m.PartitionID, "consumer_group": "streams.rollback",
		"ack": map[string]any{"transactionId": m.TransactionID, "leaseId": m.LeaseID}})
	if !r.Success || !r.AckResult.LeaseReleased {
		t.Fatalf("ack after failures: %+v", r)
	}
}

// TestStreamsKeepLeaseRedelivers: release_lease false (a gate that denied) keeps the
// partition leased; after the lease expires the messages after the acked one come back,
// in order.
func TestStreamsKeepLeaseRedelivers(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	b.setOptions(t, "kl-src", map[string]any{"leaseTime": 1})
	q := b.mustRegister(t, "gate", "h")
	p := b.source(t, "kl-src", "p0", "streams.gate", 4)
	m := p.Messages[1]
	r := b.cycle(t, map[string]any{"query_id": q, "partition_id": m.PartitionID, "consumer_group": "streams.gate",
		"release_lease": false, "push_items": []any{map[string]any{"queue": "kl-sink", "payload": 1}},
		"ack": map[string]any{"transactionId": m.TransactionID, "leaseId": m.LeaseID, "count": 2}})
	if !r.Success || r.AckResult.LeaseReleased {
		t.Fatalf("cycle: %+v", r)
	}
	var again *popResp
	eventually(t, 10*time.Second, "redelivery after the lease expired", func() bool {
		again = b.pop(t, "/api/v1/pop/queue/kl-src?batch=10&consumerGroup=streams.gate&wait=false")
		return again != nil && len(again.Messages) > 0
	})
	wantTxns(t, again, "p0-m2", "p0-m3")
}

func TestStreamsDeadLetter(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	q := b.mustRegister(t, "dlq", "h")
	p := b.source(t, "dl-src", "p0", "streams.dlq", 3)
	m := p.Messages[0]
	r := b.cycle(t, map[string]any{"query_id": q, "partition_id": m.PartitionID, "consumer_group": "streams.dlq",
		"release_lease": false, "ack": map[string]any{"transactionId": m.TransactionID, "leaseId": m.LeaseID, "status": "failed", "error": "boom"}})
	if !r.Success || r.AckResult == nil || !r.AckResult.DLQ || !r.AckResult.LeaseReleased || r.AckResult.Count != 0 {
		t.Fatalf("dlq cycle: %+v", r)
	}
	next := b.pop(t, "/api/v1/pop/queue/dl-src?batch=10&consumerGroup=streams.dlq&wait=false")
	wantTxns(t, next, "p0-m1", "p0-m2")
	code, raw := b.get(t, "/api/v1/dlq?queue=dl-src")
	if code != http.StatusOK || !strings.Contains(string(raw), "boom") || !strings.Contains(string(raw), "p0-m0") {
		t.Fatalf("dead letters: %d %s", code, raw)
	}
}

// TestStreamsTwoWorkers: two workers of one query on different partitions commit at the
// same time, each its own shard, lease and sink messages.
func TestStreamsTwoWorkers(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	q := b.mustRegister(t, "pair", "h")
	pops := []*popResp{b.source(t, "tw-src", "a", "streams.pair", 5), b.source(t, "tw-src", "b", "streams.pair", 5)}
	var wg sync.WaitGroup
	res := make([]cycleResp, 2)
	for i, p := range pops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := p.Messages[4]
			res[i] = b.cycleAsync(map[string]any{"query_id": q, "partition_id": last.PartitionID, "consumer_group": "streams.pair",
				"state_ops":  []any{map[string]any{"type": "upsert", "key": "n", "value": i}},
				"push_items": []any{map[string]any{"queue": "tw-sink", "partition": last.Partition, "payload": map[string]any{"from": last.Partition}}},
				"ack":        map[string]any{"transactionId": last.TransactionID, "leaseId": last.LeaseID, "count": 5}})
		}()
	}
	wg.Wait()
	for i, p := range pops {
		if !res[i].Success {
			t.Fatalf("worker %d: %+v", i, res[i])
		}
		wantRows(t, b.stateOf(t, map[string]any{"query_id": q, "partition_id": p.Messages[0].PartitionID}), map[string]string{"n": fmt.Sprint(i)})
	}
	if got := b.sinkPayloads(t, "tw-sink", "reader"); len(got) != 2 {
		t.Fatalf("sink: %v", got)
	}
}

// TestStreamsRetryStoresNoDuplicate: a cycle retried after its answer was lost stores its
// sink messages once (deterministic transaction ids): an ack-less flush, and a kept-lease
// cycle whose ack is a no-op the second time.
func TestStreamsRetryStoresNoDuplicate(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	q := b.mustRegister(t, "retry", "h")
	pid := "00000000-0000-4000-8000-000000000004"
	flush := map[string]any{"query_id": q, "partition_id": pid, "ack": nil,
		"state_ops":  []any{map[string]any{"type": "delete", "key": "tumb:60\x1f2026-01-01T00:00:00.000Z"}},
		"push_items": []any{map[string]any{"queue": "rt-sink", "payload": map[string]any{"sum": 1}}, map[string]any{"queue": "rt-sink", "payload": map[string]any{"sum": 2}}}}
	first, second := b.cycle(t, flush), b.cycle(t, flush)
	if !first.Success || !second.Success || first.PushResults[0].Status != "queued" || second.PushResults[0].Status != "duplicate" ||
		second.PushResults[1].Status != "duplicate" || first.PushResults[1].TransactionID != second.PushResults[1].TransactionID {
		t.Fatalf("flush and its retry: %+v / %+v", first, second)
	}
	for i := range first.PushResults {
		if a, b := first.PushResults[i].MessageID, second.PushResults[i].MessageID; a == nil || b == nil || *a != *b {
			t.Fatalf("item %d: the duplicate names message %v, the original is %v", i, b, a)
		}
	}
	p := b.source(t, "rt-src", "p0", "streams.retry", 2)
	m := p.Messages[1]
	gate := map[string]any{"query_id": q, "partition_id": m.PartitionID, "consumer_group": "streams.retry", "release_lease": false,
		"push_items": []any{map[string]any{"queue": "rt-sink", "payload": map[string]any{"gate": 1}}},
		"ack":        map[string]any{"transactionId": m.TransactionID, "leaseId": m.LeaseID, "count": 2}}
	if a, b2 := b.cycle(t, gate), b.cycle(t, gate); !a.Success || !b2.Success || b2.PushResults[0].Status != "duplicate" {
		t.Fatalf("gate cycle and its retry: %+v / %+v", a, b2)
	}
	if got := b.sinkPayloads(t, "rt-sink", "reader"); strings.Join(got, " ") != `{"sum":1} {"sum":2} {"gate":1}` {
		t.Fatalf("sink: %v", got)
	}
}

// TestStreamsDeletion: deleting the source queue deletes its partitions' state (the
// registration stays); deleting the consumer group keeps it (core/streams doc.go).
func TestStreamsDeletion(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	q := b.mustRegister(t, "del", "h")
	p := b.source(t, "dq-src", "p0", "streams.del", 1)
	m := p.Messages[0]
	if r := b.cycle(t, map[string]any{"query_id": q, "partition_id": m.PartitionID, "consumer_group": "streams.del",
		"state_ops": []any{map[string]any{"type": "upsert", "key": "w", "value": 1}},
		"ack":       map[string]any{"transactionId": m.TransactionID, "leaseId": m.LeaseID}}); !r.Success {
		t.Fatalf("cycle: %+v", r)
	}
	shard := map[string]any{"query_id": q, "partition_id": m.PartitionID}
	if resp, raw := b.do(t, http.MethodDelete, "/api/v1/consumer-groups/streams.del", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("delete group: %d %s", resp.StatusCode, raw)
	}
	wantRows(t, b.stateOf(t, shard), map[string]string{"w": "1"})
	if resp, raw := b.do(t, http.MethodDelete, "/api/v1/resources/queues/dq-src", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("delete queue: %d %s", resp.StatusCode, raw)
	}
	wantRows(t, b.stateOf(t, shard), map[string]string{})
	if code, r := b.registerQuery(t, map[string]any{"name": "del", "source_queue": "src", "config_hash": "h"}); code != http.StatusOK || r.Fresh || r.QueryID != q {
		t.Fatalf("registration after the queue's deletion: %d %+v", code, r)
	}
}

// TestStreamsSinkEncrypted: sink items to an encrypted queue are sealed at rest as a push
// would seal them (docs/streams.md §6), and popped back as sent.
func TestStreamsSinkEncrypted(t *testing.T) {
	t.Parallel()
	b := startBroker(t, map[string]string{"QUEEN_ENCRYPTION_KEY": encKeyA})
	b.setOptions(t, "se-sink", map[string]any{"encryptionEnabled": true})
	q := b.mustRegister(t, "sealed", "h")
	r := b.cycle(t, map[string]any{"query_id": q, "partition_id": "00000000-0000-4000-8000-000000000005",
		"push_items": []any{map[string]any{"queue": "se-sink", "transactionId": "s1", "payload": map[string]any{"secret": "k1"}},
			map[string]any{"queue": "se-sink", "transactionId": "s2", "payload": map[string]any{"secret": "k2"}}}})
	if !r.Success {
		t.Fatalf("cycle: %+v", r)
	}
	encWantSealedAtRest(t, b.DB, "se-sink", map[string]encSealed{
		"s1": {key: encKeyA, plaintext: `{"secret":"k1"}`}, "s2": {key: encKeyA, plaintext: `{"secret":"k2"}`}})
	if got := b.sinkPayloads(t, "se-sink", "reader"); strings.Join(got, " ") != `{"secret":"k1"} {"secret":"k2"}` {
		t.Fatalf("sink: %v", got)
	}
}

// TestStreamsAuth: the routes' access levels (queries and cycle read-write, state/get
// read-only), and sink messages stamped with the token's subject, as pushes are.
func TestStreamsAuth(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t, "hs")
	ro, rw, wo := f.bearer(t, "read-only"), f.bearer(t, "read-write"), f.bearer(t, "write-only")
	reg := `{"name":"authq","source_queue":"s","config_hash":"h"}`
	for _, tc := range []struct {
		auth, path, body string
		want             int
	}{
		{ro, "/streams/v1/queries", reg, http.StatusForbidden},
		{wo, "/streams/v1/queries", reg, http.StatusForbidden},
		{"", "/streams/v1/queries", reg, http.StatusUnauthorized},
		{ro, "/streams/v1/cycle", `{"query_id":"00000000-0000-4000-8000-000000000001","partition_id":"00000000-0000-4000-8000-000000000001"}`, http.StatusForbidden},
		{rw, "/streams/v1/queries", reg, http.StatusOK},
	} {
		if code, _, raw := f.call(t, "POST", tc.path, tc.auth, tc.body); code != tc.want {
			t.Fatalf("%s with %.20q: %d %s, want %d", tc.path, tc.auth, code, raw, tc.want)
		}
	}
	_, _, raw := f.call(t, "POST", "/streams/v1/queries", rw, reg)
	var r streamQueryResp
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	pid := "00000000-0000-4000-8000-000000000001"
	if code, _, raw := f.call(t, "POST", "/streams/v1/state/get", ro, `{"query_id":"`+r.QueryID+`","partition_id":"`+pid+`"}`); code != http.StatusOK {
		t.Fatalf("state/get read-only: %d %s", code, raw)
	}
	code, _, raw := f.call(t, "POST", "/streams/v1/cycle", rw, `{"query_id":"`+r.QueryID+`","partition_id":"`+pid+`",
		"push_items":[{"queue":"sa-sink","payload":{"n":1},"producerSub":"mallory"}]}`)
	if code != http.StatusOK || !strings.Contains(string(raw), `"success":true`) {
		t.Fatalf("cycle: %d %s", code, raw)
	}
	code, _, raw = f.call(t, "GET", "/api/v1/pop/queue/sa-sink?wait=false", rw, "")
	p, err := decodePop(code, raw)
	if err != nil || p == nil || len(p.Messages) != 1 || p.Messages[0].ProducerSub == nil || *p.Messages[0].ProducerSub != "alice" {
		t.Fatalf("sink message: %v %s", err, raw)
	}
}

// TestStreamsCORS: the streams routes answer with permissive CORS headers (docs/streams.md
// §2), refusals included, and their preflights need no token.
func TestStreamsCORS(t *testing.T) {
	t.Parallel()
	f := newAuthFixture(t, "hs")
	rw, ro := f.bearer(t, "read-write"), f.bearer(t, "read-only")
	const id = "00000000-0000-4000-8000-000000000001"
	for _, tc := range []struct {
		name, method, path, auth, body string
		want                           int
	}{
		{"preflight without a token", "OPTIONS", "/streams/v1/cycle", "", "", http.StatusNoContent},
		{"preflight of the queries route", "OPTIONS", "/streams/v1/queries", "", "", http.StatusNoContent},
		{"refused for want of a token", "POST", "/streams/v1/state/get", "", `{"query_id":"` + id + `","partition_id":"` + id + `"}`, http.StatusUnauthorized},
		{"refused to a read-only token", "POST", "/streams/v1/cycle", ro, `{"query_id":"` + id + `","partition_id":"` + id + `"}`, http.StatusForbidden},
		{"registered", "POST", "/streams/v1/queries", rw, `{"name":"corsq","source_queue":"s","config_hash":"h"}`, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, h, raw := f.call(t, tc.method, tc.path, tc.auth, tc.body)
			if code != tc.want {
				t.Fatalf("%d %s, want %d", code, raw, tc.want)
			}
			if h.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
				!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") {
				t.Fatalf("CORS headers %v", h)
			}
		})
	}
	// Other routes carry none (docs/api.md §1: Queen's reference has no CORS layer).
	if _, h, _ := f.call(t, "GET", "/health", "", ""); h.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("/health carries CORS headers: %v", h)
	}
}
