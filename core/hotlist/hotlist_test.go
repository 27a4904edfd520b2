package hotlist

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/core/stages"
	"github.com/queen-go/queen/ports"
)

const tenant = ports.DefaultTenant

// fakeStore answers reseeds from a fixed set of pending partitions per (queue, group).
type fakeStore struct {
	mu      sync.Mutex
	pending map[string][]ports.PendingPartition // queue/group -> ascending id
	delayed time.Duration
	window  time.Duration
	calls   int
}

func newFakeStore() *fakeStore { return &fakeStore{pending: map[string][]ports.PendingPartition{}} }

func (f *fakeStore) set(queue, group string, parts ...ports.PendingPartition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	slices.SortFunc(parts, func(a, b ports.PendingPartition) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	f.pending[queue+"/"+group] = parts
}

func (f *fakeStore) Pending(_ context.Context, _, queue, group, after string, limit int) (ports.PendingPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	page := ports.PendingPage{DelayedProcessing: f.delayed, WindowBuffer: f.window, QueueExists: true}
	for _, p := range f.pending[queue+"/"+group] {
		if p.ID > after && len(page.Partitions) < limit {
			page.Partitions = append(page.Partitions, p)
		}
	}
	return page, nil
}

func (f *fakeStore) reseeds() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// wakes records Wake calls.
type wakes struct {
	mu  sync.Mutex
	got []string
}

func (w *wakes) wake(key, partition string) {
	w.mu.Lock()
	w.got = append(w.got, partition)
	w.mu.Unlock()
}

func (w *wakes) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.got)
}

func pid(n int) string { return fmt.Sprintf("00000000-0000-0000-0000-%012d", n) }

func part(n int) ports.PendingPartition {
	return ports.PendingPartition{ID: pid(n), Name: fmt.Sprintf("p%d", n)}
}

// fixture is a started List on a fake store, inside a synctest bubble.
type fixture struct {
	l     *List
	store *fakeStore
	w     *wakes
}

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	f := &fixture{store: newFakeStore(), w: &wakes{}}
	opts.Enabled, opts.Wake = true, f.w.wake
	opts.Logger = slog.New(slog.DiscardHandler)
	if opts.Shards == 0 {
		opts.Shards = 2
	}
	f.l = New(f.store, opts)
	f.l.Start()
	t.Cleanup(f.l.Stop)
	return f
}

func popReq(queue, group string) ports.PopRequest {
	return ports.PopRequest{Tenant: tenant, Queue: queue, Group: group, Batch: 10, Partitions: 1}
}

// register makes the group's ring exist, as after its first (scanned) pop, and waits for
// the reseed that registration asks for.
func (f *fixture) register(queue, group string) {
	f.l.Scanned(popReq(queue, group))
	synctest.Wait()
}

func (f *fixture) push(queue string, n, count int) {
	f.l.Committed(notify.Commit{Tenant: tenant, Queue: queue, Partition: fmt.Sprintf("p%d", n), PartitionID: pid(n),
		Messages: count, Source: notify.Pushed})
}

func verdict(id string, kind ports.VerdictKind) ports.Verdict {
	return ports.Verdict{PartitionID: id, Kind: kind}
}

func TestMarkMakesReadyAndCheckOutServesIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{})
		f.register("q", "g")
		if tk := f.l.CheckOut(popReq("q", "g")); len(tk.Candidates()) != 0 {
			t.Fatalf("an empty ring served %v", tk.Candidates())
		} else {
			tk.CheckIn(nil, nil)
		}
		f.push("q", 1, 1)
		tk := f.l.CheckOut(popReq("q", "g"))
		if got := tk.Candidates(); !slices.Equal(got, []string{pid(1)}) {
			t.Fatalf("candidates %v, want [%s]", got, pid(1))
		}
		// While it is in flight, another pop does not get it.
		other := f.l.CheckOut(popReq("q", "g"))
		if len(other.Candidates()) != 0 {
			t.Fatalf("an in-flight partition was served twice: %v", other.Candidates())
		}
		other.CheckIn(nil, nil)
		tk.CheckIn([]ports.Verdict{verdict(pid(1), ports.VerdictEmpty)}, nil)
		// Empty with no mark since the check-out: cleared.
		again := f.l.CheckOut(popReq("q", "g"))
		if len(again.Candidates()) != 0 {
			t.Fatalf("an empty partition stayed: %v", again.Candidates())
		}
		again.CheckIn(nil, nil)
	})
}

