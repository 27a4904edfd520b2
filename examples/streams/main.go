// Command streams is a tumbling-window sum computed the way Queen's streams SDKs compute
// it against /streams/v1 (docs/streams.md): register the query, pop a batch of the source, read
// the partition's state shard, fold the batch into one-second windows client-side, then
// commit one cycle per partition: upserts of open windows, deletes and sink pushes of
// closed ones, and the ack of the last message. An idle flush at the end emits the
// windows no later message closed (state/get with a prefix and a ripe bound, then an
// ack-less cycle).
//
//	go run ./examples/streams -url http://localhost:6632 -messages 500
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// windowTag prefixes every window key, as the SDKs' tumbling operator does
// ("tumb:<seconds>" then U+001F).
const windowTag = "tumb:1\x1f"

type message struct {
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Partition     string          `json:"partition"`
	LeaseID       string          `json:"leaseId"`
	CreatedAt     time.Time       `json:"createdAt"`
	Data          json.RawMessage `json:"data"`
}

// window is a state value: the accumulator and the window's bounds in epoch ms.
type window struct {
	Acc         float64 `json:"acc"`
	WindowStart int64   `json:"windowStart"`
	WindowEnd   int64   `json:"windowEnd"`
}

type client struct{ base string }

func (c client) post(path string, body, out any) int {
	b, err := json.Marshal(body)
	if err != nil {
		log.Fatal(err)
	}
	resp, err := http.Post(c.base+path, "application/json", bytes.NewReader(b))
	if err != nil {
		log.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode < 300 && resp.StatusCode != http.StatusNoContent {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			log.Fatalf("POST %s: %v", path, err)
		}
	}
	return resp.StatusCode
}

func main() {
	base := flag.String("url", "http://localhost:6632", "broker URL")
	source := flag.String("source", "example.events", "source queue")
	sink := flag.String("sink", "example.sums", "sink queue")
	query := flag.String("query", "example.sum_per_second", "query name")
	n := flag.Int("messages", 300, "messages to push to the source first (0: none)")
	flag.Parse()
	c := client{base: strings.TrimRight(*base, "/")}

	var reg struct {
		Success bool   `json:"success"`
		QueryID string `json:"query_id"`
		Error   string `json:"error"`
	}
	if code := c.post("/streams/v1/queries", map[string]any{"name": *query, "source_queue": *source,
		"sink_queue": *sink, "config_hash": "tumbling-1s-sum-v1"}, &reg); code != http.StatusOK || !reg.Success {
		log.Fatalf("register: %d %s", code, reg.Error)
	}
	if *n > 0 {
		items := make([]map[string]any, *n)
		for i := range items {
			items[i] = map[string]any{"queue": *source, "partition": fmt.Sprint("p", i%4), "payload": map[string]any{"amount": i % 10}}
		}
		if code := c.post("/api/v1/push", map[string]any{"items": items}, nil); code != http.StatusCreated {
			log.Fatalf("push: %d", code)
		}
	}

	group := "streams." + *query
	total := 0
	for {
		var pop struct {
			Messages []message `json:"messages"`
		}
		q := url.Values{"batch": {"200"}, "consumerGroup": {group}, "wait": {"true"}, "timeout": {"1000"}, "partitions": {"4"}}
		resp, err := http.Get(c.base + "/api/v1/pop/queue/" + url.PathEscape(*source) + "?" + q.Encode())
		if err != nil {
			log.Fatal(err)
		}
		if resp.StatusCode == http.StatusOK {
			err = json.NewDecoder(resp.Body).Decode(&pop)
		}
		resp.Body.Close()
		if err != nil {
			log.Fatal(err)
		}
		if len(pop.Messages) == 0 {
			break // drained: flush what is left and stop
		}
		byPartition := map[string][]message{}
		for _, m := range pop.Messages {
			byPartition[m.PartitionID] = append(byPartition[m.PartitionID], m)
		}
		for pid, msgs := range byPartition {
			total += cycle(c, reg.QueryID, pid, group, *sink, msgs)
		}
	}
	flushed := 0
	// The idle flush: every window whose end has passed, of every partition touched.
	for pid := range touched {
		flushed += flush(c, reg.QueryID, pid, *sink, time.Now().UnixMilli())
	}
	fmt.Printf("processed %d messages, flushed %d windows at the end; sums are in queue %s\n", total, flushed, *sink)
}

