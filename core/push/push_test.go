package push

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

const tenant = ports.DefaultTenant

type fixture struct {
	store *memory.Store
	codec *segment.Codec
	svc   *Service
}

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	codec, err := segment.NewCodec(3)
	if err != nil {
		t.Fatal(err)
	}
	store := memory.NewStore()
	b := fusion.New(store, codec, fusion.Options{})
	b.Start()
	t.Cleanup(func() { _ = b.Stop(context.Background()) })
	return &fixture{store: store, codec: codec, svc: New(b, opts)}
}

func (f *fixture) frames(t *testing.T, queue, partition string) []segment.Frame {
	t.Helper()
	var out []segment.Frame
	for _, sg := range f.store.Segments(tenant, queue, partition) {
		fr, err := f.codec.Decode(sg.Blob)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fr...)
	}
	return out
}

func TestPushMintsIDsAndDefaults(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	res := f.svc.Push(t.Context(), tenant, "", []Item{
		{Queue: "q", Payload: []byte(`{"a":1}`)},
		{Queue: "q", Partition: "p", TransactionID: "given", Payload: []byte(`null`)},
	})
	if len(res) != 2 {
		t.Fatalf("%d results, want 2", len(res))
	}
	id := uuid.UUID(res[0].MessageID)
	if id.Version() != 7 {
		t.Fatalf("message id %s is version %d, want UUIDv7", id, id.Version())
	}
	if res[0].TransactionID != id.String() {
		t.Fatalf("default transaction id = %q, want the message id %q", res[0].TransactionID, id)
	}
	if res[0].Partition != DefaultPartition || res[0].Status != StatusQueued || !res[0].HasOffset || res[0].Offset != 0 {
		t.Fatalf("first result %+v", res[0])
	}
	if res[1].TransactionID != "given" || res[1].Partition != "p" {
		t.Fatalf("second result %+v", res[1])
	}
	if got := f.frames(t, "q", "p"); len(got) != 1 || string(got[0].Payload) != `null` {
		t.Fatalf("stored frames %+v, want the null payload byte for byte", got)
	}
}

func TestPushOrderAndGrouping(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	items := []Item{
		{Queue: "q", Partition: "a", Payload: []byte(`1`)},
		{Queue: "q", Partition: "b", Payload: []byte(`2`)},
		{Queue: "r", Partition: "a", Payload: []byte(`3`)},
		{Queue: "q", Partition: "a", Payload: []byte(`4`)},
		{Queue: "q", Partition: "b", Payload: []byte(`5`)},
		{Queue: "q", Partition: "a", Payload: []byte(` 6 `)},
	}
	res := f.svc.Push(t.Context(), tenant, "", items)
	wantOffsets := []int64{0, 0, 0, 1, 1, 2}
	for i, r := range res {
		if r.Index != i || r.Status != StatusQueued || r.Offset != wantOffsets[i] || r.Queue != items[i].Queue {
			t.Fatalf("result %d = %+v, want queued at %d", i, r, wantOffsets[i])
		}
	}
	got := f.frames(t, "q", "a")
	if len(got) != 3 || string(got[0].Payload) != "1" || string(got[1].Payload) != "4" || string(got[2].Payload) != " 6 " {
		t.Fatalf("partition q/a frames out of body order: %+v", got)
	}
}