// A push that commits between check-out and check-in must keep the entry: the empty
// verdict's compare-and-swap on the epoch fails, and the entry is re-appended.
func TestPushBetweenCheckOutAndCheckInKeepsTheEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{})
		f.register("q", "g")
		f.push("q", 1, 1)
		tk := f.l.CheckOut(popReq("q", "g"))
		f.push("q", 1, 1) // lands while SQL looks (and misses it)
		tk.CheckIn([]ports.Verdict{verdict(pid(1), ports.VerdictEmpty)}, nil)
		again := f.l.CheckOut(popReq("q", "g"))
		if got := again.Candidates(); !slices.Equal(got, []string{pid(1)}) {
			t.Fatalf("candidates %v: the racing push's partition was dropped", got)
		}
		again.CheckIn(nil, nil)
	})
}

func TestVerdicts(t *testing.T) {
	tests := []struct {
		name       string
		v          ports.Verdict
		lease      time.Duration // the verdict's lease expiry, from the check-in
		autoAck    bool
		readyAfter time.Duration // -1: not ready even after a minute
	}{
		{"skipped stays ready", ports.Verdict{Kind: ports.VerdictSkipped}, 0, false, 0},
		{"busy row is revisited", ports.Verdict{Kind: ports.VerdictBusy}, 0, false, 50 * time.Millisecond},
		{"gone is forgotten", ports.Verdict{Kind: ports.VerdictGone}, 0, false, -1},
		{"leased waits at most the park cap", ports.Verdict{Kind: ports.VerdictLeased}, time.Hour, false, time.Second},
		{"leased until an early expiry", ports.Verdict{Kind: ports.VerdictLeased}, 200 * time.Millisecond, false, 200 * time.Millisecond},
		{"took under a lease parks", ports.Verdict{Kind: ports.VerdictTook}, time.Hour, false, time.Second},
		{"took with autoAck, more left", ports.Verdict{Kind: ports.VerdictTook}, 0, true, 0},
		{"took with autoAck, drained", ports.Verdict{Kind: ports.VerdictTook, Drained: true}, 0, true, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFixture(t, Options{})
				f.register("q", "g")
				f.push("q", 1, 1)
				req := popReq("q", "g")
				req.AutoAck = tt.autoAck
				tk := f.l.CheckOut(req)
				v := tt.v
				v.PartitionID = pid(1)
				if tt.lease > 0 {
					v.LeaseExpires = time.Now().Add(tt.lease)
				}
				tk.CheckIn([]ports.Verdict{v}, nil)
				start := time.Now()
				for {
					tk := f.l.CheckOut(popReq("q", "g"))
					n := len(tk.Candidates())
					tk.CheckIn(nil, nil)
					if n == 1 {
						break
					}
					if tt.readyAfter < 0 && time.Since(start) > time.Minute {
						return // never ready again: as wanted
					}
					if tt.readyAfter >= 0 && time.Since(start) > tt.readyAfter {
						t.Fatalf("not ready %v after the check-in, want by %v", time.Since(start), tt.readyAfter)
					}
					time.Sleep(10 * time.Millisecond)
				}
				if tt.readyAfter < 0 {
					t.Fatalf("ready again after %v, want never", time.Since(start))
				}
				if d := time.Since(start); d > tt.readyAfter || (tt.readyAfter > 0 && d < tt.readyAfter-10*time.Millisecond) {
					t.Fatalf("ready after %v, want %v", d, tt.readyAfter)
				}
			})
		})
	}
}

