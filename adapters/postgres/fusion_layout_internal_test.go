package postgres

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

// Storage invariants of fused pushes, checked on the tables: what the root package's
// HTTP tests once read back directly (its pushLogDB helper), and what no client can see.

// fusedStore is a migrated store with the broker's push fusion in front of it.
type fusedStore struct {
	s     *Store
	codec *segment.Codec
	b     *fusion.Batcher
}

func newFusedStore(t *testing.T) *fusedStore {
	t.Helper()
	s := newStore(t, Options{PoolSize: 16})
	codec, err := segment.NewCodec(3)
	if err != nil {
		t.Fatal(err)
	}
	b := fusion.New(s, codec, fusion.Options{Logger: slog.New(slog.DiscardHandler)})
	b.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := b.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return &fusedStore{s: s, codec: codec, b: b}
}

// fusedItem is one pushed message.
type fusedItem struct{ partition, txn, payload string }

// push submits one request's items for queue as the push path does (one group per
// partition, frames in body order) and returns each item's verdict.
func (f *fusedStore) push(queue string, items ...fusedItem) []fusion.Result {
	var groups []*fusion.Group
	byPart := map[string]int{} // partition -> its group
	where := make([][2]int, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		gi, ok := byPart[it.partition]
		if !ok {
			gi = len(groups)
			byPart[it.partition] = gi
			groups = append(groups, &fusion.Group{Tenant: ports.DefaultTenant, Queue: queue, Partition: it.partition, Done: wg.Done})
		}
		g := groups[gi]
		where[i] = [2]int{gi, len(g.Frames)}
		var id [16]byte
		copy(id[:], fmt.Sprintf("%-16.16s", it.txn))
		g.Frames = append(g.Frames, segment.Frame{ID: id, TransactionID: it.txn, Payload: []byte(it.payload)})
		g.Hashes = append(g.Hashes, dedup.Hash(it.txn))
	}
	wg.Add(len(groups))
	f.b.Submit(groups...)
	wg.Wait()
	out := make([]fusion.Result, len(items))
	for i, w := range where {
		out[i] = groups[w[0]].Results[w[1]]
	}
	return out
}

// storedFrame is one frame read back from queen.log_segments, at its absolute offset.
type storedFrame struct {
	Offset int64
	segment.Frame
}

