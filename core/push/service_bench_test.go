package push

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/encryption"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/core/spool/spooltest"
)

// BenchmarkPush measures Service.Push itself, one request at a time, by request shape:
// the allocations it reports are those of the push path (grouping, fusion, the in-memory
// store's own), so a change to the bookkeeping of Push shows in allocs/op. BenchmarkPushSingle
// measures the broker's load shape instead.
//   - single: one message (the most frequent request);
//   - few: 8 messages over 3 partitions, one a layer-1 follower (the stack-only path);
//   - many: 64 messages over 16 partitions (beyond smallPush: the map paths);
//   - diverted: 8 messages over 3 partitions sent to the spool (push maintenance).
func BenchmarkPush(b *testing.B) {
	payload := []byte(`{"seq":1,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`)
	shape := func(n, parts int) []Item {
		items := make([]Item, n)
		for i := range items {
			items[i] = Item{Queue: "bench", Partition: fmt.Sprintf("p%d", i%parts), Payload: payload}
			if i%2 == 1 {
				items[i].TransactionID = fmt.Sprintf("t%d", i)
			}
		}
		return items
	}
	few := shape(8, 3)
	few[7].TransactionID = few[1].TransactionID // same partition (1 % 3 == 7 % 3): a follower
	for _, c := range []struct {
		name   string
		items  []Item
		divert bool
	}{
		{"single", shape(1, 1), false},
		{"few", few, false},
		{"many", shape(64, 16), false},
		{"diverted", few, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			svc, sp := benchService(b, c.divert)
			want := StatusQueued
			if c.divert {
				want = StatusBuffered
			}
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if sp != nil && i%512 == 511 {
					b.StopTimer()
					drainSpool(b, sp) // keeps the in-memory spool from growing with b.N
					b.StartTimer()
				}
				res := svc.Push(ctx, tenant, "", c.items)
				if res[0].Status != want {
					b.Fatalf("status %s, want %s", res[0].Status, want)
				}
			}
		})
	}
}

// benchService is a push service over fusion and the in-memory store; with divert, every
// push goes to a spool on an in-memory file system.
func benchService(b *testing.B, divert bool) (*Service, *spool.Spool) {
	b.Helper()
	codec, err := segment.NewCodec(3)
	if err != nil {
		b.Fatal(err)
	}
	bt := fusion.New(memory.NewStore(), codec, fusion.Options{Logger: slog.New(slog.DiscardHandler)})
	bt.Start()
	b.Cleanup(func() { _ = bt.Stop(context.Background()) })
	opts := Options{Encryption: encryption.New(nil, plainQueues{}, encryption.Options{}),
		Logger: slog.New(slog.DiscardHandler)}
	if !divert {
		return New(bt, opts), nil
	}
	sp := spooltest.Open(b, memory.NewSpoolFS(), spool.Options{})
	opts.Spool, opts.Divert = sp, func() bool { return true }
	return New(bt, opts), sp
}

// drainSpool commits every spooled record, as a replay would after storing them.
func drainSpool(b *testing.B, sp *spool.Spool) {
	b.Helper()
	for {
		batch, err := sp.Next(1 << 12)
		if err != nil {
			b.Fatal(err)
		}
		if batch == nil {
			return
		}
		if err := sp.Commit(batch); err != nil {
			b.Fatal(err)
		}
	}
}
