package streams_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/core/streams"
	"github.com/queen-go/queen/ports"
)

// world is the system under test (the streams use case over the memory store) and the
// model it must agree with after every step: each shard's state, the sink's messages in
// order, and each source partition's cursor.
type world struct {
	t     *testing.T
	rng   *rand.Rand
	store *memory.Store
	codec *segment.Codec
	svc   *streams.Service
	query string

	parts  []string            // source partition names
	pids   map[string]string   // name -> id, once pushed
	txns   map[string][]string // source transaction ids per partition, in offset order
	state  map[string]map[string]string
	sink   []string         // payloads in pop order (one sink partition)
	read   []string         // what the reader group popped so far
	cursor map[string]int64 // next offset the group should be given
	leased map[string]bool  // the group holds a live lease kept by release_lease false
	steps  int
}

const group = "streams.prop"

func newWorld(t *testing.T, seed uint64) *world {
	codec, err := segment.NewCodec(1)
	if err != nil {
		t.Fatal(err)
	}
	store := memory.NewStore()
	w := &world{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), store: store, codec: codec,
		svc:   streams.New(store, push.New(nil, push.Options{Codec: codec}), streams.Options{Segments: store}),
		parts: []string{"p0", "p1", "p2"}, pids: map[string]string{}, txns: map[string][]string{},
		state: map[string]map[string]string{}, cursor: map[string]int64{}, leased: map[string]bool{}}
	r, err := w.svc.Register(context.Background(), ports.StreamQuery{Name: "prop", SourceQueue: "src", SinkQueue: "sink", ConfigHash: "h"}, false)
	if err != nil {
		t.Fatal(err)
	}
	w.query = r.Query.ID
	return w
}

// produce pushes n source messages to a random partition.
func (w *world) produce() {
	part := w.parts[w.rng.IntN(len(w.parts))]
	n := 1 + w.rng.IntN(5)
	frames := make([]segment.Frame, n)
	var hashes []byte
	for i := range frames {
		txn := fmt.Sprintf("%s-%d", part, len(w.txns[part])+i)
		frames[i] = segment.Frame{ID: uuid.Must(uuid.NewV7()), TransactionID: txn, Payload: []byte(`{"v":1}`)}
		h := hashOf(txn)
		hashes = append(hashes, h[:]...)
	}
	res, err := w.store.PushSegments(context.Background(), []ports.Segment{{Tenant: ports.DefaultTenant, Queue: "src",
		Partition: part, Count: n, Hashes: hashes, Verified: -1, Blob: w.codec.Encode(frames)}})
	if err != nil || res[0].Status != ports.SegmentQueued {
		w.t.Fatalf("push: %+v %v", res, err)
	}
	w.pids[part] = res[0].PartitionID
	for _, f := range frames {
		w.txns[part] = append(w.txns[part], f.TransactionID)
	}
}

func hashOf(txn string) [16]byte { return dedup.Hash(txn) }

// randomOps are state ops over a small key space, with their effect on the model.
func (w *world) randomOps() []any {
	var ops []any
	for range w.rng.IntN(4) {
		key := fmt.Sprintf("k%d", w.rng.IntN(5))
		if w.rng.IntN(3) == 0 {
			ops = append(ops, streams.Op{Type: "delete", Key: &key})
		} else {
			v := fmt.Sprintf(`{"n":%d}`, w.rng.IntN(100))
			ops = append(ops, streams.Op{Type: "upsert", Key: &key, Value: []byte(v)})
		}
	}
	return ops
}

func (w *world) items() []push.SinkItem {
	out := make([]push.SinkItem, w.rng.IntN(3))
	for i := range out {
		out[i].Queue = "sink"
		out[i].Payload = fmt.Appendf(nil, `{"step":%d,"i":%d}`, w.steps, i)
	}
	return out
}

