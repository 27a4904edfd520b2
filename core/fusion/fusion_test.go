package fusion

import (
	"bytes"
	"context"
	"encoding/binary"
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
	"github.com/queen-go/queen/core/stages"
	"github.com/queen-go/queen/core/vegas"
	"github.com/queen-go/queen/internal/syncbuf"
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
	// t.Context() is done when cleanups run, and Stop given a done context returns
	// before the batcher is idle, leaving its goroutines behind: it gets one of its own.
	t.Cleanup(func() {
		if err := b.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
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

func TestBundlesReadyPartitionsIntoOneCommit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		store := memory.NewStore()
		gt := newGate()
		store.BeforePush = gt.before
		// One permit: while the first bundle is out, every other partition must wait and
		// then leave together.
		b := newBatcher(t, store, Options{Shards: 1, BundleMax: 16, Limiter: vegas.New(vegas.Options{Initial: 1, Min: 1, Max: 1})})

		var wg sync.WaitGroup
		b.Submit(request(&wg, "q", "p0", "a"))
		<-gt.entered
		groups := make([]*Group, 10)
		for i := range groups {
			groups[i] = request(&wg, "q", fmt.Sprint("p", i+1), "x")
			b.Submit(groups[i])
		}
		waitOffered(t, b, 10) // all 10 are offered, waiting for the permit
		close(gt.release)
		wg.Wait()

		bundles := gt.recorded()
		if len(bundles) != 2 {
			t.Fatalf("%d bundles, want 2 (the held one, then all 10 ready partitions together)", len(bundles))
		}
		if len(bundles[1]) != 10 {
			t.Fatalf("second bundle has %d segments, want 10", len(bundles[1]))
		}
		if st := b.Stats(); st.Commits != 2 || st.Segments != 11 {
			t.Fatalf("stats = %+v, want 2 commits and 11 segments", st)
		}
	})
}

func TestRoutesResultsToEveryWaitingRequest(t *testing.T) {
	t.Parallel()
	store := memory.NewStore()
	b := newBatcher(t, store, Options{Shards: 2})
	const requests, partitions = 200, 7
	var wg sync.WaitGroup
	groups := make([]*Group, requests)
	var submit sync.WaitGroup
	for r := range groups {
		groups[r] = request(&wg, "q", fmt.Sprint("p", r%partitions), fmt.Sprint("r", r, "-a"), fmt.Sprint("r", r, "-b"), fmt.Sprint("r", r, "-c"))
		submit.Add(1)
		go func() { defer submit.Done(); b.Submit(groups[r]) }()
	}
	submit.Wait()
	wg.Wait()

	seen := make(map[string]map[int64]bool)
	for r, g := range groups {
		p := g.Partition
		if seen[p] == nil {
			seen[p] = make(map[int64]bool)
		}
		for i, res := range g.Results {
			if res.Status != Queued {
				t.Fatalf("request %d frame %d: %+v, want queued", r, i, res)
			}
			if res.MessageID != g.Frames[i].ID {
				t.Fatalf("request %d frame %d got another frame's id", r, i)
			}
			if i > 0 && res.Offset != g.Results[i-1].Offset+1 {
				t.Fatalf("request %d: offsets %d then %d: a request's frames must be consecutive", r, g.Results[i-1].Offset, res.Offset)
			}
			if seen[p][res.Offset] {
				t.Fatalf("offset %d of %s handed out twice", res.Offset, p)
			}
			seen[p][res.Offset] = true
		}
	}
	for p, offs := range seen {
		for o := range int64(len(offs)) {
			if !offs[o] {
				t.Fatalf("partition %s has a gap at %d", p, o)
			}
		}
	}
	if st := b.Stats(); st.Commits >= requests {
		t.Logf("no coalescing observed (%d commits for %d requests); timing-dependent, not a failure", st.Commits, requests)
	}
}

