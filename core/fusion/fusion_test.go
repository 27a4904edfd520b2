package fusion

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/core/vegas"
	"github.com/queen-go/queen/ports"
)

const tenant = ports.DefaultTenant

func testCodec(t testing.TB) *segment.Codec {
	t.Helper()
	c, err := segment.NewCodec(3)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// request builds a group of frames with the given transaction ids and a WaitGroup-backed Done.
func request(wg *sync.WaitGroup, queue, partition string, txns ...string) *Group {
	g := &Group{Tenant: tenant, Queue: queue, Partition: partition, Done: wg.Done}
	for i, txn := range txns {
		g.Frames = append(g.Frames, segment.Frame{ID: [16]byte{byte(len(txn)), byte(i), txn[0]}, TransactionID: txn, Payload: []byte(`{}`)})
		g.Hashes = append(g.Hashes, dedup.Hash(txn))
	}
	wg.Add(1)
	return g
}

// gate is a BeforePush hook that records bundles and holds the first one until release
// is closed.
type gate struct {
	mu      sync.Mutex
	bundles [][]ports.Segment
	entered chan struct{} // receives once the first bundle is held
	release chan struct{}
}

func newGate() *gate {
	return &gate{entered: make(chan struct{}, 1), release: make(chan struct{})}
}

func (g *gate) before(segs []ports.Segment) error {
	g.mu.Lock()
	g.bundles = append(g.bundles, segs)
	first := len(g.bundles) == 1
	g.mu.Unlock()
	if first {
		g.entered <- struct{}{}
		<-g.release
	}
	return nil
}

func (g *gate) recorded() [][]ports.Segment {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([][]ports.Segment(nil), g.bundles...)
}

func newBatcher(t *testing.T, store *memory.Store, opts Options) *Batcher {
	t.Helper()
	b := New(store, testCodec(t), opts)
	b.Start()
	t.Cleanup(func() { _ = b.Stop(t.Context()) })
	return b
}

func TestFireOnIdleCommitsWithoutWaitingForTheTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.NewStore()
		b := New(store, testCodec(t), Options{Hold: time.Hour})
		b.Start()
		var wg sync.WaitGroup
		start := time.Now()
		g := request(&wg, "q", "p", "a")
		b.Submit(g)
		wg.Wait()
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("push waited %v of fake time: it waited for the hold tick instead of firing on idle", waited)
		}
		if g.Results[0].Status != Queued || g.Results[0].Offset != 0 {
			t.Fatalf("result = %+v, want queued at 0", g.Results[0])
		}
		if err := b.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestOneFlushInFlightPerPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.NewStore()
		gt := newGate()
		store.BeforePush = gt.before
		b := newBatcher(t, store, Options{Shards: 1})

		var wg sync.WaitGroup
		first := request(&wg, "q", "p", "a")
		b.Submit(first)
		<-gt.entered // flush 1 is in flight and held
		second := request(&wg, "q", "p", "b", "c")
		third := request(&wg, "q", "p", "d")
		b.Submit(second)
		b.Submit(third)
		// Fake time: the hold tick fires several times, and every goroutine does all it
		// would do before the held flush is released.
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		if n := len(gt.recorded()); n != 1 {
			t.Fatalf("%d flushes started while the partition's first flush was in flight, want 1", n)
		}
		close(gt.release)
		wg.Wait()
	})
}

func TestCloseCommitsWhatWasSubmitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.NewStore()
		gt := newGate()
		store.BeforePush = gt.before
		b := New(store, testCodec(t), Options{Shards: 1})
		b.Start()
		var wg sync.WaitGroup
		b.Submit(request(&wg, "q", "p", "a"))
		<-gt.entered
		late := request(&wg, "q", "p", "b")
		b.Submit(late)
		closed := make(chan error)
		go func() { closed <- b.Stop(t.Context()) }()
		synctest.Wait() // Stop is under way, waiting for the held flush
		close(gt.release)
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if late.Results[0].Status != Queued {
			t.Fatalf("group submitted before Close: %+v, want queued", late.Results[0])
		}
		after := request(&wg, "q", "p", "c")
		b.Submit(after)
		wg.Wait()
		if after.Results[0].Status != Error {
			t.Fatalf("group submitted after Close: %+v, want error", after.Results[0])
		}
	})
}