// frames reads every segment of a partition back, in offset order, and checks the
// storage invariants: segments are contiguous from the first retained offset, each
// decodes to msg_count frames, each has its hash sidecar row (keyed by its last offset)
// holding xxh3-128 of every frame's transaction id in frame order, and the partition's
// allocator equals the last stored offset.
func (f *fusedStore) frames(t *testing.T, queue, partition string) []storedFrame {
	t.Helper()
	ctx := context.Background()
	rows, err := f.s.pool.Query(ctx, `
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
		fs, err := f.codec.Decode(blob)
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
		for _, fr := range fs {
			h := dedup.Hash(fr.TransactionID)
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
		for k, fr := range fs {
			out = append(out, storedFrame{Offset: base + int64(k), Frame: fr})
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) > 0 {
		var last int64
		if err := f.s.pool.QueryRow(ctx, `SELECT p.last_offset FROM queen.log_partitions p
			JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1 AND p.name = $2`, queue, partition).Scan(&last); err != nil {
			t.Fatal(err)
		}
		if last != out[len(out)-1].Offset {
			t.Errorf("%s/%s: last_offset %d, last stored frame at %d", queue, partition, last, out[len(out)-1].Offset)
		}
	}
	return out
}

// TestFusedPushLayout: many concurrent requests over shared partitions, fused into
// bundles. Every frame is stored, byte for byte, at the offset its verdict reported;
// segments are contiguous, each with its hash sidecar; the allocator ends at the last
// frame.
func TestFusedPushLayout(t *testing.T) {
	t.Parallel()
	const (
		goroutines = 32
		requests   = 25
		partitions = 10
		queue      = "fused-layout"
	)
	f := newFusedStore(t)
	type verdict struct {
		item fusedItem
		res  fusion.Result
	}
	var mu sync.Mutex
	var all []verdict
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 42))
			for r := range requests {
				items := make([]fusedItem, 1+rng.IntN(5))
				for i := range items {
					// Payloads keep their exact bytes, insignificant whitespace included.
					items[i] = fusedItem{partition: fmt.Sprintf("p%d", rng.IntN(partitions)),
						txn: fmt.Sprintf("g%02d-r%02d-i%d", g, r, i), payload: fmt.Sprintf("{ \"g\" :%d,\n\t\"r\":[ %d ] }", g, r)}
				}
				res := f.push(queue, items...)
				mu.Lock()
				for i := range items {
					all = append(all, verdict{items[i], res[i]})
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	at := map[string]map[int64]fusedItem{}
	for _, v := range all {
		if v.res.Status != fusion.Queued {
			t.Fatalf("%s: verdict %+v, want queued", v.item.txn, v.res)
		}
		if at[v.item.partition] == nil {
			at[v.item.partition] = map[int64]fusedItem{}
		}
		if prev, dup := at[v.item.partition][v.res.Offset]; dup {
			t.Fatalf("%s@%d given to %s and %s", v.item.partition, v.res.Offset, prev.txn, v.item.txn)
		}
		at[v.item.partition][v.res.Offset] = v.item
	}
	stored := 0
	for p := range partitions {
		part := fmt.Sprintf("p%d", p)
		frames := f.frames(t, queue, part)
		stored += len(frames)
		if len(frames) != len(at[part]) {
			t.Errorf("%s: %d frames stored, %d reported queued", part, len(frames), len(at[part]))
		}
		for _, fr := range frames {
			it, ok := at[part][fr.Offset]
			if !ok || fr.TransactionID != it.txn || string(fr.Payload) != it.payload {
				t.Errorf("%s@%d: stored %q %q, reported there: %+v", part, fr.Offset, fr.TransactionID, fr.Payload, it)
			}
		}
	}
	if stored != len(all) {
		t.Errorf("%d frames stored, %d pushed", stored, len(all))
	}
}

// TestFusedDuplicateOfRemovedSegment: a repeat whose original's segment is gone (as
// retention removes segments before their hash sidecar) is still a duplicate at the
// original offset, but its message id is unknown: the zero UUID. (Moved from the root
// package's dedup scenarios: no client can remove a segment.)
func TestFusedDuplicateOfRemovedSegment(t *testing.T) {
	t.Parallel()
	f := newFusedStore(t)
	const queue = "dd-zero-uuid"
	item := func(txn string) fusedItem { return fusedItem{partition: "Default", txn: txn, payload: `"` + txn + `"`} }
	type want struct {
		status fusion.Status
		offset int64
		id     string // the original's transaction id whose message id must be reported; "" = zero
	}
	idOf := func(txn string) [16]byte {
		var id [16]byte
		copy(id[:], fmt.Sprintf("%-16.16s", txn))
		return id
	}
	check := func(t *testing.T, step string, got []fusion.Result, wants ...want) {
		t.Helper()
		for i, w := range wants {
			r := got[i]
			var wantID [16]byte
			if w.id != "" {
				wantID = idOf(w.id)
			}
			if r.Status != w.status || r.Offset != w.offset || (w.status == fusion.Duplicate && r.MessageID != wantID) {
				t.Fatalf("%s item %d: %+v, want status %d at %d with the id of %q", step, i, r, w.status, w.offset, w.id)
			}
		}
	}
	check(t, "first", f.push(queue, item("T"), item("U")), want{fusion.Queued, 0, ""}, want{fusion.Queued, 1, ""})
	check(t, "second", f.push(queue, item("V")), want{fusion.Queued, 2, ""})
	f.s.exec(t, `DELETE FROM queen.log_segments WHERE base_offset = 0 AND partition_id IN (
		SELECT p.id FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1)`, queue)
	check(t, "after the removal", f.push(queue, item("T")), want{fusion.Duplicate, 0, ""})
	check(t, "mixed", f.push(queue, item("U"), item("W"), item("V"), item("T")),
		want{fusion.Duplicate, 1, ""}, want{fusion.Queued, 3, ""}, want{fusion.Duplicate, 2, "V"}, want{fusion.Duplicate, 0, ""})
	// What remains stored: V's segment and W's, nothing written by the duplicates.
	frames := f.frames(t, queue, "Default")
	if len(frames) != 2 || frames[0].TransactionID != "V" || frames[1].TransactionID != "W" {
		t.Fatalf("stored %+v, want V at 2 and W at 3", frames)
	}
}
