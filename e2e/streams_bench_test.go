package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/bench/load"
)

// BenchmarkStreamsCycle measures the streams SDK loop over HTTP with 20 partitions and
// batches of 100 (docs/streams.md §4.3's throughput shape): per partition, one worker pops
// 100 messages, reads its state shard, folds them into a window and commits one cycle
// (an upsert, one sink push, the ack of the last message). One op is one cycle. Reports
// cycles/s and, for the throwaway test cluster (its postmaster read in /proc), PostgreSQL
// CPU per cycle (pg_us/cycle: pop, state read and cycle together). Run alone:
//
//	go test ./e2e -run '^$' -bench StreamsCycle -benchtime 400x
//
// The pop-ack sub-benchmark is the same work without streams, as a baseline on the same
// machine: pop 100, ack them with /api/v1/ack/batch, push one sink message.
func BenchmarkStreamsCycle(b *testing.B) {
	b.Run("cycle", func(b *testing.B) { benchStreams(b, benchCycle) })
	b.Run("pop-ack", func(b *testing.B) { benchStreams(b, benchPopAck) })
}

// benchStreams runs step b.N times over 20 partitions with batches of 100.
func benchStreams(b *testing.B, step func(br *broker, queryID, part string, batch int) error) {
	const parts, batch = 20, 100
	br := startBroker(b, nil)
	q := br.mustRegisterTB(b, "bench", "h")
	// Worker p runs quota(p) cycles, b.N in all; the prefill gives each a full batch.
	quota := func(p int) int { return b.N/parts + min(1, max(0, b.N%parts-p)) }
	for p := range parts {
		for range quota(p) {
			items := make([]map[string]any, batch)
			for i := range items {
				items[i] = map[string]any{"queue": "sb-src", "partition": fmt.Sprint("p", p), "payload": map[string]any{"amount": i}}
			}
			br.push(b, items...)
		}
	}
	pg := pgtest.PostmasterPID() // 0 with QUEEN_TEST_PG_URL: no CPU metric
	var before time.Duration
	if pg > 0 {
		before, _ = load.ClusterCPU(pg)
	}
	var failed atomic.Value
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range quota(p) {
				if err := step(br, q, fmt.Sprint("p", p), batch); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "cycles/s")
	if pg > 0 {
		if after, err := load.ClusterCPU(pg); err == nil {
			b.ReportMetric(float64((after-before).Microseconds())/float64(b.N), "pg_us/cycle")
		}
	}
}

func (b *broker) mustRegisterTB(t testing.TB, name, hash string) string {
	t.Helper()
	code, raw := b.post(t, "/streams/v1/queries", mustJSON(t, map[string]any{"name": name, "source_queue": "sb-src", "config_hash": hash}))
	var r streamQueryResp
	if err := json.Unmarshal(raw, &r); err != nil || code != http.StatusOK {
		t.Fatalf("register: %d %s", code, raw)
	}
	return r.QueryID
}

// benchCycle is one SDK cycle on partition part; errors instead of t.Fatal (it runs on
// the benchmark's workers).
func benchCycle(br *broker, queryID, part string, batch int) error {
	ctx := context.Background()
	resp, raw, err := br.request(ctx, http.MethodGet,
		fmt.Sprintf("/api/v1/pop/queue/sb-src/partition/%s?batch=%d&consumerGroup=streams.bench&wait=false", part, batch), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pop %s: %v %s", part, err, raw)
	}
	var pop popResp
	if err := json.Unmarshal(raw, &pop); err != nil || len(pop.Messages) == 0 {
		return fmt.Errorf("pop %s: %v %s", part, err, raw)
	}
	last := pop.Messages[len(pop.Messages)-1]
	post := func(path string, body any) ([]byte, error) {
		b, _ := json.Marshal(body)
		resp, raw, err := br.request(ctx, http.MethodPost, path, bytes.NewReader(b))
		if err != nil || resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s: %v %s", path, err, raw)
		}
		return raw, nil
	}
	raw, err = post("/streams/v1/state/get", map[string]any{"query_id": queryID, "partition_id": last.PartitionID, "keys": []any{}})
	if err != nil {
		return err
	}
	var st struct {
		Rows []struct {
			Value struct{ Acc float64 } `json:"value"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return err
	}
	sum := 0.0
	for _, r := range st.Rows {
		sum += r.Value.Acc
	}
	for _, m := range pop.Messages {
		var v struct{ Amount float64 }
		_ = json.Unmarshal(m.Data, &v)
		sum += v.Amount
	}
	raw, err = post("/streams/v1/cycle", map[string]any{"query_id": queryID, "partition_id": last.PartitionID,
		"consumer_group": "streams.bench", "release_lease": true,
		"state_ops":  []any{map[string]any{"type": "upsert", "key": "tumb:60\x1fw", "value": map[string]any{"acc": sum}}},
		"push_items": []any{map[string]any{"queue": "sb-sink", "partition": part, "payload": map[string]any{"sum": sum}}},
		"ack":        map[string]any{"transactionId": last.TransactionID, "leaseId": last.LeaseID, "count": len(pop.Messages)}})
	if err != nil {
		return err
	}
	if !strings.Contains(string(raw), `"success":true`) {
		return fmt.Errorf("cycle: %s", raw)
	}
	return nil
}

// benchPopAck is benchCycle's work through the plain routes: the pop, an ack of every
// message, one push to the sink.
func benchPopAck(br *broker, _, part string, batch int) error {
	ctx := context.Background()
	resp, raw, err := br.request(ctx, http.MethodGet,
		fmt.Sprintf("/api/v1/pop/queue/sb-src/partition/%s?batch=%d&consumerGroup=streams.bench&wait=false", part, batch), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pop %s: %v %s", part, err, raw)
	}
	var pop popResp
	if err := json.Unmarshal(raw, &pop); err != nil || len(pop.Messages) == 0 {
		return fmt.Errorf("pop %s: %v %s", part, err, raw)
	}
	acks := make([]map[string]any, len(pop.Messages))
	for i, m := range pop.Messages {
		acks[i] = ackItemOf(m, "completed")
	}
	body, _ := json.Marshal(map[string]any{"consumerGroup": "streams.bench", "acknowledgments": acks})
	if resp, raw, err := br.request(ctx, http.MethodPost, "/api/v1/ack/batch", bytes.NewReader(body)); err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ack %s: %v %s", part, err, raw)
	}
	body, _ = json.Marshal(map[string]any{"items": []any{map[string]any{"queue": "sb-sink", "partition": part, "payload": map[string]any{"sum": 1}}}})
	if resp, raw, err := br.request(ctx, http.MethodPost, "/api/v1/push", bytes.NewReader(body)); err != nil || resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("push %s: %v %s", part, err, raw)
	}
	return nil
}
