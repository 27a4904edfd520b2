package peers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queen-go/queen/core/hotlist"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/ports"
)

const tenant = ports.DefaultTenant

// fakeBus records published batches and lets a test deliver hints as a peer would.
type fakeBus struct {
	mu        sync.Mutex
	published [][]ports.Hint
	deliver   func([]ports.Hint)
	listening chan struct{}
	fail      error
}

func newFakeBus() *fakeBus { return &fakeBus{listening: make(chan struct{}, 10)} }

func (b *fakeBus) Publish(_ context.Context, hints []ports.Hint) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return b.fail
	}
	b.published = append(b.published, hints)
	return nil
}

func (b *fakeBus) Listen(ctx context.Context, deliver func([]ports.Hint)) error {
	b.mu.Lock()
	b.deliver = deliver
	b.mu.Unlock()
	b.listening <- struct{}{}
	<-ctx.Done()
	return ctx.Err()
}

// batches returns the published batches without their heartbeats (batches of nothing
// but a heartbeat left out).
func (b *fakeBus) batches() [][]ports.Hint {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out [][]ports.Hint
	for _, batch := range b.published {
		if hints := slices.DeleteFunc(slices.Clone(batch), func(h ports.Hint) bool { return h == heartbeat }); len(hints) > 0 {
			out = append(out, hints)
		}
	}
	return out
}

// heartbeats counts the published heartbeats.
func (b *fakeBus) heartbeats() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, batch := range b.published {
		for _, h := range batch {
			if h == heartbeat {
				n++
			}
		}
	}
	return n
}

// peer delivers, as another broker would, its heartbeat, once the Mesh listens.
func (b *fakeBus) peer() {
	<-b.listening
	b.mu.Lock()
	deliver := b.deliver
	b.mu.Unlock()
	deliver([]ports.Hint{heartbeat})
}

func commit(queue, partition string) notify.Commit {
	return notify.Commit{Tenant: tenant, Queue: queue, Partition: partition, PartitionID: "id-" + partition,
		Messages: 1, Source: notify.Pushed}
}

func TestCommitsAreCoalescedIntoOneBatchPerTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := newFakeBus()
		m := New(bus, hotlist.New(nil, hotlist.Options{}), Options{Enabled: true, Tick: 5 * time.Millisecond})
		m.Start()
		defer m.Stop()
		synctest.Wait() // the publisher sent its first heartbeat and waits for the next
		bus.peer()
		synctest.Wait() // it heard the peer and waits for its tick
		for range 1000 {
			m.Committed(commit("q", "p1"))
		}
		m.Committed(commit("q", "p2"))
		time.Sleep(5 * time.Millisecond)
		synctest.Wait()
		got := bus.batches()
		if len(got) != 1 || len(got[0]) != 2 {
			t.Fatalf("batches %v, want one batch of two hints", got)
		}
		time.Sleep(50 * time.Millisecond) // idle ticks publish nothing
		synctest.Wait()
		if len(bus.batches()) != 1 {
			t.Fatalf("%d batches after idle ticks", len(bus.batches()))
		}
		if st := m.Stats(); st.Sent != 2 || st.Batches != 1 || !st.Peers {
			t.Fatalf("stats %+v", st)
		}
	})
}