func TestLayerTwoDedupInsideOneFlush(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		store := memory.NewStore()
		gt := newGate()
		store.BeforePush = gt.before
		b := newBatcher(t, store, Options{Shards: 1})
		var wg sync.WaitGroup
		b.Submit(request(&wg, "q", "p", "warm"))
		<-gt.entered
		// Two requests with the same transaction id land in the same flush.
		one := request(&wg, "q", "p", "same")
		two := request(&wg, "q", "p", "other", "same")
		b.Submit(one)
		b.Submit(two)
		waitBacklog(t, b, 3)
		close(gt.release)
		wg.Wait()

		if bundles := gt.recorded(); len(bundles) != 2 || bundles[1][0].Count != 2 {
			t.Fatalf("second flush should carry 2 frames (one per distinct hash), got %+v", bundles)
		}
		if r := one.Results[0]; r.Status != Queued || r.Offset != 1 {
			t.Fatalf("first occurrence: %+v, want queued at 1", r)
		}
		if r := two.Results[1]; r.Status != Duplicate || r.Offset != 1 || r.MessageID != one.Frames[0].ID {
			t.Fatalf("repeat: %+v, want duplicate of offset 1 with the first's id", r)
		}
		if r := two.Results[0]; r.Status != Queued || r.Offset != 2 {
			t.Fatalf("other: %+v, want queued at 2", r)
		}
	})
}

func TestDuplicateAgainstStoredHistory(t *testing.T) {
	t.Parallel()
	store := memory.NewStore()
	b := newBatcher(t, store, Options{})
	var wg sync.WaitGroup
	orig := request(&wg, "q", "p", "k1", "k2")
	b.Submit(orig)
	wg.Wait()

	// A segment mixing a duplicate with new frames: the duplicate reports the original,
	// the rest is stored right after, in order.
	mixed := request(&wg, "q", "p", "n1", "k2", "n2")
	b.Submit(mixed)
	wg.Wait()
	want := []Result{
		{Status: Queued, Offset: 2},
		{Status: Duplicate, Offset: 1, MessageID: orig.Frames[1].ID},
		{Status: Queued, Offset: 3},
	}
	for i, w := range want {
		r := mixed.Results[i]
		if r.Status != w.Status || r.Offset != w.Offset || (w.Status == Duplicate && r.MessageID != w.MessageID) {
			t.Fatalf("frame %d: %+v, want %+v", i, r, w)
		}
	}

	// Once retention removed the original segment, the id is the zero sentinel.
	store.DeleteSegment(orig.Results[0].PartitionID, 0)
	again := request(&wg, "q", "p", "k1")
	b.Submit(again)
	wg.Wait()
	if r := again.Results[0]; r.Status != Duplicate || r.Offset != 0 || r.MessageID != [16]byte{} {
		t.Fatalf("after retention: %+v, want duplicate of offset 0 with the zero id", r)
	}
}

func TestWindowZeroSkipsDedup(t *testing.T) {
	t.Parallel()
	store := memory.NewStore()
	store.SetWindow(tenant, "q", 0)
	b := newBatcher(t, store, Options{})
	var wg sync.WaitGroup
	for i := range 2 {
		g := request(&wg, "q", "p", "same")
		b.Submit(g)
		wg.Wait()
		if r := g.Results[0]; r.Status != Queued || r.Offset != int64(i) {
			t.Fatalf("push %d: %+v, want queued at %d", i, r, i)
		}
	}
}

func TestFailedBundleAnswersError(t *testing.T) {
	t.Parallel()
	store := memory.NewStore()
	store.BeforePush = func([]ports.Segment) error { return errors.New("connection refused") }
	b := newBatcher(t, store, Options{})
	var wg sync.WaitGroup
	g := request(&wg, "q", "p", "a", "b")
	b.Submit(g)
	wg.Wait()
	for i, r := range g.Results {
		if r.Status != Error {
			t.Fatalf("frame %d: %+v, want error", i, r)
		}
	}
	if st := b.Stats(); st.Failed != 1 || st.Commits != 0 {
		t.Fatalf("stats = %+v, want 1 failed bundle and no commit", st)
	}
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
			if old := k.holds([16]byte(bytes.Repeat([]byte{1}, 16))); old && tt.wantVerified != 2 {
				t.Fatal("the previous history is still remembered")
			}
		})
	}
}

func TestSummaryLogLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf syncbuf.Buffer
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

// waitBacklog waits until every goroutine of the test's bubble is blocked and checks
// that the (single) shard holds n accumulated frames: submissions are asynchronous, and
// a test that releases a held flush before they arrived would see them split over more
// flushes.
func waitBacklog(t *testing.T, b *Batcher, n int64) {
	t.Helper()
	synctest.Wait()
	if got := b.shards[0].backlog.Load(); got != n {
		t.Fatalf("shard backlog %d, want %d", got, n)
	}
}