// TestPromoteOnAck: an ack that releases the lease brings a partition with more work
// back at once; a drained one with no mark since its claim leaves the ring. A promote
// that is lost (the ack's call never comes) is recovered within the lease park cap.
func TestPromoteOnAck(t *testing.T) {
	tests := []struct {
		name       string
		drained    bool
		markAfter  bool // a push during the lease
		markDuring bool // a push between check-out and check-in (the claim's snapshot missed it)
		completed  bool
		ackCalled  bool
		ready      bool          // a candidate right after the ack
		readyBy    time.Duration // else: a candidate by then (0: never within a minute)
	}{
		{"drained, no push: cleared", true, false, false, true, true, false, 0},
		{"not drained: a backlog consumed in batches", false, false, false, true, true, true, 0},
		{"drained but pushed during the lease", true, true, false, true, true, true, 0},
		{"drained but pushed while the claim ran", true, false, true, true, true, true, 0},
		{"a failed ack makes it ready", true, false, false, false, true, true, 0},
		{"lost promote: back within the park cap", false, false, false, true, false, false, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFixture(t, Options{})
				f.register("q", "g")
				f.push("q", 1, 1)
				tk := f.l.CheckOut(popReq("q", "g"))
				if tt.markDuring {
					f.push("q", 1, 1)
				}
				tk.CheckIn([]ports.Verdict{{PartitionID: pid(1), Kind: ports.VerdictTook, Drained: tt.drained,
					LeaseExpires: time.Now().Add(time.Hour)}}, nil)
				if tt.markAfter {
					f.push("q", 1, 1)
				}
				if tt.ackCalled {
					f.l.Acked(tenant, "q", "g", pid(1), tt.completed)
				}
				tk = f.l.CheckOut(popReq("q", "g"))
				got := len(tk.Candidates()) == 1
				tk.CheckIn(nil, nil)
				if got != tt.ready {
					t.Fatalf("candidate right after the ack: %v, want %v", got, tt.ready)
				}
				if tt.readyBy == 0 {
					return
				}
				time.Sleep(tt.readyBy)
				tk = f.l.CheckOut(popReq("q", "g"))
				if len(tk.Candidates()) != 1 {
					t.Fatalf("not a candidate %v later", tt.readyBy)
				}
				tk.CheckIn(nil, nil)
			})
		})
	}
}

// A pop dropped between check-out and check-in (its ticket never checked in) leaves its
// candidates in flight; the reseed floor takes them back once they are older than
// Stranded.
func TestReseedReclaimsStrandedEntries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{Stranded: 10 * time.Second, Reseed: 5 * time.Second})
		f.register("q", "g")
		f.push("q", 1, 1)
		lost := f.l.CheckOut(popReq("q", "g"))
		if len(lost.Candidates()) != 1 {
			t.Fatal("no candidate")
		}
		time.Sleep(20 * time.Second) // floors ran meanwhile
		synctest.Wait()
		tk := f.l.CheckOut(popReq("q", "g"))
		if !slices.Equal(tk.Candidates(), []string{pid(1)}) {
			t.Fatalf("stranded entry not reclaimed: %v", tk.Candidates())
		}
		tk.CheckIn(nil, nil)
		if f.l.Stats().Reclaimed != 1 {
			t.Fatalf("reclaimed %d", f.l.Stats().Reclaimed)
		}
	})
}

// The drop guard: a ticket checked in with an error (the client left, the store failed)
// puts every candidate back.
func TestCheckInWithAnErrorPutsCandidatesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{})
		f.register("q", "g")
		for n := range 3 {
			f.push("q", n, 1)
		}
		tk := f.l.CheckOut(popReq("q", "g"))
		tk.CheckIn(nil, context.Canceled)
		again := f.l.CheckOut(popReq("q", "g"))
		if len(again.Candidates()) != 3 {
			t.Fatalf("%d candidates after a dropped pop, want 3", len(again.Candidates()))
		}
		again.CheckIn(nil, nil)
	})
}

func TestReseedFloorFindsWhatMarksMissed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{Reseed: 5 * time.Second, ReseedPage: 2})
		f.register("q", "g")
		// Five partitions got data the ring never heard of (another broker, a lost hint).
		f.store.set("q", "g", part(1), part(2), part(3), part(4), part(5))
		before := f.store.reseeds()
		time.Sleep(20 * time.Second) // first floor within 15 s of registration
		synctest.Wait()
		if f.store.reseeds() <= before {
			t.Fatal("the floor never ran")
		}
		tk := f.l.CheckOut(popReq("q", "g"))
		got := slices.Clone(tk.Candidates())
		slices.Sort(got)
		if want := []string{pid(1), pid(2), pid(3), pid(4), pid(5)}; !slices.Equal(got, want) {
			t.Fatalf("after the floor: %v, want %v (paged by 2)", got, want)
		}
		tk.CheckIn(nil, nil)
	})
}

