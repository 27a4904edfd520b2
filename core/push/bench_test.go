package push

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/encryption"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/core/vegas"
	"github.com/queen-go/queen/ports"
)

// plainQueues is a queue-settings store where no queue encrypts.
type plainQueues struct{}

func (plainQueues) EncryptionEnabled(context.Context, string, string) (bool, error) {
	return false, nil
}

// BenchmarkPushSingle is the single-message shape of docs/benchmarks.md through the use case and fusion: 64 clients,
// one message per request, 1,000 partitions, one commit at a time (the broker's default
// limit) on the in-memory store, each commit taking commit (0: at once), with 8 or 2
// fusion shards. It reports the allocations of the push path (the store's own included)
// and the process's CPU time (cpu-ns/op) per message.
func BenchmarkPushSingle(b *testing.B) {
	for _, c := range []struct {
		commit time.Duration
		shards int
	}{{0, 8}, {time.Millisecond, 8}, {time.Millisecond, 2}} {
		commit := c.commit
		b.Run(fmt.Sprintf("commit=%v/shards=%d", commit, c.shards), func(b *testing.B) {
			codec, err := segment.NewCodec(3)
			if err != nil {
				b.Fatal(err)
			}
			store := memory.NewStore()
			if commit > 0 {
				store.BeforePush = func([]ports.Segment) error { time.Sleep(commit); return nil }
			}
			bt := fusion.New(store, codec, fusion.Options{Shards: c.shards,
				Limiter: vegas.New(vegas.Options{Initial: 1, Min: 1, Max: 1}), Logger: slog.New(slog.DiscardHandler)})
			bt.Start()
			defer func() { _ = bt.Stop(context.Background()) }()
			enc := encryption.New(nil, plainQueues{}, encryption.Options{})
			svc := New(bt, Options{Encryption: enc})
			parts := make([]string, 1000)
			for i := range parts {
				parts[i] = fmt.Sprintf("p%d", i)
			}
			payload := []byte(`{"seq":1,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`)
			b.SetParallelism(64 / max(1, testingProcs()))
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			b.RunParallel(func(pb *testing.PB) {
				items := make([]Item, 1)
				for pb.Next() {
					items[0] = Item{Queue: "bench", Partition: parts[rand.IntN(len(parts))], Payload: payload}
					if r := svc.Push(context.Background(), ports.DefaultTenant, "", items); r[0].Status != StatusQueued {
						b.Errorf("status %s", r[0].Status)
					}
				}
			})
			b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func testingProcs() int { return runtime.GOMAXPROCS(0) }