// apply records a committed cycle in the model.
func (w *world) apply(pid string, in streams.CycleInput) {
	sh := w.state[pid]
	if sh == nil {
		sh = map[string]string{}
		w.state[pid] = sh
	}
	for _, op := range in.Ops {
		if op.Type == "delete" {
			delete(sh, *op.Key)
		} else {
			sh[*op.Key] = string(op.Value)
		}
	}
	for _, it := range in.Items {
		w.sink = append(w.sink, string(it.Payload))
	}
}

func opsOf(v []any) []streams.Op {
	out := make([]streams.Op, len(v))
	for i, o := range v {
		out[i] = o.(streams.Op)
	}
	return out
}

// consume pops a partition's next span and commits a cycle for it, with failures
// injected: a refused ack (nothing may change), a lost answer (the retry must not store
// the sink items twice), a kept lease or a partial ack (the rest comes again, in order).
func (w *world) consume() {
	part := w.parts[w.rng.IntN(len(w.parts))]
	pid, ok := w.pids[part]
	if !ok {
		return
	}
	if w.leased[part] {
		if !w.store.ExpireLease(pid, group) {
			w.t.Fatalf("step %d: no lease to expire on %s", w.steps, part)
		}
		w.leased[part] = false
	}
	lease := uuid.NewString()
	claims, _, err := w.store.Pop(context.Background(), ports.PopRequest{Tenant: ports.DefaultTenant, Queue: "src", Partition: part,
		Group: group, Batch: 1 + w.rng.IntN(6), Partitions: 1, LeaseID: lease, SubscribeMode: ports.SubscribeAll})
	if err != nil {
		w.t.Fatal(err)
	}
	want := w.cursor[part]
	if len(claims) == 0 {
		if want < int64(len(w.txns[part])) {
			w.t.Fatalf("step %d: %s has messages from %d, the pop claimed none", w.steps, part, want)
		}
		return
	}
	c := claims[0]
	if c.Start != want {
		w.t.Fatalf("step %d: %s claimed from %d, want %d", w.steps, part, c.Start, want)
	}
	ackAt := c.Start + w.rng.Int64N(c.End-c.Start+1) // partial when < End
	in := streams.CycleInput{QueryID: w.query, PartitionID: pid, Group: group, ReleaseLease: w.rng.IntN(3) > 0,
		Ops: opsOf(w.randomOps()), Items: w.items(),
		Ack: &streams.Ack{TransactionID: w.txns[part][ackAt], LeaseID: lease, Count: int(ackAt - c.Start + 1)}}
	switch w.rng.IntN(6) {
	case 0: // a refused ack: nothing changes, the lease stays
		bad := in
		bad.Ack = &streams.Ack{TransactionID: in.Ack.TransactionID, LeaseID: uuid.NewString()}
		w.fail(bad)
		if w.rng.IntN(2) == 0 {
			w.leased[part] = true // abandon the span: it comes again after the lease expires
			return
		}
	case 1: // an unknown op type
		bad := in
		bad.Ops = append(slices.Clone(in.Ops), streams.Op{Type: "merge"})
		w.fail(bad)
	}
	w.commit(in)
	w.apply(pid, in)
	if w.rng.IntN(4) == 0 { // the answer was lost: the SDK retries
		out, err := w.svc.Cycle(context.Background(), ports.DefaultTenant, "", in)
		var f *streams.Failure
		switch {
		case in.ReleaseLease && !errors.As(err, &f):
			w.t.Fatalf("step %d: retry after the lease was released: %+v %v, want a failure", w.steps, out, err)
		case !in.ReleaseLease && err != nil:
			w.t.Fatalf("step %d: retry under the kept lease: %v", w.steps, err)
		case !in.ReleaseLease:
			for _, r := range out.Pushed {
				if r.Status != push.StatusDuplicate || r.MessageID == ([16]byte{}) {
					w.t.Fatalf("step %d: retried sink item %+v, want a duplicate naming the original", w.steps, r)
				}
			}
		}
	}
	w.cursor[part] = ackAt + 1
	w.leased[part] = !in.ReleaseLease
}