// touched are the partitions this run committed cycles for (the idle flush visits them).
var touched = map[string]bool{}

// cycle folds msgs (one partition's part of a pop) into its windows and commits.
func cycle(c client, queryID, pid, group, sink string, msgs []message) int {
	touched[pid] = true
	sort.Slice(msgs, func(i, j int) bool {
		if !msgs[i].CreatedAt.Equal(msgs[j].CreatedAt) {
			return msgs[i].CreatedAt.Before(msgs[j].CreatedAt)
		}
		return msgs[i].TransactionID < msgs[j].TransactionID
	})
	var st struct {
		Rows []struct {
			Key   string `json:"key"`
			Value window `json:"value"`
		} `json:"rows"`
	}
	c.post("/streams/v1/state/get", map[string]any{"query_id": queryID, "partition_id": pid, "keys": []string{}}, &st)
	windows := map[string]*window{}
	persisted := map[string]bool{}
	for _, r := range st.Rows {
		if strings.HasPrefix(r.Key, windowTag) {
			w := r.Value
			windows[r.Key], persisted[r.Key] = &w, true
		}
	}
	for _, m := range msgs {
		var p struct {
			Amount float64 `json:"amount"`
		}
		_ = json.Unmarshal(m.Data, &p)
		start := m.CreatedAt.Truncate(time.Second)
		key := windowTag + start.UTC().Format("2006-01-02T15:04:05.000Z")
		w := windows[key]
		if w == nil {
			w = &window{WindowStart: start.UnixMilli(), WindowEnd: start.Add(time.Second).UnixMilli()}
			windows[key] = w
		}
		w.Acc += p.Amount
	}
	// Processing time: the clock is the latest createdAt of the batch.
	clock := msgs[len(msgs)-1].CreatedAt.UnixMilli()
	var ops, items []map[string]any
	for key, w := range windows {
		if w.WindowEnd <= clock {
			items = append(items, map[string]any{"queue": sink, "partition": msgs[0].Partition,
				"payload": map[string]any{"windowStart": w.WindowStart, "windowEnd": w.WindowEnd, "sum": w.Acc}})
			if persisted[key] {
				ops = append(ops, map[string]any{"type": "delete", "key": key})
			}
			continue
		}
		ops = append(ops, map[string]any{"type": "upsert", "key": key, "value": w})
	}
	last := msgs[len(msgs)-1]
	var out struct {
		Success bool   `json:"success"`
		Error   string `json:"error"`
	}
	c.post("/streams/v1/cycle", map[string]any{"query_id": queryID, "partition_id": pid, "consumer_group": group,
		"release_lease": true, "state_ops": nonNil(ops), "push_items": nonNil(items),
		"ack": map[string]any{"transactionId": last.TransactionID, "leaseId": last.LeaseID, "status": "completed", "count": len(msgs)}}, &out)
	if !out.Success {
		log.Printf("cycle of partition %s failed: %s (its messages come back after the lease expires)", pid, out.Error)
		return 0
	}
	return len(msgs)
}

// flush emits and deletes the partition's windows that ended at or before now.
func flush(c client, queryID, pid, sink string, now int64) int {
	var st struct {
		Rows []struct {
			Key   string `json:"key"`
			Value window `json:"value"`
		} `json:"rows"`
	}
	c.post("/streams/v1/state/get", map[string]any{"query_id": queryID, "partition_id": pid, "keys": []string{},
		"key_prefix": windowTag, "ripe_at_or_before": now}, &st)
	if len(st.Rows) == 0 {
		return 0
	}
	var ops, items []map[string]any
	for _, r := range st.Rows {
		ops = append(ops, map[string]any{"type": "delete", "key": r.Key})
		items = append(items, map[string]any{"queue": sink,
			"payload": map[string]any{"windowStart": r.Value.WindowStart, "windowEnd": r.Value.WindowEnd, "sum": r.Value.Acc}})
	}
	var out struct {
		Success bool `json:"success"`
	}
	c.post("/streams/v1/cycle", map[string]any{"query_id": queryID, "partition_id": pid, "ack": nil,
		"state_ops": ops, "push_items": items}, &out)
	if !out.Success {
		return 0
	}
	return len(st.Rows)
}

func nonNil(v []map[string]any) []map[string]any {
	if v == nil {
		return []map[string]any{}
	}
	return v
}
