package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"
)

// dedupItem is one pushed item of a scenario step; queue "" means the scenario's queue.
type dedupItem struct {
	queue, partition, txn string
}

// dedupWant is the expected result of one item.
type dedupWant struct {
	status string
	offset int64
	// idOf names the earlier result (step, index) whose message_id must be reported; nil
	// means a fresh id, distinct from every earlier one.
	idOf *[2]int
}

func queuedAt(off int64) dedupWant { return dedupWant{status: "queued", offset: off} }

func duplicateOf(off int64, step, index int) dedupWant {
	return dedupWant{status: "duplicate", offset: off, idOf: &[2]int{step, index}}
}

// dedupStep prepares the scenario's queue as a client can, then pushes items in one body.
type dedupStep struct {
	// configure, when set, is applied to the scenario's queue first (/api/v1/configure).
	configure map[string]any
	// expire repeats the push until its first item is no longer a duplicate: the dedup
	// window passed. A duplicate writes nothing, so the repeats change nothing.
	expire bool
	// restart pushes through a second broker on the same database: its dedup cache is
	// empty, so it finds the history in PostgreSQL.
	restart bool
	items   []dedupItem
	want    []dedupWant
}

const zeroUUID = "00000000-0000-0000-0000-000000000000"

// TestDedup exercises the deduplication rules (docs/api.md §5.1) through HTTP against
// PostgreSQL: one broker, one queue per scenario, scenarios in parallel. (A repeat of a
// message whose segment was removed answers the zero UUID: no client can remove a
// segment, so that rule is tested on the store, adapters/postgres.)
func TestDedup(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)

	P := func(partition, txn string) dedupItem { return dedupItem{partition: partition, txn: txn} }
	T := func(txn string) dedupItem { return dedupItem{partition: "Default", txn: txn} }
	window := func(s int) map[string]any { return map[string]any{"dedupWindowSeconds": s} }

	tests := []struct {
		name  string
		queue string
		steps []dedupStep
	}{
		{
			name:  "partition scope in one body",
			queue: "dd-scope-body",
			steps: []dedupStep{
				{items: []dedupItem{P("p1", "T"), P("p2", "T")}, want: []dedupWant{queuedAt(0), queuedAt(0)}},
			},
		},
		{
			name:  "partition scope across bodies",
			queue: "dd-scope-bodies",
			steps: []dedupStep{
				{items: []dedupItem{P("p1", "T")}, want: []dedupWant{queuedAt(0)}},
				{items: []dedupItem{P("p2", "T")}, want: []dedupWant{queuedAt(0)}},
				{items: []dedupItem{P("p1", "T")}, want: []dedupWant{duplicateOf(0, 0, 0)}},
				{items: []dedupItem{P("p2", "T")}, want: []dedupWant{duplicateOf(0, 1, 0)}},
			},
		},
		{
			name:  "queue scope",
			queue: "dd-scope-queue",
			steps: []dedupStep{
				{
					items: []dedupItem{T("T"), {queue: "dd-scope-queue-b", partition: "Default", txn: "T"}},
					want:  []dedupWant{queuedAt(0), queuedAt(0)},
				},
			},
		},
		{
			name:  "repeat in a later body with the default window",
			queue: "dd-default-window",
			steps: []dedupStep{
				{items: []dedupItem{T("T")}, want: []dedupWant{queuedAt(0)}},
				{items: []dedupItem{T("T")}, want: []dedupWant{duplicateOf(0, 0, 0)}},
				{items: []dedupItem{T("U"), T("T")}, want: []dedupWant{queuedAt(1), duplicateOf(0, 0, 0)}},
				// History this broker's cache never saw is still inside the default window.
				{restart: true, items: []dedupItem{T("T"), T("U")}, want: []dedupWant{duplicateOf(0, 0, 0), duplicateOf(1, 2, 0)}},
			},
		},
		{
			name:  "window configured after the first push, then expired",
			queue: "dd-window-update",
			steps: []dedupStep{
				{items: []dedupItem{T("T")}, want: []dedupWant{queuedAt(0)}},
				{configure: window(2), items: []dedupItem{T("T")}, want: []dedupWant{duplicateOf(0, 0, 0)}},
				// History older than the window is not probed: a new message at the next offset.
				{expire: true, items: []dedupItem{T("T")}, want: []dedupWant{queuedAt(1)}},
				// The repeat now names the new message, the only one inside the window.
				{items: []dedupItem{T("T")}, want: []dedupWant{duplicateOf(1, 2, 0)}},
			},
		},
		{
			name:  "window configured before the first push, then expired",
			queue: "dd-window-insert",
			steps: []dedupStep{
				{configure: window(2), items: []dedupItem{T("T"), T("U")}, want: []dedupWant{queuedAt(0), queuedAt(1)}},
				{items: []dedupItem{T("U")}, want: []dedupWant{duplicateOf(1, 0, 1)}},
				// Past the 2 s window (and inside the default one).
				{expire: true, items: []dedupItem{T("U"), T("T")}, want: []dedupWant{queuedAt(2), queuedAt(3)}},
			},
		},
		{
			name:  "window 0 disables dedup",
			queue: "dd-window-zero",
			steps: []dedupStep{
				{configure: window(0), items: []dedupItem{T("T")}, want: []dedupWant{queuedAt(0)}},
				{items: []dedupItem{T("T")}, want: []dedupWant{queuedAt(1)}},
				{items: []dedupItem{T("U"), T("T")}, want: []dedupWant{queuedAt(2), queuedAt(3)}},
			},
		},
		{
			name:  "first wins in one body",
			queue: "dd-first-wins",
			steps: []dedupStep{
				{items: []dedupItem{T("T"), T("T")}, want: []dedupWant{queuedAt(0), duplicateOf(0, 0, 0)}},
				{
					items: []dedupItem{T("V"), T("W"), T("V"), T("W"), T("V")},
					want:  []dedupWant{queuedAt(1), queuedAt(2), duplicateOf(1, 1, 0), duplicateOf(2, 1, 1), duplicateOf(1, 1, 0)},
				},
			},
		},
		{
			name:  "followers of a leader that is itself a duplicate",
			queue: "dd-follower",
			steps: []dedupStep{
				{items: []dedupItem{T("T")}, want: []dedupWant{queuedAt(0)}},
				{items: []dedupItem{T("T"), T("T")}, want: []dedupWant{duplicateOf(0, 0, 0), duplicateOf(0, 0, 0)}},
				{
					items: []dedupItem{T("U"), T("T"), T("U"), T("T")},
					want:  []dedupWant{queuedAt(1), duplicateOf(0, 0, 0), duplicateOf(1, 2, 0), duplicateOf(0, 0, 0)},
				},
			},
		},
		{
			name:  "one body mixing duplicates and new items",
			queue: "dd-mixed",
			steps: []dedupStep{
				{items: []dedupItem{T("A"), T("B")}, want: []dedupWant{queuedAt(0), queuedAt(1)}},
				{
					items: []dedupItem{T("C"), T("A"), T("D"), T("B"), T("E")},
					want:  []dedupWant{queuedAt(2), duplicateOf(0, 0, 0), queuedAt(3), duplicateOf(1, 0, 1), queuedAt(4)},
				},
				{
					items: []dedupItem{T("F"), T("A"), T("F"), T("G"), T("E")},
					want:  []dedupWant{queuedAt(5), duplicateOf(0, 0, 0), duplicateOf(5, 2, 0), queuedAt(6), duplicateOf(4, 1, 4)},
				},
			},
		},
		{
			name:  "a duplicate in one partition does not hold back another",
			queue: "dd-multi-partition",
			steps: []dedupStep{
				{items: []dedupItem{P("p1", "T")}, want: []dedupWant{queuedAt(0)}},
				{
					items: []dedupItem{P("p1", "T"), P("p2", "T"), P("p1", "U"), P("p2", "U")},
					want:  []dedupWant{duplicateOf(0, 0, 0), queuedAt(0), queuedAt(1), queuedAt(1)},
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			type loc struct{ queue, partition string }
			var got [][]pushResult
			seen := map[string]bool{zeroUUID: true}
			queued := map[loc]map[int64]pushResult{}
			for s, st := range tt.steps {
				if st.configure != nil {
					b.setOptions(t, tt.queue, st.configure)
				}
				target := b
				if st.restart {
					target = startBrokerOn(t, b.DB, nil)
				}
				items := make([]map[string]any, len(st.items))
				for i, it := range st.items {
					q := it.queue
					if q == "" {
						q = tt.queue
					}
					items[i] = map[string]any{"queue": q, "partition": it.partition, "transactionId": it.txn,
						"payload": map[string]any{"step": s, "item": i}}
				}
				res := target.push(t, items...)
				if st.expire {
					eventually(t, 10*time.Second, "the dedup window to pass", func() bool {
						res = target.push(t, items...)
						return res[0].Status != "duplicate"
					})
				}
				got = append(got, res)
				if len(res) != len(st.want) {
					t.Fatalf("step %d: %d results, want %d", s, len(res), len(st.want))
				}
				for i, r := range res {
					w := st.want[i]
					it := items[i]
					if r.Index != i || r.TransactionID != st.items[i].txn || r.QueueName != it["queue"] {
						t.Errorf("step %d item %d: index/transaction_id/queueName = %d/%q/%q, want %d/%q/%q",
							s, i, r.Index, r.TransactionID, r.QueueName, i, st.items[i].txn, it["queue"])
					}
					if r.Status != w.status {
						t.Errorf("step %d item %d (%s): status %q, want %q", s, i, st.items[i].txn, r.Status, w.status)
					}
					if r.Offset == nil {
						t.Errorf("step %d item %d: no offset", s, i)
					} else if *r.Offset != w.offset {
						t.Errorf("step %d item %d (%s): offset %d, want %d", s, i, st.items[i].txn, *r.Offset, w.offset)
					}
					switch {
					case w.idOf != nil:
						ref := got[w.idOf[0]][w.idOf[1]].MessageID
						if r.MessageID != ref {
							t.Errorf("step %d item %d: message_id %s, want %s (step %d item %d)", s, i, r.MessageID, ref, w.idOf[0], w.idOf[1])
						}
					default:
						if !uuidV7.MatchString(r.MessageID) {
							t.Errorf("step %d item %d: message_id %q is not a UUIDv7", s, i, r.MessageID)
						}
						if seen[r.MessageID] {
							t.Errorf("step %d item %d: message_id %s was reported before, want a fresh one", s, i, r.MessageID)
						}
						seen[r.MessageID] = true
					}
					if r.Status == "queued" && r.Offset != nil {
						l := loc{r.QueueName, st.items[i].partition}
						if queued[l] == nil {
							queued[l] = map[int64]pushResult{}
						}
						if prev, dup := queued[l][*r.Offset]; dup {
							t.Errorf("step %d item %d: offset %d of %v already given to %s", s, i, *r.Offset, l, prev.TransactionID)
						}
						queued[l][*r.Offset] = r
					}
				}
			}
			// What a consumer reads is exactly the queued results: duplicates wrote nothing.
			read := map[string]map[string][]popMsg{}
			for l := range queued {
				if read[l.queue] == nil {
					read[l.queue] = b.readBack(t, l.queue)
				}
			}
			for q, parts := range read {
				for part := range parts {
					if _, ok := queued[loc{q, part}]; !ok {
						t.Errorf("%s/%s: messages delivered, none reported queued", q, part)
					}
				}
			}
			for l, want := range queued {
				msgs := read[l.queue][l.partition]
				if len(msgs) != len(want) {
					t.Errorf("%v: %d messages delivered, %d reported queued", l, len(msgs), len(want))
				}
				for off, m := range msgs {
					r, ok := want[int64(off)]
					if !ok {
						t.Errorf("%v: message %q at offset %d was never reported queued", l, m.TransactionID, off)
						continue
					}
					if m.ID != r.MessageID || m.TransactionID != r.TransactionID {
						t.Errorf("%v@%d: delivered id/txn %s/%q, reported %s/%q", l, off, m.ID, m.TransactionID, r.MessageID, r.TransactionID)
					}
				}
			}
		})
	}
}