func TestPushLayerOneDedup(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	first := f.svc.Push(t.Context(), tenant, "", []Item{{Queue: "q", TransactionID: "stored", Payload: []byte(`1`)}})

	res := f.svc.Push(t.Context(), tenant, "", []Item{
		{Queue: "q", TransactionID: "x", Payload: []byte(`1`)},
		{Queue: "q", TransactionID: "x", Payload: []byte(`2`)},      // follower of a queued leader
		{Queue: "q", TransactionID: "stored", Payload: []byte(`3`)}, // leader, duplicate of history
		{Queue: "q", TransactionID: "stored", Payload: []byte(`4`)}, // follower of that duplicate
		{Queue: "q", Partition: "other", TransactionID: "x", Payload: []byte(`5`)},
	})
	check := func(i int, st Status, id [16]byte) {
		t.Helper()
		if res[i].Status != st || res[i].MessageID != id {
			t.Fatalf("item %d = %+v, want %s with id %x", i, res[i], st, id)
		}
	}
	check(0, StatusQueued, res[0].MessageID)
	check(1, StatusDuplicate, res[0].MessageID)
	check(2, StatusDuplicate, first[0].MessageID)
	check(3, StatusDuplicate, first[0].MessageID)
	check(4, StatusQueued, res[4].MessageID)
	if res[1].Offset != res[0].Offset || res[3].Offset != first[0].Offset {
		t.Fatalf("followers must report their leader's offset: %+v", res)
	}
	if n := len(f.frames(t, "q", DefaultPartition)); n != 2 {
		t.Fatalf("%d frames stored in q/Default, want 2 (stored, x)", n)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		items []Item
		field string
	}{
		{"ok", []Item{{Queue: "q", Partition: "p", TransactionID: "t"}}, ""},
		{"empty queue", []Item{{Queue: ""}}, "queue"},
		{"control in partition", []Item{{Queue: "q", Partition: "a\x01"}}, "partition"},
		{"long partition", []Item{{Queue: "q", Partition: strings.Repeat("p", 256)}}, "partition"},
		{"long transaction id", []Item{{Queue: "q"}, {Queue: "q", TransactionID: strings.Repeat("t", 65536)}}, "transactionId"},
		{"payload not UTF-8", []Item{{Queue: "q", Payload: []byte("\"a\xffb\"")}}, "payload"},
		{"payload with NUL escape", []Item{{Queue: "q", Payload: []byte(`"a\u0000b"`)}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Validate(tt.items)
			var ie *InputError
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if !errors.As(err, &ie) || ie.Field != tt.field {
				t.Fatalf("Validate = %v, want an InputError on %s", err, tt.field)
			}
		})
	}
}

// TestPushBeyondTheSmallPath: a request with more items and groups than smallPush takes
// the map-based leaders and grouping, with the same results as the linear scans.
func TestPushBeyondTheSmallPath(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	var items []Item
	for i := range 30 {
		items = append(items, Item{Queue: "q", Partition: fmt.Sprint("p", i%10), TransactionID: fmt.Sprint("t", i%20),
			Payload: []byte(fmt.Sprint(i))})
	}
	res := f.svc.Push(t.Context(), tenant, "", items)
	offsets := map[string]int64{}
	for i, r := range res {
		if i >= 20 {
			// Same partition and transaction id as item i-20: a layer-1 follower.
			if r.Status != StatusDuplicate || r.MessageID != res[i-20].MessageID || r.Offset != res[i-20].Offset {
				t.Fatalf("item %d = %+v, want a duplicate of item %d %+v", i, r, i-20, res[i-20])
			}
			continue
		}
		p := items[i].Partition
		if r.Index != i || r.Status != StatusQueued || r.Partition != p || r.Offset != offsets[p] {
			t.Fatalf("item %d = %+v, want queued in %s at %d", i, r, p, offsets[p])
		}
		offsets[p]++
	}
	for p, n := range offsets {
		got := f.frames(t, "q", p)
		if int64(len(got)) != n {
			t.Fatalf("%s: %d frames stored, want %d", p, len(got), n)
		}
	}
}

// TestNewV7: UUIDv7 ids with the RFC 9562 version and variant, the current millisecond,
// and strictly increasing in minting order, also across goroutines.
func TestNewV7(t *testing.T) {
	t.Parallel()
	before := time.Now().UnixMilli()
	const workers, each = 4, 2000
	ids := make([][][16]byte, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				ids[w] = append(ids[w], newV7())
			}
		})
	}
	wg.Wait()
	after := time.Now().UnixMilli()
	seen := make(map[[16]byte]bool)
	for _, list := range ids {
		for i, id := range list {
			u := uuid.UUID(id)
			if u.Version() != 7 || u.Variant() != uuid.RFC4122 {
				t.Fatalf("%s: version %d, variant %v", u, u.Version(), u.Variant())
			}
			ms := int64(id[0])<<40 | int64(id[1])<<32 | int64(id[2])<<24 | int64(id[3])<<16 | int64(id[4])<<8 | int64(id[5])
			if ms < before || ms > after+1 { // the sequence may run a millisecond ahead
				t.Fatalf("%s: timestamp %d outside [%d, %d]", u, ms, before, after)
			}
			if i > 0 && bytes.Compare(list[i-1][:8], id[:8]) >= 0 {
				t.Fatalf("%s minted after %s does not sort after it", u, uuid.UUID(list[i-1]))
			}
			if seen[id] {
				t.Fatalf("%s minted twice", u)
			}
			seen[id] = true
		}
	}
}

func BenchmarkNewV7(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		newV7()
	}
}