// flush is an ack-less idle flush: deletes of present keys plus sink items, sometimes
// retried.
func (w *world) flush() {
	part := w.parts[w.rng.IntN(len(w.parts))]
	pid, ok := w.pids[part]
	if !ok {
		return
	}
	var ops []streams.Op
	for _, k := range slices.Sorted(maps.Keys(w.state[pid])) {
		if w.rng.IntN(2) == 0 {
			ops = append(ops, streams.Op{Type: "delete", Key: &k})
		}
	}
	in := streams.CycleInput{QueryID: w.query, PartitionID: pid, Ops: ops}
	if len(ops) > 0 {
		in.Items = w.items()
	}
	w.commit(in)
	w.apply(pid, in)
	if len(ops) > 0 && w.rng.IntN(2) == 0 {
		out := w.commit(in)
		for _, r := range out.Pushed {
			if r.Status != push.StatusDuplicate {
				w.t.Fatalf("step %d: retried flush item %+v, want duplicate", w.steps, r)
			}
		}
	}
}

func (w *world) commit(in streams.CycleInput) streams.CycleOutcome {
	out, err := w.svc.Cycle(context.Background(), ports.DefaultTenant, "", in)
	if err != nil {
		w.t.Fatalf("step %d: cycle %+v: %v", w.steps, in, err)
	}
	return out
}

func (w *world) fail(in streams.CycleInput) {
	out, err := w.svc.Cycle(context.Background(), ports.DefaultTenant, "", in)
	var f *streams.Failure
	if !errors.As(err, &f) {
		w.t.Fatalf("step %d: cycle %+v: %+v %v, want a failure", w.steps, in, out, err)
	}
}

// check compares the store with the model: every shard, and the sink read so far.
func (w *world) check() {
	for _, pid := range w.pids {
		rows, err := w.svc.State(context.Background(), w.query, pid, ports.StateFilter{})
		if err != nil {
			w.t.Fatal(err)
		}
		got := map[string]string{}
		for _, r := range rows {
			got[r.Key] = string(r.Value)
		}
		if !maps.Equal(got, w.state[pid]) && !(len(got) == 0 && len(w.state[pid]) == 0) {
			w.t.Fatalf("step %d: state of %s %v, model %v", w.steps, pid, got, w.state[pid])
		}
	}
	claims, _, err := w.store.Pop(context.Background(), ports.PopRequest{Tenant: ports.DefaultTenant, Queue: "sink",
		Group: "reader", Batch: 1000, Partitions: 1, AutoAck: true, SubscribeMode: ports.SubscribeAll})
	if err != nil {
		w.t.Fatal(err)
	}
	for _, c := range claims {
		for _, sg := range c.Segments {
			frames, err := w.codec.Decode(sg.Blob)
			if err != nil {
				w.t.Fatal(err)
			}
			for k, f := range frames {
				if off := sg.BaseOffset + int64(k); off >= c.Start && off <= c.End {
					w.read = append(w.read, string(f.Payload))
				}
			}
		}
	}
	if !slices.Equal(w.read, w.sink) {
		w.t.Fatalf("step %d: sink %q, model %q", w.steps, w.read, w.sink)
	}
}

// TestCyclesAgreeWithModel runs random sequences of produces, cycles (with refused acks,
// bad ops, lost answers, kept leases and partial acks) and idle flushes, and compares
// the state, the sink and the source cursors with the model after every step.
func TestCyclesAgreeWithModel(t *testing.T) {
	t.Parallel()
	for seed := range uint64(30) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, seed)
			for w.steps = 0; w.steps < 150; w.steps++ {
				switch n := w.rng.IntN(10); {
				case n < 3:
					w.produce()
				case n < 8:
					w.consume()
				default:
					w.flush()
				}
				w.check()
			}
		})
	}
}