// Alone on its database a broker publishes no hints, only its heartbeat, once a
// Heartbeat; hints start when a peer is heard and stop PeerTTL after it was last heard.
func TestHintsOnlyWhilePeersListen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := newFakeBus()
		m := New(bus, hotlist.New(nil, hotlist.Options{}), Options{Enabled: true, Tick: 5 * time.Millisecond,
			Heartbeat: time.Second})
		m.Start()
		defer m.Stop()
		<-bus.listening
		for i := range 2500 { // 2.5 s of commits, a millisecond apart, and nobody listening
			m.Committed(commit("q", fmt.Sprint("p", i)))
			time.Sleep(time.Millisecond)
		}
		synctest.Wait()
		if got, beats := bus.batches(), bus.heartbeats(); len(got) != 0 || beats != 3 {
			t.Fatalf("alone: %d batches of hints, %d heartbeats; want none and 3 (at 0, 1 and 2 s)", len(got), beats)
		}
		if st := m.Stats(); st.Peers || st.Heartbeats != 3 || st.Sent != 0 {
			t.Fatalf("alone: stats %+v", st)
		}
		bus.mu.Lock()
		deliver := bus.deliver
		bus.mu.Unlock()
		deliver([]ports.Hint{heartbeat}) // a peer starts
		m.Committed(commit("q", "a"))
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		if got := bus.batches(); len(got) != 1 || got[0][0].Partition != "a" {
			t.Fatalf("with a peer: batches %v, want [[a]]", got)
		}
		time.Sleep(3 * time.Second) // the peer went quiet: PeerTTL later, no more hints
		m.Committed(commit("q", "b"))
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		if got := bus.batches(); len(got) != 1 {
			t.Fatalf("peer gone: batches %v, want only [[a]]", got)
		}
	})
}

func TestPendingHintsAreBounded(t *testing.T) {
	t.Parallel()
	m := New(newFakeBus(), hotlist.New(nil, hotlist.Options{}), Options{Enabled: true, MaxPending: 3})
	m.deliver([]ports.Hint{heartbeat}) // a peer listens
	for _, p := range []string{"a", "b", "c", "d", "e", "a"} {
		m.Committed(commit("q", p))
	}
	if st := m.Stats(); st.Dropped != 2 {
		t.Fatalf("dropped %d, want 2 (d and e; a again is not new)", st.Dropped)
	}
}

// Received hints reach the hot-list (here off: it wakes the parked pops at once) and are
// never published again.
func TestReceivedHintsWakeAndAreNotSentOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := newFakeBus()
		var mu sync.Mutex
		var woken []string
		hot := hotlist.New(nil, hotlist.Options{Wake: func(key, partition string) {
			mu.Lock()
			woken = append(woken, partition)
			mu.Unlock()
		}})
		m := New(bus, hot, Options{Enabled: true})
		m.Start()
		defer m.Stop()
		<-bus.listening
		bus.mu.Lock()
		deliver := bus.deliver
		bus.mu.Unlock()
		deliver([]ports.Hint{{Tenant: tenant, Queue: "q", Partition: "p9", PartitionID: "id-p9"}, heartbeat})
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(woken) != 1 || woken[0] != "p9" {
			t.Fatalf("woken %v, want [p9]", woken)
		}
		if len(bus.batches()) != 0 {
			t.Fatalf("a received hint was sent on: %v", bus.batches())
		}
		if m.Stats().Received != 1 {
			t.Fatalf("received %d", m.Stats().Received)
		}
	})
}

// A failing listener is listened again, with back-off; a failing publish drops its batch.
func TestFailuresAreRetriedOrDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := &flakyBus{fakeBus: newFakeBus()}
		m := New(bus, hotlist.New(nil, hotlist.Options{}), Options{Enabled: true, Backoff: time.Second})
		m.Start()
		defer m.Stop()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if n := bus.listens(); n < 3 || n > 5 {
			t.Fatalf("%d listens in 10 s with back-off 1, 2, 4 s", n)
		}
		bus.fakeBus.mu.Lock()
		bus.fakeBus.fail = errors.New("connection refused")
		bus.fakeBus.mu.Unlock()
		m.deliver([]ports.Hint{heartbeat}) // a peer heard before this broker's listener failed
		m.Committed(commit("q", "p1"))
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		if st := m.Stats(); st.Failures != 1 || st.Sent != 0 {
			t.Fatalf("stats %+v after a failed publish", st)
		}
	})
}

type flakyBus struct {
	*fakeBus
	mu sync.Mutex
	n  int
}

func (b *flakyBus) Listen(ctx context.Context, _ func([]ports.Hint)) error {
	b.mu.Lock()
	b.n++
	b.mu.Unlock()
	return errors.New("listen failed")
}