func TestColdRingReseedsOpportunistically(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{Reseed: time.Hour, ReseedGap: time.Second})
		f.register("q", "g")
		f.store.set("q", "g", part(7))
		time.Sleep(2 * time.Second) // past the gap since the registration's reseed
		tk := f.l.CheckOut(popReq("q", "g"))
		tk.CheckIn(nil, nil) // cold: asks for a reseed
		synctest.Wait()
		tk = f.l.CheckOut(popReq("q", "g"))
		if !slices.Equal(tk.Candidates(), []string{pid(7)}) {
			t.Fatalf("after a cold pop: %v", tk.Candidates())
		}
		tk.CheckIn(nil, nil)
	})
}

func TestDeferrals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{WindowBatch: 5})
		f.store.delayed = 2 * time.Second
		f.register("delayed", "g")
		f.push("delayed", 1, 1)
		ready := func(queue string) bool {
			tk := f.l.CheckOut(popReq(queue, "g"))
			defer tk.CheckIn(nil, nil)
			return len(tk.Candidates()) > 0
		}
		if ready("delayed") {
			t.Fatal("a delayedProcessing partition is ready at once")
		}
		time.Sleep(2*time.Second + 299*time.Millisecond)
		if ready("delayed") {
			t.Fatal("ready before delay + 300 ms")
		}
		time.Sleep(2 * time.Millisecond)
		if !ready("delayed") {
			t.Fatal("not ready after delay + 300 ms")
		}

		f.store.delayed, f.store.window = 0, time.Second
		f.register("window", "g")
		f.push("window", 1, 1)
		if ready("window") {
			t.Fatal("a windowBuffer partition is ready before its window")
		}
		f.push("window", 1, 4) // the batch reaches WindowBatch: promoted early
		if !ready("window") {
			t.Fatal("a full batch did not promote the windowBuffer partition")
		}
		f.push("window", 2, 1)
		time.Sleep(time.Second + time.Millisecond)
		tk := f.l.CheckOut(popReq("window", "g"))
		if !slices.Contains(tk.Candidates(), pid(2)) {
			t.Fatal("not ready after its window")
		}
		// An empty claim on a deferral queue never clears: it is revisited within 1 s.
		vs := make([]ports.Verdict, len(tk.Candidates()))
		for j, id := range tk.Candidates() {
			vs[j] = verdict(id, ports.VerdictEmpty)
		}
		tk.CheckIn(vs, nil)
		time.Sleep(time.Second + time.Millisecond)
		tk = f.l.CheckOut(popReq("window", "g"))
		if len(tk.Candidates()) != 2 {
			t.Fatalf("empty claims on a deferral queue were not revisited: %v", tk.Candidates())
		}
		tk.CheckIn(nil, nil)
	})
}

func TestWakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{WakeTick: 5 * time.Millisecond})
		// A queue without any ring still wakes (a pop pinned to a partition parks on it).
		f.push("noring", 1, 1)
		time.Sleep(5 * time.Millisecond)
		synctest.Wait()
		if f.w.count() != 1 {
			t.Fatalf("%d wakes for a push to a queue without rings, want 1", f.w.count())
		}
		// Local pushes are coalesced: a hundred pushes to one partition within a tick
		// wake once.
		for range 100 {
			f.push("noring", 1, 1)
		}
		time.Sleep(5 * time.Millisecond)
		synctest.Wait()
		if f.w.count() != 2 {
			t.Fatalf("%d wakes, want 2", f.w.count())
		}
		// A transaction commit wakes at once.
		f.l.Committed(notify.Commit{Tenant: tenant, Queue: "noring", Partition: "p1", Source: notify.Transacted})
		if f.w.count() != 3 {
			t.Fatalf("%d wakes after a transaction, want 3", f.w.count())
		}
		// A peer's hint wakes at once too.
		f.l.Hinted([]ports.Hint{{Tenant: tenant, Queue: "noring", Partition: "p9", PartitionID: pid(9)}})
		if f.w.count() != 4 {
			t.Fatalf("%d wakes after a hint, want 4", f.w.count())
		}
	})
}