// concurrentSent is one request of TestPushConcurrentOrdering and its answer.
type concurrentSent struct {
	g, r    int
	parts   []int    // partition index per item
	txns    []string // transaction id per item
	results []pushResult
}

// pushFrom posts a push body from any goroutine and strictly decodes a 201 answer.
func (b *broker) pushFrom(ctx context.Context, body []byte) ([]pushResult, error) {
	resp, raw, err := b.request(ctx, http.MethodPost, "/api/v1/push", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusCreated {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, raw)
	}
	var out []pushResult
	if err := decodeStrict(raw, &out); err != nil {
		return nil, fmt.Errorf("decode %s: %w", raw, err)
	}
	return out, nil
}

// TestPushConcurrentOrdering: many producers over shared partitions. Per partition the
// offsets are gapless and unique, a request's items for one partition are consecutive in
// body order, a consumer reads each message at the offset the HTTP answers reported, and
// each producer's pushes appear in every partition in the order it sent them.
func TestPushConcurrentOrdering(t *testing.T) {
	t.Parallel()
	const (
		goroutines = 32
		requests   = 25
		partitions = 10
		queue      = "concurrent-ordering"
	)
	b := startBroker(t, nil)
	partName := func(p int) string { return fmt.Sprintf("p%d", p) }

	sent := make([][]concurrentSent, goroutines)
	errs := make(chan error, goroutines)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 42))
			for r := range requests {
				n := 1 + rng.IntN(5)
				req := concurrentSent{g: g, r: r}
				items := make([]map[string]any, n)
				for i := range n {
					p := rng.IntN(partitions)
					txn := fmt.Sprintf("g%02d-r%02d-i%d", g, r, i)
					req.parts = append(req.parts, p)
					req.txns = append(req.txns, txn)
					items[i] = map[string]any{"queue": queue, "partition": partName(p), "transactionId": txn,
						"payload": map[string]any{"g": g, "r": r, "i": i}}
				}
				body, _ := json.Marshal(map[string]any{"items": items})
				res, err := b.pushFrom(context.Background(), body)
				if err != nil {
					errs <- fmt.Errorf("goroutine %d request %d: %w", g, r, err)
					return
				}
				req.results = res
				sent[g] = append(sent[g], req)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d requests in %v", goroutines*requests, time.Since(start))

	// owner of each (partition, offset) from the HTTP answers
	type owner struct {
		txn, id string
	}
	byPart := make([]map[int64]owner, partitions)
	for p := range byPart {
		byPart[p] = map[int64]owner{}
	}
	for _, reqs := range sent {
		for _, req := range reqs {
			if len(req.results) != len(req.txns) {
				t.Fatalf("g%d r%d: %d results for %d items", req.g, req.r, len(req.results), len(req.txns))
			}
			last := map[int]int64{} // partition -> previous offset in this request
			for i, res := range req.results {
				p := req.parts[i]
				if res.Index != i || res.Status != "queued" || res.TransactionID != req.txns[i] || res.QueueName != queue || res.Offset == nil {
					t.Fatalf("g%d r%d item %d: unexpected result %+v", req.g, req.r, i, res)
				}
				off := *res.Offset
				if prev, ok := last[p]; ok && off != prev+1 {
					t.Errorf("g%d r%d item %d: offset %d in %s, the request's previous item there got %d (want consecutive)",
						req.g, req.r, i, off, partName(p), prev)
				}
				last[p] = off
				if o, dup := byPart[p][off]; dup {
					t.Errorf("%s offset %d reported for both %s and %s", partName(p), off, o.txn, res.TransactionID)
				}
				byPart[p][off] = owner{txn: res.TransactionID, id: res.MessageID}
			}
		}
	}

	read := b.readBack(t, queue)
	total := 0
	for p := range partitions {
		n := int64(len(byPart[p]))
		total += int(n)
		for off := range n {
			if _, ok := byPart[p][off]; !ok {
				t.Errorf("%s: offsets are not 0..%d: %d missing", partName(p), n-1, off)
			}
		}
		msgs := read[partName(p)]
		if int64(len(msgs)) != n {
			t.Errorf("%s: %d messages delivered, %d queued results", partName(p), len(msgs), n)
		}
		lastOf := map[int][2]int{} // goroutine -> (request, item) of its previous message here
		for k, m := range msgs {
			off := int64(k)
			o, ok := byPart[p][off]
			if !ok || o.txn != m.TransactionID || o.id != m.ID {
				t.Errorf("%s@%d: delivered %q (%s), the HTTP answers put %q (%s) there",
					partName(p), off, m.TransactionID, m.ID, o.txn, o.id)
			}
			var g, r, i int
			if _, err := fmt.Sscanf(m.TransactionID, "g%02d-r%02d-i%d", &g, &r, &i); err != nil {
				t.Errorf("%s@%d: unexpected transaction id %q", partName(p), off, m.TransactionID)
				continue
			}
			if prev, ok := lastOf[g]; ok && (r < prev[0] || (r == prev[0] && i <= prev[1])) {
				t.Errorf("%s@%d: goroutine %d's request %d item %d is delivered after its request %d item %d",
					partName(p), off, g, r, i, prev[0], prev[1])
			}
			lastOf[g] = [2]int{r, i}
		}
	}
	want := 0
	for _, reqs := range sent {
		for _, req := range reqs {
			want += len(req.txns)
		}
	}
	if total != want {
		t.Errorf("%d queued offsets, %d items sent", total, want)
	}
	parts := make([]int, partitions)
	for p := range partitions {
		parts[p] = len(byPart[p])
	}
	sort.Ints(parts)
	t.Logf("%d items over %d partitions (smallest %d, largest %d) in %.0f segments, %.0f commits",
		want, partitions, parts[0], parts[partitions-1], b.metric(t, "queen_fusion_segments_total"),
		b.metric(t, "queen_fusion_commits_total"))
}