func (b *flakyBus) listens() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

// A queue change this broker made is published at once, in a batch of its own, whether
// or not a peer was heard and whether or not the commit hints are on; a change heard
// from another broker is not.
func TestQueueChangesArePublishedAtOnce(t *testing.T) {
	tests := []struct {
		name    string
		enabled bool
	}{
		{"commit hints on", true},
		{"commit hints off", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				bus := newFakeBus()
				m := New(bus, hotlist.New(nil, hotlist.Options{}), Options{Enabled: tt.enabled, Heartbeat: time.Hour})
				m.Start()
				defer m.Stop()
				<-bus.listening
				synctest.Wait() // alone: the publisher sleeps until the next heartbeat, an hour away
				m.Committed(commit("q", "p"))
				m.QueueChanged(notify.QueueChange{Tenant: tenant, Queue: "q"})
				m.QueueChanged(notify.QueueChange{Tenant: tenant, Queue: "r", Deleted: true})
				m.QueueChanged(notify.QueueChange{Tenant: tenant, Queue: "s", Remote: true})
				synctest.Wait() // no time passes: the change went out without a tick
				want := [][]ports.Hint{{{Tenant: tenant, Queue: "q", Kind: ports.HintQueueConfigured},
					{Tenant: tenant, Queue: "r", Kind: ports.HintQueueDeleted}}}
				if got := bus.batches(); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("published %v, want %v (no commit hint: no peer heard)", got, want)
				}
				if st := m.Stats(); st.ChangesSent != 2 || st.Sent != 0 {
					t.Fatalf("stats %+v", st)
				}
			})
		})
	}
}

// Queue changes from another broker are announced on this broker's topic, marked
// Remote, and not published again; its commit hints reach the hot-list only with the
// commit hints on.
func TestReceivedQueueChangesAreAnnouncedHere(t *testing.T) {
	tests := []struct {
		name    string
		enabled bool
		woken   int
	}{
		{"commit hints on", true, 1},
		{"commit hints off", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				bus := newFakeBus()
				var mu sync.Mutex
				var heard []notify.QueueChange
				woken := 0
				changes := notify.NewQueueChanges()
				changes.Subscribe(func(c notify.QueueChange) {
					mu.Lock()
					heard = append(heard, c)
					mu.Unlock()
				})
				hot := hotlist.New(nil, hotlist.Options{Wake: func(string, string) {
					mu.Lock()
					woken++
					mu.Unlock()
				}})
				m := New(bus, hot, Options{Enabled: tt.enabled, Changes: changes})
				changes.Subscribe(m.QueueChanged) // as wired: it must not echo what it announces
				m.Start()
				defer m.Stop()
				<-bus.listening
				bus.mu.Lock()
				deliver := bus.deliver
				bus.mu.Unlock()
				deliver([]ports.Hint{{Tenant: tenant, Queue: "q", Kind: ports.HintQueueConfigured}, heartbeat,
					{Tenant: tenant, Queue: "q", Partition: "p", PartitionID: "id-p"},
					{Tenant: tenant, Queue: "r", Kind: ports.HintQueueDeleted}})
				time.Sleep(50 * time.Millisecond)
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				want := []notify.QueueChange{{Tenant: tenant, Queue: "q", Remote: true},
					{Tenant: tenant, Queue: "r", Deleted: true, Remote: true}}
				if !slices.Equal(heard, want) {
					t.Fatalf("announced %v, want %v", heard, want)
				}
				if woken != tt.woken {
					t.Fatalf("%d pops woken by the commit hint, want %d", woken, tt.woken)
				}
				if got := bus.batches(); len(got) != 0 {
					t.Fatalf("received changes were published again: %v", got)
				}
				if st := m.Stats(); st.ChangesReceived != 2 || st.ChangesSent != 0 {
					t.Fatalf("stats %+v", st)
				}
			})
		})
	}
}