// TestVerifiedForSkipsMintedIDs: a frame whose transaction id is in the cache costs the
// segment its watermark (a full probe), unless its group says the ids were just minted:
// those are not looked up (nothing can have stored them before).
func TestVerifiedForSkipsMintedIDs(t *testing.T) {
	t.Parallel()
	k := newKnown()
	seen := [16]byte(bytes.Repeat([]byte{1}, 16))
	k.committed("pid-1", 0, seen[:], time.Now(), time.Hour)
	fresh := [16]byte{9}
	given := &Group{Hashes: [][16]byte{fresh, seen}}
	minted := &Group{Hashes: [][16]byte{fresh, seen}, Minted: true}
	if v := k.verifiedFor([]ref{{given, 0}}); v != 0 {
		t.Fatalf("unseen id: verified %d, want 0", v)
	}
	if v := k.verifiedFor([]ref{{given, 0}, {given, 1}}); v != -1 {
		t.Fatalf("a cached id: verified %d, want -1 (full probe)", v)
	}
	if v := k.verifiedFor([]ref{{minted, 1}}); v != 0 {
		t.Fatalf("minted ids are not looked up: verified %d, want 0", v)
	}
}

// TestKnownEvictsByAge: commits over a sliding window keep exactly the hashes committed
// within it (a repeated hash by its newest commit), whatever the eviction's compaction.
func TestKnownEvictsByAge(t *testing.T) {
	t.Parallel()
	const window = 10 * time.Second
	k := newKnown()
	start := time.Unix(1_700_000_000, 0)
	newest := map[[16]byte]time.Time{} // the model
	for i := range 2000 {
		at := start.Add(time.Duration(i) * 100 * time.Millisecond)
		h := [16]byte{byte(i % 251), byte(i % 7)} // repeats now and then
		k.committed("pid", int64(i), h[:], at, window)
		newest[h] = at
		cutoff := at.Add(-window)
		want := 0
		for h, t0 := range newest {
			if t0.Before(cutoff) {
				delete(newest, h)
				continue
			}
			want++
			if !k.holds(h) {
				t.Fatalf("commit %d: hash %x of %v evicted, cutoff %v", i, h, t0, cutoff)
			}
		}
		if len(k.hashes) != want {
			t.Fatalf("commit %d: %d hashes held, want %d", i, len(k.hashes), want)
		}
		if k.size() < want || k.size() > 101 { // a hash repeated within the window holds two entries
			t.Fatalf("commit %d: %d entries for %d hashes in a window of 100 commits", i, k.size(), want)
		}
	}
	if k.verified != 1999 {
		t.Fatalf("verified %d", k.verified)
	}
}

// BenchmarkKnownCommittedSteady is one partition's dedup cache in steady state: a full
// window of 100,000 hashes, one commit of one message in, one hash evicted.
func BenchmarkKnownCommittedSteady(b *testing.B) {
	const held = 100_000
	window := time.Duration(held) * time.Millisecond
	k := newKnown()
	start := time.Unix(1_700_000_000, 0)
	var h [16]byte
	commit := func(i int) {
		binary.BigEndian.PutUint64(h[:], uint64(i))
		k.committed("pid", int64(i), h[:], start.Add(time.Duration(i)*time.Millisecond), window)
	}
	for i := range held {
		commit(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		commit(held + i)
	}
}

// The push stages (core/stages): a partition that waits for the permit another bundle
// holds counts that wait, every bundle counts its database call and its routing.
func TestStagesTimeWaitCommitAndRoute(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		store := memory.NewStore()
		store.BeforePush = func([]ports.Segment) error { time.Sleep(10 * time.Millisecond); return nil }
		timers := stages.New()
		b := newBatcher(t, store, Options{Shards: 1, Stages: timers, Limiter: vegas.New(vegas.Options{Initial: 1, Min: 1, Max: 1})})
		var wg sync.WaitGroup
		b.Submit(request(&wg, "q", "p0", "a"))
		synctest.Wait() // p0's commit is in the database
		b.Submit(request(&wg, "q", "p1", "b"))
		wg.Wait()
		synctest.Wait() // the route stage is counted after the answers
		p := &timers.Push
		if s := p.Commit.Read(); s.Count != 2 || s.SumSeconds != 0.02 {
			t.Fatalf("commit stage: %d calls, %v s; want 2 calls of 10 ms", s.Count, s.SumSeconds)
		}
		if s := p.Wait.Read(); s.Count != 2 || s.SumSeconds != 0.01 {
			t.Fatalf("wait stage: %d segments, %v s; want p0 at once and p1 after p0's 10 ms commit", s.Count, s.SumSeconds)
		}
		if s := p.Route.Read(); s.Count != 2 {
			t.Fatalf("route stage: %d bundles, want 2", s.Count)
		}
	})
}