// A local push wakes at once when no wake of its queue is outstanding; the pushes that
// land before the woken pop checks out wait for the tick; a check-out makes the next
// push wake at once again.
func TestQuietMarkWakesAtOnceWhenNoWakeIsOutstanding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{WakeTick: 5 * time.Millisecond})
		f.register("q", "g")
		base := f.w.count()
		f.push("q", 1, 1)
		if got := f.w.count() - base; got != 1 {
			t.Fatalf("%d wakes right after a push to an idle queue, want 1 (at once)", got)
		}
		f.push("q", 2, 1)
		f.push("q", 3, 1)
		if got := f.w.count() - base; got != 1 {
			t.Fatalf("%d wakes while a woken pop has not looked, want 1", got)
		}
		time.Sleep(5 * time.Millisecond)
		synctest.Wait()
		if got := f.w.count() - base; got != 3 {
			t.Fatalf("%d wakes after the tick, want 3 (one per partition marked meanwhile)", got)
		}
		f.l.CheckOut(popReq("q", "g")).CheckIn(nil, nil)
		f.push("q", 4, 1)
		if got := f.w.count() - base; got != 4 {
			t.Fatalf("%d wakes after a check-out and a push, want 4 (at once)", got)
		}
		// A pop pinned to a partition looks too: after it, the next push wakes at once.
		f.push("q", 5, 1) // outstanding: to the tick
		if tk := f.l.CheckOut(ports.PopRequest{Tenant: tenant, Queue: "q", Group: "g", Partition: "p5", Batch: 1}); tk != nil {
			t.Fatalf("a pinned pop was served from the ring: %v", tk.Candidates())
		}
		f.push("q", 6, 1)
		if got := f.w.count() - base; got != 5 {
			t.Fatalf("%d wakes after a pinned pop and a push, want 5 (at once)", got)
		}
		if st := f.l.Stats(); st.WakesNow != 3 || st.WakesTick != 2 {
			t.Fatalf("wakes now %d, by the tick %d; want 3 and 2", st.WakesNow, st.WakesTick)
		}
	})
}

func TestDisabledIsOneBranch(t *testing.T) {
	t.Parallel()
	w := &wakes{}
	l := New(newFakeStore(), Options{Wake: w.wake})
	l.Start() // does nothing
	defer l.Stop()
	l.Committed(notify.Commit{Tenant: tenant, Queue: "q", Partition: "p", Source: notify.Pushed})
	if w.count() != 1 {
		t.Fatal("a commit with the hot-list off must wake at once")
	}
	if tk := l.CheckOut(popReq("q", "g")); tk != nil {
		t.Fatal("the hot-list off served a pop")
	}
	l.Scanned(popReq("q", "g"))
	l.Acked(tenant, "q", "g", pid(1), true)
	if st := l.Stats(); st.Queues != 0 {
		t.Fatalf("the hot-list off kept state: %+v", st)
	}
}

func TestPinnedAndDiscoveryPopsAreNotServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{})
		f.register("q", "g")
		pinned := popReq("q", "g")
		pinned.Partition = "p1"
		discovery := popReq("", "g")
		discovery.Namespace = "ns"
		for _, r := range []ports.PopRequest{pinned, discovery, popReq("q", "no-ring-yet")} {
			if tk := f.l.CheckOut(r); tk != nil {
				t.Fatalf("served %+v", r)
			}
		}
	})
}

func TestIdleSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{IdleSweep: time.Minute})
		f.register("q", "g")
		f.push("busy", 1, 1) // no ring: idle at once
		f.register("held", "g")
		f.push("held", 1, 1) // ready: never swept while it has work
		time.Sleep(2*time.Minute + time.Second)
		synctest.Wait()
		st := f.l.Stats()
		if st.Queues != 1 || st.Swept != 2 {
			t.Fatalf("after two sweeps: %d queues (want 1: the one with work), %d swept (want 2)", st.Queues, st.Swept)
		}
		// A ticket holds its queue: not swept while checked out, even when idle.
		tk := f.l.CheckOut(popReq("held", "g"))
		tk.CheckIn([]ports.Verdict{verdict(pid(1), ports.VerdictEmpty)}, nil)
		time.Sleep(2*time.Minute + time.Second)
		synctest.Wait()
		if st := f.l.Stats(); st.Queues != 0 {
			t.Fatalf("%d queues left after every ring went idle", st.Queues)
		}
	})
}

