package queen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/core/segment"
)

// pushLogDB reads the broker's tables directly, to check what a push really stored.
type pushLogDB struct {
	pool  *pgxpool.Pool
	codec *segment.Codec
}

// storedFrame is one frame read back from queen.log_segments, at its absolute offset.
type storedFrame struct {
	Offset int64
	segment.Frame
}

func openPushLogDB(t testing.TB, a *testApp) *pushLogDB {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), a.DBURL)
	if err != nil {
		t.Fatalf("connect to the test database: %v", err)
	}
	t.Cleanup(pool.Close)
	codec, err := segment.NewCodec(3)
	if err != nil {
		t.Fatal(err)
	}
	return &pushLogDB{pool: pool, codec: codec}
}

func (d *pushLogDB) exec(t testing.TB, sql string, args ...any) int64 {
	t.Helper()
	tag, err := d.pool.Exec(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return tag.RowsAffected()
}

func (d *pushLogDB) count(t testing.TB, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := d.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// lastOffset is the partition's allocator (-1 when empty), or -2 when the partition does not exist.
func (d *pushLogDB) lastOffset(t testing.TB, queue, partition string) int64 {
	t.Helper()
	var last int64 = -2
	err := d.pool.QueryRow(context.Background(),
		`SELECT coalesce((SELECT p.last_offset FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
		   WHERE q.name = $1 AND p.name = $2), -2)`, queue, partition).Scan(&last)
	if err != nil {
		t.Fatalf("last_offset of %s/%s: %v", queue, partition, err)
	}
	return last
}

// frames reads every segment of a partition back, in offset order, decoding it with the
// segment codec. It also checks the storage invariants: segments are contiguous (each
// starts where the previous one ended), every segment's hash sidecar row exists with
// xxh3-128 of each frame's transaction id in frame order, and the partition's allocator
// equals the last stored offset.
func (d *pushLogDB) frames(t testing.TB, queue, partition string) []storedFrame {
	t.Helper()
	rows, err := d.pool.Query(context.Background(), `
		SELECT s.base_offset, s.msg_count, s.blob, t.base_offset, t.hashes
		  FROM queen.log_segments s
		  JOIN queen.log_partitions p ON p.id = s.partition_id
		  JOIN queen.queues q ON q.id = p.queue_id
		  LEFT JOIN queen.log_txns t
		    ON t.partition_id = s.partition_id AND t.end_offset = s.base_offset + s.msg_count - 1
		 WHERE q.name = $1 AND p.name = $2
		 ORDER BY s.base_offset`, queue, partition)
	if err != nil {
		t.Fatalf("read segments of %s/%s: %v", queue, partition, err)
	}
	defer rows.Close()
	var out []storedFrame
	next := int64(-1)
	for rows.Next() {
		var (
			base     int64
			count    int32
			blob     []byte
			txnBase  *int64
			txHashes []byte
		)
		if err := rows.Scan(&base, &count, &blob, &txnBase, &txHashes); err != nil {
			t.Fatal(err)
		}
		fs, err := d.codec.Decode(blob)
		if err != nil {
			t.Fatalf("segment %s/%s@%d does not decode: %v", queue, partition, base, err)
		}
		if len(fs) != int(count) {
			t.Errorf("segment %s/%s@%d: msg_count %d but %d frames", queue, partition, base, count, len(fs))
		}
		if next >= 0 && base != next {
			t.Errorf("segment %s/%s@%d: previous segment ended at %d (gap or overlap)", queue, partition, base, next)
		}
		next = base + int64(len(fs))
		var want []byte
		for _, f := range fs {
			h := dedup.Hash(f.TransactionID)
			want = append(want, h[:]...)
		}
		switch {
		case txnBase == nil:
			t.Errorf("segment %s/%s@%d has no log_txns row", queue, partition, base)
		case *txnBase != base:
			t.Errorf("segment %s/%s@%d: log_txns row starts at %d", queue, partition, base, *txnBase)
		case !bytes.Equal(txHashes, want):
			t.Errorf("segment %s/%s@%d: log_txns hashes do not match the frames' transaction ids", queue, partition, base)
		}
		for k, f := range fs {
			out = append(out, storedFrame{Offset: base + int64(k), Frame: f})
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) > 0 {
		if last := d.lastOffset(t, queue, partition); last != out[len(out)-1].Offset {
			t.Errorf("%s/%s: last_offset %d, last stored frame at %d", queue, partition, last, out[len(out)-1].Offset)
		}
	}
	return out
}

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
	zero bool // the all-zero "original unknown" id
}

func queuedAt(off int64) dedupWant { return dedupWant{status: "queued", offset: off} }

func duplicateOf(off int64, step, index int) dedupWant {
	return dedupWant{status: "duplicate", offset: off, idOf: &[2]int{step, index}}
}

func duplicateGone(off int64) dedupWant {
	return dedupWant{status: "duplicate", offset: off, zero: true}
}

// dedupStep runs sql (with $1 = the scenario's queue), then pushes items in one body.
type dedupStep struct {
	sql   string
	items []dedupItem
	want  []dedupWant
}

const (
	sqlPartitionsOfQueue = `SELECT p.id FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1`
	sqlAgeHour           = `UPDATE queen.log_txns SET created_at = created_at - interval '1 hour' WHERE partition_id IN (` + sqlPartitionsOfQueue + `)`
	sqlAgeMinute         = `UPDATE queen.log_txns SET created_at = created_at - interval '1 minute' WHERE partition_id IN (` + sqlPartitionsOfQueue + `)`
)

var zeroUUID = uuid.UUID{}.String()

// TestDedup exercises every deduplication rule of seed 002 through HTTP against
// PostgreSQL: one broker, one queue per scenario, scenarios in parallel.
func TestDedup(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	db := openPushLogDB(t, a)

	P := func(partition, txn string) dedupItem { return dedupItem{partition: partition, txn: txn} }
	T := func(txn string) dedupItem { return dedupItem{partition: "Default", txn: txn} }

	tests := []struct {
		name  string
		queue string
		setup string // run once before the first step ($1 = queue)
		steps []dedupStep
		// deleted is how many stored frames the scenario removed on purpose.
		deleted int
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
				// 1 minute old history is well inside the default 3600 s window.
				{sql: sqlAgeMinute, items: []dedupItem{T("T"), T("U")}, want: []dedupWant{duplicateOf(0, 0, 0), duplicateOf(1, 2, 0)}},
			},
		},
		{
			name:  "window configured after the first push, then expired",
			queue: "dd-window-update",
			steps: []dedupStep{
				{items: []dedupItem{T("T")}, want: []dedupWant{queuedAt(0)}},
				{
					sql:   `UPDATE queen.queues SET dedup_window_seconds = 2 WHERE name = $1`,
					items: []dedupItem{T("T")}, want: []dedupWant{duplicateOf(0, 0, 0)},
				},
				// History older than the window is not probed: a new message at the next offset.
				{sql: sqlAgeHour, items: []dedupItem{T("T")}, want: []dedupWant{queuedAt(1)}},
				// The repeat now names the new message, the only one inside the window.
				{items: []dedupItem{T("T")}, want: []dedupWant{duplicateOf(1, 2, 0)}},
			},
		},
		{
			name:  "window configured before the first push, then expired",
			queue: "dd-window-insert",
			setup: `INSERT INTO queen.queues (name, dedup_window_seconds) VALUES ($1, 30)`,
			steps: []dedupStep{
				{items: []dedupItem{T("T"), T("U")}, want: []dedupWant{queuedAt(0), queuedAt(1)}},
				{items: []dedupItem{T("U")}, want: []dedupWant{duplicateOf(1, 0, 1)}},
				// 1 minute is past a 30 s window (and inside the default one).
				{sql: sqlAgeMinute, items: []dedupItem{T("U"), T("T")}, want: []dedupWant{queuedAt(2), queuedAt(3)}},
			},
		},
		{
			name:  "window 0 disables dedup",
			queue: "dd-window-zero",
			setup: `INSERT INTO queen.queues (name, dedup_window_seconds) VALUES ($1, 0)`,
			steps: []dedupStep{
				{items: []dedupItem{T("T")}, want: []dedupWant{queuedAt(0)}},
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
			name:  "original segment removed: zero UUID",
			queue: "dd-zero-uuid",
			steps: []dedupStep{
				{items: []dedupItem{T("T"), T("U")}, want: []dedupWant{queuedAt(0), queuedAt(1)}},
				{items: []dedupItem{T("V")}, want: []dedupWant{queuedAt(2)}},
				{
					sql:   `DELETE FROM queen.log_segments WHERE base_offset = 0 AND partition_id IN (` + sqlPartitionsOfQueue + `)`,
					items: []dedupItem{T("T")}, want: []dedupWant{duplicateGone(0)},
				},
				{
					items: []dedupItem{T("U"), T("W"), T("V"), T("T")},
					want:  []dedupWant{duplicateGone(1), queuedAt(3), duplicateOf(2, 1, 0), duplicateGone(0)},
				},
			},
			deleted: 2,
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
			if tt.setup != "" {
				db.exec(t, tt.setup, tt.queue)
			}
			type loc struct{ queue, partition string }
			var got [][]pushResult
			seen := map[string]bool{zeroUUID: true}
			queued := map[loc]map[int64]pushResult{}
			for s, st := range tt.steps {
				if st.sql != "" {
					db.exec(t, st.sql, tt.queue)
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
				res := a.push(t, items...)
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
					case w.zero:
						if r.MessageID != zeroUUID {
							t.Errorf("step %d item %d: message_id %s, want the zero UUID", s, i, r.MessageID)
						}
					case w.idOf != nil:
						ref := got[w.idOf[0]][w.idOf[1]].MessageID
						if r.MessageID != ref {
							t.Errorf("step %d item %d: message_id %s, want %s (step %d item %d)", s, i, r.MessageID, ref, w.idOf[0], w.idOf[1])
						}
					default:
						id, err := uuid.Parse(r.MessageID)
						if err != nil || id.Version() != 7 {
							t.Errorf("step %d item %d: message_id %q is not a UUIDv7 (%v)", s, i, r.MessageID, err)
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
			// What is stored is exactly the queued results: duplicates wrote nothing.
			stored := 0
			for l, want := range queued {
				for _, f := range db.frames(t, l.queue, l.partition) {
					stored++
					r, ok := want[f.Offset]
					if !ok {
						t.Errorf("%v: frame %q at offset %d was never reported queued", l, f.TransactionID, f.Offset)
						continue
					}
					if uuid.UUID(f.ID).String() != r.MessageID || f.TransactionID != r.TransactionID {
						t.Errorf("%v@%d: stored id/txn %s/%q, reported %s/%q", l, f.Offset, uuid.UUID(f.ID), f.TransactionID, r.MessageID, r.TransactionID)
					}
				}
			}
			total := 0
			for _, m := range queued {
				total += len(m)
			}
			if stored != total-tt.deleted {
				t.Errorf("%d frames stored, want %d (%d queued results, %d deleted)", stored, total-tt.deleted, total, tt.deleted)
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

// postPushJSON posts a push body and strictly decodes a 201 answer (safe off the test goroutine).
func postPushJSON(client *http.Client, url string, body []byte) ([]pushResult, error) {
	resp, err := client.Post(url+"/api/v1/push", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusCreated {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	var out []pushResult
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("decode %s: %w", b, err)
	}
	return out, nil
}

// TestPushConcurrentOrdering: many producers over shared partitions. Per partition the
// offsets are gapless and unique, a request's items for one partition are consecutive in
// body order, the stored frames sit at the offsets the HTTP answers reported, and each
// producer's pushes appear in every partition in the order it sent them.
func TestPushConcurrentOrdering(t *testing.T) {
	t.Parallel()
	const (
		goroutines = 32
		requests   = 25
		partitions = 10
		queue      = "concurrent-ordering"
	)
	a := startApp(t, nil)
	db := openPushLogDB(t, a)
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: goroutines}}
	defer client.CloseIdleConnections()
	partName := func(p int) string { return fmt.Sprintf("p%d", p) }

	sent := make([][]concurrentSent, goroutines)
	errs := make(chan error, goroutines)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
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
				res, err := postPushJSON(client, a.URL, body)
				if err != nil {
					errs <- fmt.Errorf("goroutine %d request %d: %w", g, r, err)
					return
				}
				req.results = res
				sent[g] = append(sent[g], req)
			}
		}()
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

	total := 0
	for p := range partitions {
		n := int64(len(byPart[p]))
		total += int(n)
		for off := range n {
			if _, ok := byPart[p][off]; !ok {
				t.Errorf("%s: offsets are not 0..%d: %d missing", partName(p), n-1, off)
			}
		}
		frames := db.frames(t, queue, partName(p))
		if int64(len(frames)) != n {
			t.Errorf("%s: %d frames stored, %d queued results", partName(p), len(frames), n)
		}
		if len(frames) > 0 && frames[0].Offset != 0 {
			t.Errorf("%s: first stored offset %d, want 0", partName(p), frames[0].Offset)
		}
		lastOf := map[int][2]int{} // goroutine -> (request, item) of its previous frame here
		for _, f := range frames {
			o, ok := byPart[p][f.Offset]
			if !ok || o.txn != f.TransactionID || o.id != uuid.UUID(f.ID).String() {
				t.Errorf("%s@%d: stored %q (%s), the HTTP answers put %q (%s) there",
					partName(p), f.Offset, f.TransactionID, uuid.UUID(f.ID), o.txn, o.id)
			}
			var g, r, i int
			if _, err := fmt.Sscanf(f.TransactionID, "g%02d-r%02d-i%d", &g, &r, &i); err != nil {
				t.Errorf("%s@%d: unexpected transaction id %q", partName(p), f.Offset, f.TransactionID)
				continue
			}
			if prev, ok := lastOf[g]; ok && (r < prev[0] || (r == prev[0] && i <= prev[1])) {
				t.Errorf("%s@%d: goroutine %d's request %d item %d is stored after its request %d item %d",
					partName(p), f.Offset, g, r, i, prev[0], prev[1])
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
	st := a.Batcher.Stats()
	t.Logf("%d items over %d partitions (smallest %d, largest %d) in %d segments, %d commits",
		want, partitions, parts[0], parts[partitions-1], db.count(t, `SELECT count(*) FROM queen.log_segments`), st.Commits)
}
