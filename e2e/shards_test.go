package e2e

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
)

// shardSet is three PostgreSQL clusters serving one broker as shards (QUEEN_SHARDS): a
// fresh database on each of the test process's first three clusters (pgtest), all able to
// prepare transactions; shard 0 is the catalogue.
type shardSet struct {
	urls []string
}

func newShardSet(t *testing.T) shardSet {
	t.Helper()
	var urls []string
	for n := range 3 {
		urls = append(urls, pgtest.NewDatabaseOn(t, n))
	}
	return shardSet{urls: urls}
}

// env is a broker's configuration on the shards, in the order given (the list's order is
// the shards' numbers).
func (s shardSet) env(extra map[string]string, urls ...string) map[string]string {
	if urls == nil {
		urls = s.urls
	}
	env := map[string]string{"QUEEN_PG_URL": "", "QUEEN_SHARDS": strings.Join(urls, " "), "DB_POOL_SIZE": "12"}
	maps.Copy(env, extra)
	return env
}

// shardOf is the shard the catalogue placed queue on; the test fails when none.
func (s shardSet) shardOf(t *testing.T, queue string) int {
	t.Helper()
	n, ok := pgtest.Placement(t, s.urls[0], queue)
	if !ok {
		t.Fatalf("queue %s is not placed", queue)
	}
	return n
}

// holders are the shards whose database stores messages of queue.
func (s shardSet) holders(t *testing.T, queue string) []int {
	t.Helper()
	return s.holdersAmong(t, queue, len(s.urls))
}

// holdersAmong is holders among the first count shards (the others not migrated yet).
func (s shardSet) holdersAmong(t *testing.T, queue string, count int) []int {
	t.Helper()
	var out []int
	for n, u := range s.urls[:count] {
		if len(pgtest.StoredMessages(t, u, queue)) > 0 {
			out = append(out, n)
		}
	}
	return out
}

// idShard is the shard a partition or lease id names (docs/design.md, "Routing without
// a lookup"): the first four hex digits of a version 8 UUID, 0 for any other version.
func idShard(t *testing.T, id string) int {
	t.Helper()
	if len(id) != 36 || id[14] != '8' {
		return 0
	}
	var n int
	if _, err := fmt.Sscanf(id[:4], "%04x", &n); err != nil {
		t.Fatalf("id %s: %v", id, err)
	}
	return n
}