func TestGroupAndQueueDeletionDropRings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{})
		other := "00000000-0000-0000-0000-0000000000ff"
		f.register("a", "g")
		f.register("b", "g")
		f.l.Scanned(ports.PopRequest{Tenant: other, Queue: "a", Group: "g", Partitions: 1})
		synctest.Wait()
		f.l.DropGroup(tenant, "a", "g")
		if f.l.CheckOut(popReq("a", "g")) != nil {
			t.Fatal("ring of a deleted group on a served")
		}
		tk := f.l.CheckOut(popReq("b", "g"))
		if tk == nil {
			t.Fatal("deleting g on a dropped b's ring")
		}
		tk.CheckIn(nil, nil)
		f.l.DropGroupEverywhere(tenant, "g")
		if f.l.CheckOut(popReq("b", "g")) != nil {
			t.Fatal("ring survived the deletion everywhere")
		}
		tk = f.l.CheckOut(ports.PopRequest{Tenant: other, Queue: "a", Group: "g", Partitions: 1})
		if tk == nil {
			t.Fatal("another tenant's ring of the same group name was dropped")
		}
		tk.CheckIn(nil, nil)
		f.l.QueueChanged(notify.QueueChange{Tenant: other, Queue: "a", Deleted: true})
		if f.l.CheckOut(ports.PopRequest{Tenant: other, Queue: "a", Group: "g", Partitions: 1}) != nil {
			t.Fatal("a deleted queue's ring survived")
		}
	})
}

func TestCandidatesAreBoundedAndRoundRobin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{Shards: 4})
		f.register("q", "g")
		for n := range 1000 {
			f.push("q", n, 1)
		}
		req := popReq("q", "g")
		for _, tt := range []struct{ partitions, want int }{{1, 16}, {3, 24}, {100, 256}} {
			req.Partitions = tt.partitions
			tk := f.l.CheckOut(req)
			if n := len(tk.Candidates()); n != tt.want {
				t.Fatalf("partitions=%d: %d candidates, want %d", tt.partitions, n, tt.want)
			}
			tk.CheckIn(nil, nil)
		}
	})
}

func TestGroupChangedDropsRings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{})
		f.register("a", "g")
		f.register("b", "g")
		f.l.GroupChanged(notify.GroupChange{Tenant: tenant, Queue: "a", Group: "g", Partition: "p1", Kind: notify.GroupSeeked})
		if f.l.CheckOut(popReq("a", "g")) != nil {
			t.Fatal("a seek kept the group's ring on its queue")
		}
		tk := f.l.CheckOut(popReq("b", "g"))
		if tk == nil {
			t.Fatal("a seek on a dropped the ring on b")
		}
		tk.CheckIn(nil, nil)
		f.l.GroupChanged(notify.GroupChange{Tenant: tenant, Group: "g", Kind: notify.GroupDeleted})
		if f.l.CheckOut(popReq("b", "g")) != nil {
			t.Fatal("a deletion on every queue kept a ring")
		}
	})
}

// Entries nobody will clear (the consumers went away) do not pin a queue's state: after
// three untouched sweep periods it is dropped whatever its entries.
func TestIdleSweepDropsStaleQueues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, Options{IdleSweep: time.Minute})
		f.register("gone", "g")
		f.push("gone", 1, 1) // ready, and nobody pops any more
		time.Sleep(3*time.Minute + time.Second)
		synctest.Wait()
		if st := f.l.Stats(); st.Queues != 1 {
			t.Fatalf("%d queues after 3 sweeps (touched by the push first), want the queue kept", st.Queues)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if st := f.l.Stats(); st.Queues != 0 {
			t.Fatalf("%d queues: a queue untouched for three sweeps kept its state", st.Queues)
		}
	})
}

// The ready stage (core/stages) counts, per candidate, the time from the mark that made
// its partition ready to the pop that checked it out.
func TestReadyStageTimesMarkToCheckOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		timers := stages.New()
		f := newFixture(t, Options{Stages: timers})
		f.register("q", "g")
		f.push("q", 1, 1)
		time.Sleep(3 * time.Millisecond)
		tk := f.l.CheckOut(popReq("q", "g"))
		tk.CheckIn(nil, nil) // the candidate is ready again from now
		time.Sleep(time.Millisecond)
		f.l.CheckOut(popReq("q", "g")).CheckIn(nil, nil)
		if s := timers.Pop.Ready.Read(); s.Count != 2 || s.SumSeconds != 0.004 {
			t.Fatalf("ready stage: %d candidates, %v s; want 2 (3 ms, then 1 ms)", s.Count, s.SumSeconds)
		}
	})
}