func TestDedupCacheWatermark(t *testing.T) {
	t.Parallel()
	store := memory.NewStore()
	var mu sync.Mutex
	var sent []int64
	store.BeforePush = func(segs []ports.Segment) error {
		mu.Lock()
		defer mu.Unlock()
		for _, sg := range segs {
			sent = append(sent, sg.Verified)
		}
		return nil
	}
	b := newBatcher(t, store, Options{Shards: 1})
	var wg sync.WaitGroup
	for _, txns := range [][]string{{"a", "b"}, {"c"}, {"a"}, {"d"}} {
		b.Submit(request(&wg, "q", "p", txns...))
		wg.Wait()
	}
	// Second push: the cache knows offsets 0-1. Third repeats a known hash: full probe.
	// Fourth: the duplicate wrote nothing, so the watermark (2) still holds.
	want := []int64{-1, 1, -1, 2}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(sent) != fmt.Sprint(want) {
		t.Fatalf("verified watermarks sent = %v, want %v", sent, want)
	}
}

func TestDedupCacheWatermarkRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		pid          string
		base         int64
		window       time.Duration
		wantVerified int64 // -1: the history is unknown again
	}{
		{"contiguous commit extends", "pid-1", 2, time.Hour, 2},
		{"gap: offsets written elsewhere", "pid-1", 5, time.Hour, -1},
		{"window widened: evicted history matters again", "pid-1", 2, 2 * time.Hour, -1},
		{"dedup turned off", "pid-1", 2, 0, -1},
		{"partition recreated under the same name", "pid-2", 0, time.Hour, 0},
		{"recreated partition written elsewhere first", "pid-2", 3, time.Hour, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := newKnown()
			k.committed("pid-1", 0, bytes.Repeat([]byte{1}, 32), time.Now(), time.Hour)
			if k.verified != 1 {
				t.Fatalf("verified = %d after offsets 0-1, want 1", k.verified)
			}
			k.committed(tt.pid, tt.base, bytes.Repeat([]byte{2}, 16), time.Now(), tt.window)
			if k.verified != tt.wantVerified {
				t.Fatalf("verified = %d, want %d", k.verified, tt.wantVerified)
			}
			if _, old := k.hashes[[16]byte(bytes.Repeat([]byte{1}, 16))]; old && tt.wantVerified != 2 {
				t.Fatal("the previous history is still remembered")
			}
		})
	}
}

func TestSummaryLogLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf syncBuffer
		log := slog.New(slog.NewTextHandler(&buf, nil))
		store := memory.NewStore()
		b := New(store, testCodec(t), Options{Logger: log, SummaryEvery: 10 * time.Second, Shards: 1})
		b.Start()
		var wg sync.WaitGroup
		b.Submit(request(&wg, "q", "p1", "a"), request(&wg, "q", "p2", "b"), request(&wg, "q", "p3", "c"))
		wg.Wait()
		time.Sleep(11 * time.Second) // one summary period, whatever the goroutine start order
		synctest.Wait()
		line := buf.String()
		for _, want := range []string{"fusion bundle summary", "commits=1", "segments=3", "segments_per_commit=3"} {
			if !strings.Contains(line, want) {
				t.Fatalf("summary %q lacks %q", line, want)
			}
		}
		if err := b.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestDedupCacheWarmsUpFromStoredHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.NewStore()
		// History written before this broker existed (a restart, another broker).
		for _, txn := range []string{"a", "b", "c"} {
			h := dedup.Hash(txn)
			if _, err := store.PushSegments(t.Context(), []ports.Segment{{Tenant: tenant, Queue: "q", Partition: "p",
				Count: 1, Hashes: h[:], Verified: -1, Blob: []byte{1}}}); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		var sent []int64
		store.BeforePush = func(segs []ports.Segment) error {
			mu.Lock()
			defer mu.Unlock()
			sent = append(sent, segs[0].Verified)
			return nil
		}
		b := New(store, testCodec(t), Options{Shards: 1})
		b.Start()
		var wg sync.WaitGroup
		for _, txns := range [][]string{{"x"}, {"y"}, {"a"}} {
			g := request(&wg, "q", "p", txns...)
			b.Submit(g)
			wg.Wait()
			synctest.Wait() // let the warm-up read land
		}
		// First push: history unknown (full probe), which starts the warm-up; second:
		// the warmed watermark covers offsets 0-3; third repeats "a": full probe again.
		mu.Lock()
		got := fmt.Sprint(sent)
		mu.Unlock()
		if got != fmt.Sprint([]int64{-1, 3, -1}) {
			t.Fatalf("verified watermarks sent = %s, want [-1 3 -1]", got)
		}
		if err := b.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// waitBacklog waits until the (single) shard holds n accumulated frames: submissions are
// asynchronous, and a test that releases a held flush before they arrived would see them
// split over more flushes.
func waitBacklog(t *testing.T, b *Batcher, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for b.shards[0].backlog.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("shard backlog %d, want %d", b.shards[0].backlog.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}