// TestShardsRouteByPlacementAndID: with three shards, one push request spanning them
// stores each queue's messages on the shard the catalogue placed it on; pops find them
// there, acks and lease extensions reach them by the ids alone, a namespace pop gathers
// across shards, and a transaction across two shards commits or rolls back whole. A
// broker given the shards in another order refuses to start; one given them in order
// finds every queue where it was.
func TestShardsRouteByPlacementAndID(t *testing.T) {
	t.Parallel()
	shards := newShardSet(t)
	b := startBrokerOn(t, shards.urls[0], shards.env(nil))

	var items []map[string]any
	for i := range 24 {
		items = append(items, map[string]any{"queue": fmt.Sprintf("sh-%02d", i), "payload": map[string]any{"i": i},
			"transactionId": fmt.Sprintf("first-%02d", i)})
	}
	for _, r := range b.push(t, items...) {
		if r.Status != "queued" {
			t.Fatalf("push across shards: %+v", r)
		}
	}
	on := map[int][]string{}
	for _, it := range items {
		q := it["queue"].(string)
		n := shards.shardOf(t, q)
		if got := shards.holders(t, q); !slices.Equal(got, []int{n}) {
			t.Fatalf("queue %s placed on shard %d is stored on shards %v", q, n, got)
		}
		on[n] = append(on[n], q)
	}
	if len(on[0]) == 0 || len(on[1]) == 0 || len(on[2]) == 0 {
		t.Fatalf("24 queues over three shards left one empty: %v", on)
	}
	q1, q2 := on[1][0], on[2][0]
	// Each shard's figures, labelled; the unlabelled fusion family adds them up.
	var perShard float64
	for n := range 3 {
		got := b.metric(t, fmt.Sprintf(`queen_shard_fusion_messages_total{shard="%d"}`, n))
		if got < float64(len(on[n])) {
			t.Errorf("shard %d's fusion counted %v messages, want at least %d", n, got, len(on[n]))
		}
		perShard += got
		if up := b.metric(t, fmt.Sprintf(`queen_shard_db_healthy{shard="%d"}`, n)); up != 1 {
			t.Errorf("queen_shard_db_healthy of shard %d = %v", n, up)
		}
	}
	if total := b.metric(t, `queen_batch_items_fired_total{op="push"}`); total != perShard {
		t.Errorf("queen_batch_items_fired_total = %v, want the shards' %v", total, perShard)
	}

	t.Run("admin listings merged", func(t *testing.T) {
		var names []string
		var page struct {
			Queues     []resListQueue `json:"queues"`
			Pagination struct {
				Limit, Offset, Total int
			} `json:"pagination"`
		}
		for offset := 0; ; offset += 5 {
			page.Queues = nil
			b.resDecode(t, fmt.Sprintf("/api/v1/resources/queues?limit=5&offset=%d", offset), &page)
			if len(page.Queues) == 0 {
				break
			}
			for _, q := range page.Queues {
				names = append(names, q.Name)
			}
		}
		var want []string
		for _, it := range items {
			want = append(want, it["queue"].(string))
		}
		if !slices.Equal(names, want) || page.Pagination.Total != len(want) {
			t.Fatalf("paged listing %v (total %d), want every shard's queues in name order %v", names, page.Pagination.Total, want)
		}
		// The dashboard's fragments read through the same use cases; they are pages, not
		// API operations (no OpenAPI check).
		for _, frag := range []string{"overview", "queues", "groups", "messages", "dlq", "traces", "system"} {
			resp, err := b.client.Get(b.URL + "/ui/fragments/" + frag)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || (frag == "queues" && !strings.Contains(string(body), on[2][0])) {
				t.Errorf("dashboard fragment %s: %d %.300s", frag, resp.StatusCode, body)
			}
		}
	})

	t.Run("pop and ack by id", func(t *testing.T) {
		for n, q := range []string{on[0][0], q1, q2} {
			m := b.popOne(t, q)
			if got := idShard(t, m.PartitionID); got != n {
				t.Fatalf("partition %s of %s on shard %d names shard %d", m.PartitionID, q, n, got)
			}
			if res := b.ackBatch(t, "", ackItemOf(m, "completed")); !res[0].Success {
				t.Fatalf("ack on shard %d: %+v", n, res[0])
			}
			if p := b.pop(t, "/api/v1/pop/queue/"+q+"?batch=1"); p != nil {
				t.Fatalf("acked message of shard %d delivered again: %+v", n, p)
			}
		}
	})

	t.Run("lease extension", func(t *testing.T) {
		b.push(t, map[string]any{"queue": q2, "payload": 1, "transactionId": "lease-1"})
		m := b.popOne(t, q2)
		if r := b.extend(t, m.LeaseID, `{"seconds":120}`); r.Renewed != 1 {
			t.Fatalf("extend a lease on shard 2: %+v", r)
		}
		if res := b.ackBatch(t, "", ackItemOf(m, "completed")); !res[0].Success {
			t.Fatalf("ack after the extension: %+v", res[0])
		}
	})

	t.Run("namespace pop across shards", func(t *testing.T) {
		for _, q := range []string{q1, q2} {
			b.configure(t, `{"queue":"`+q+`","namespace":"ns-across"}`)
			b.push(t, map[string]any{"queue": q, "payload": 1, "transactionId": "ns-" + q})
		}
		seen := map[string]bool{}
		deadline := time.Now().Add(10 * time.Second)
		for len(seen) < 2 && time.Now().Before(deadline) {
			p := b.pop(t, "/api/v1/pop?namespace=ns-across&batch=10&wait=false")
			if p == nil {
				continue
			}
			for _, m := range p.Messages {
				seen[m.TransactionID] = true
				if res := b.ackBatch(t, "", ackItemOf(m, "completed")); !res[0].Success {
					t.Fatalf("ack of a namespace pop: %+v", res[0])
				}
			}
		}
		if !seen["ns-"+q1] || !seen["ns-"+q2] {
			t.Fatalf("namespace pops delivered %v, want both shards' messages", seen)
		}
	})

	t.Run("configure co-locates a namespace", func(t *testing.T) {
		b.configure(t, `{"queue":"coloc-a","namespace":"ns-new"}`)
		b.configure(t, `{"queue":"coloc-b","namespace":"ns-new"}`)
		if a, c := shards.shardOf(t, "coloc-a"), shards.shardOf(t, "coloc-b"); a != c {
			t.Fatalf("queues of one namespace on shards %d and %d", a, c)
		}
	})

	t.Run("explicit placement", func(t *testing.T) {
		b.configure(t, `{"queue":"explicit-q","shard":2}`)
		if n := shards.shardOf(t, "explicit-q"); n != 2 {
			t.Fatalf("configure with shard 2 placed the queue on shard %d", n)
		}
		b.configure(t, `{"queue":"explicit-q","options":{"shard":2,"leaseTime":60}}`) // where it is: fine
		for _, tt := range []struct {
			body string
			code int
		}{
			{`{"queue":"explicit-q","shard":1}`, http.StatusConflict}, // moving is not a configure
			{`{"queue":"explicit-other","shard":3}`, http.StatusBadRequest},
			{`{"queue":"explicit-other","shard":"two"}`, http.StatusBadRequest},
		} {
			if code, raw := b.postBad(t, "/api/v1/configure", tt.body); code != tt.code || !strings.Contains(string(raw), "shard") {
				t.Errorf("configure %s: %d %s, want %d naming the shard", tt.body, code, raw, tt.code)
			}
		}
	})

	t.Run("transaction across shards", func(t *testing.T) {
		b.push(t, map[string]any{"queue": q1, "payload": 1, "transactionId": "txn-in"})
		in := b.popOne(t, q1)
		code, r := b.txn(t, map[string]any{"operations": []any{
			map[string]any{"type": "ack", "transactionId": "txn-in", "partitionId": in.PartitionID, "leaseId": in.LeaseID},
			map[string]any{"type": "push", "queue": q2, "payload": map[string]any{"moved": true}, "transactionId": "txn-out"},
		}})
		if code != http.StatusOK || !r.Success {
			t.Fatalf("transaction across shards: %d %+v", code, r)
		}
		if p := b.pop(t, "/api/v1/pop/queue/"+q1+"?batch=1"); p != nil {
			t.Fatalf("the transaction's ack on shard 1 did not hold: %+v", p)
		}
		if out := b.popOne(t, q2); out.TransactionID != "txn-out" {
			t.Fatalf("the transaction's push on shard 2: %+v", out)
		}

		// An unknown message on shard 2 rolls back the push on shard 1 too.
		before := len(pgtest.StoredMessages(t, shards.urls[1], q1))
		code, r = b.txn(t, map[string]any{"operations": []any{
			map[string]any{"type": "push", "queue": q1, "payload": 1, "transactionId": "txn-rolled-back"},
			map[string]any{"type": "ack", "transactionId": "never-pushed", "partitionId": firstPartition(t, b, q2)},
		}})
		if code != http.StatusOK || r.Success || r.Reason != "ack_rejected" {
			t.Fatalf("rollback across shards: %d %+v", code, r)
		}
		if after := len(pgtest.StoredMessages(t, shards.urls[1], q1)); after != before {
			t.Fatalf("a rolled-back transaction stored %d messages on shard 1", after-before)
		}
	})

	// The same shards in another order: the broker must refuse them (acks would go to
	// the wrong database).
	reordered := []string{shards.urls[0], shards.urls[2], shards.urls[1]}
	if _, err := launchBroker(t, shards.urls[0], shards.env(nil, reordered...), nil); err == nil ||
		!strings.Contains(err.Error(), "was the list of shards reordered?") {
		t.Fatalf("a broker on reordered shards started (err %v)", err)
	}
	// A second broker in order finds every queue where the first placed it.
	b2 := startBrokerOn(t, shards.urls[0], shards.env(nil))
	b2.push(t, map[string]any{"queue": q2, "payload": 1, "transactionId": "second-broker"})
	if got := shards.holders(t, q2); !slices.Equal(got, []int{2}) {
		t.Fatalf("a second broker stored %s on shards %v", q2, got)
	}
}

// firstPartition is the id of queue's partition Default, read from a pop under a group
// of its own (which leaves the queue-mode group's cursor alone).
func firstPartition(t *testing.T, b *broker, queue string) string {
	t.Helper()
	p := b.pop(t, "/api/v1/pop/queue/"+queue+"?batch=1&consumerGroup=peek&subscriptionMode=all&autoAck=true")
	if p == nil || len(p.Messages) == 0 {
		t.Fatalf("queue %s has no message to name its partition", queue)
	}
	return p.Messages[0].PartitionID
}

// TestShardsAdded: a database an unsharded broker used becomes shard 0 as it is (its
// queues stay there, recorded in the catalogue at the first sharded start), and a shard
// appended to the list takes new queues (QUEEN_SHARDS_OPEN naming only it) while the old
// ones stay where they were.
func TestShardsAdded(t *testing.T) {
	t.Parallel()
	shards := newShardSet(t)
	old := startBrokerOn(t, shards.urls[0], nil) // QUEEN_PG_URL: no shards yet
	var before []string
	for i := range 6 {
		q := fmt.Sprintf("before-%d", i)
		old.push(t, map[string]any{"queue": q, "payload": i, "transactionId": q + "-0"})
		before = append(before, q)
	}
	if err := old.stop(); err != nil {
		t.Fatal(err)
	}

	b := startBrokerOn(t, shards.urls[0], shards.env(map[string]string{"QUEEN_SHARDS_OPEN": "1"}, shards.urls[:2]...))
	for _, q := range before {
		if n := shards.shardOf(t, q); n != 0 {
			t.Fatalf("queue %s of the unsharded database placed on shard %d", q, n)
		}
		b.push(t, map[string]any{"queue": q, "payload": 1, "transactionId": q + "-1"})
		if got := shards.holdersAmong(t, q, 2); !slices.Equal(got, []int{0}) {
			t.Fatalf("queue %s stored on shards %v after sharding, want [0]", q, got)
		}
		if p := b.pop(t, "/api/v1/pop/queue/"+q+"?batch=10"); p == nil || len(p.Messages) != 2 {
			t.Fatalf("pop %s after sharding: %+v, want both messages", q, p)
		}
	}
	b.push(t, map[string]any{"queue": "after-1", "payload": 1})
	if n := shards.shardOf(t, "after-1"); n != 1 {
		t.Fatalf("a new queue with QUEEN_SHARDS_OPEN=1 placed on shard %d", n)
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}

	// A third shard appended, open alone: new queues go there, old ones stay.
	b3 := startBrokerOn(t, shards.urls[0], shards.env(map[string]string{"QUEEN_SHARDS_OPEN": "2"}))
	b3.push(t, map[string]any{"queue": "after-2", "payload": 1}, map[string]any{"queue": "after-1", "payload": 2})
	if n := shards.shardOf(t, "after-2"); n != 2 {
		t.Fatalf("a new queue with QUEEN_SHARDS_OPEN=2 placed on shard %d", n)
	}
	if got := shards.holders(t, "after-1"); !slices.Equal(got, []int{1}) {
		t.Fatalf("queue after-1 stored on shards %v once a third shard was added, want [1]", got)
	}
}
