package drain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/core/spool/spooltest"
	"github.com/queen-go/queen/ports"
)

const tenant = ports.DefaultTenant

// pinger answers pings while up is true.
type pinger struct{ up atomic.Bool }

func (p *pinger) Ping(context.Context) error {
	if p.up.Load() {
		return nil
	}
	return ports.ErrUnavailable
}

type fixture struct {
	store *memory.Store
	codec *segment.Codec
	sp    *spool.Spool
	ping  *pinger
	d     *Drainer
}

// pieces are a memory store behind a running batcher and a running spool on fsys,
// stopped at the test's end: what every drainer of these tests replays with.
type pieces struct {
	store *memory.Store
	codec *segment.Codec
	b     *fusion.Batcher
	sp    *spool.Spool
}

func newPieces(t *testing.T, fsys *memory.SpoolFS, opts spool.Options) pieces {
	t.Helper()
	codec, err := segment.NewCodec(3)
	if err != nil {
		t.Fatal(err)
	}
	store := memory.NewStore()
	b := fusion.New(store, codec, fusion.Options{})
	b.Start()
	t.Cleanup(func() { _ = b.Stop(context.Background()) })
	return pieces{store: store, codec: codec, b: b, sp: spooltest.Open(t, fsys, opts)}
}

// newFixture spools n records of queue q over partitions p0..p(parts-1), in sequence.
func newFixture(t *testing.T, q string, n, parts int, opts Options) *fixture {
	t.Helper()
	pc := newPieces(t, memory.NewSpoolFS(), spool.Options{EventsPerFile: 7}) // several files
	store, codec, b, sp := pc.store, pc.codec, pc.b, pc.sp
	for i := range n {
		if err := sp.Append(context.Background(), []spool.Record{{Tenant: tenant, Queue: q,
			Partition: fmt.Sprintf("p%d", i%parts), TransactionID: fmt.Sprintf("t%d", i), MessageID: [16]byte{byte(i), 7},
			Payload: fmt.Appendf(nil, `{"seq":%d}`, i)}}); err != nil {
			t.Fatal(err)
		}
	}
	ping := &pinger{}
	ping.up.Store(true)
	opts.Ping = ping
	if opts.Backoff == 0 && opts.MaxBackoff == 0 {
		opts.Backoff, opts.MaxBackoff = time.Millisecond, 5*time.Millisecond
	}
	return &fixture{store: store, codec: codec, sp: sp, ping: ping, d: New(sp, b, opts)}
}

// seqs returns the payload sequence numbers stored in a partition, in offset order.
func (f *fixture) seqs(t *testing.T, q, part string) []string {
	t.Helper()
	var out []string
	for _, sg := range f.store.Segments(tenant, q, part) {
		frames, err := f.codec.Decode(sg.Blob)
		if err != nil {
			t.Fatal(err)
		}
		for _, fr := range frames {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(string(fr.Payload), `{"seq":`), "}"))
		}
	}
	return out
}

func TestUntilReplaysInOrderAndIdempotently(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "q", 40, 3, Options{MaxBatch: 9})
	sum, err := f.d.Until(context.Background(), time.Now().Add(10*time.Second))
	if err != nil || sum.Replayed != 40 || sum.Duplicates != 0 || sum.Remaining != 0 {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	want := map[string]string{"p0": "0 3 6 9 12 15 18 21 24 27 30 33 36 39", "p1": "1 4 7 10 13 16 19 22 25 28 31 34 37",
		"p2": "2 5 8 11 14 17 20 23 26 29 32 35 38"}
	for p, w := range want {
		if got := strings.Join(f.seqs(t, "q", p), " "); got != w {
			t.Fatalf("%s: %s, want %s", p, got, w)
		}
	}
	// The same records again (a crash before the position reached the disk): duplicates.
	for i := range 3 {
		_ = f.sp.Append(context.Background(), []spool.Record{{Tenant: tenant, Queue: "q", Partition: fmt.Sprintf("p%d", i),
			TransactionID: fmt.Sprintf("t%d", i), Payload: []byte(`{"seq":0}`)}})
	}
	sum, err = f.d.Until(context.Background(), time.Now().Add(10*time.Second))
	if err != nil || sum.Duplicates != 3 || sum.Replayed != 40 {
		t.Fatalf("replaying stored records: %+v, %v", sum, err)
	}
}

func TestTransientFailuresKeepThePosition(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "q", 20, 2, Options{MaxBatch: 5})
	var calls atomic.Int32
	f.ping.up.Store(false)
	f.store.BeforePush = func([]ports.Segment) error {
		if calls.Add(1) <= 4 {
			return ports.ErrUnavailable
		}
		f.ping.up.Store(true)
		return nil
	}
	sum, err := f.d.Until(context.Background(), time.Now().Add(10*time.Second))
	if err != nil || sum.Replayed != 20 || sum.Quarantined != 0 {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	if got := strings.Join(f.seqs(t, "q", "p1"), " "); got != "1 3 5 7 9 11 13 15 17 19" {
		t.Fatalf("p1 after retries: %s", got)
	}
	if !f.d.Healthy() {
		t.Fatal("still unhealthy after a successful replay")
	}
}

func TestAPoisonRecordIsQuarantinedNotDropped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "q", 10, 1, Options{MaxBatch: 10, Permanent: 2})
	f.store.BeforePush = func(segs []ports.Segment) error {
		for _, sg := range segs {
			frames, _ := f.codec.Decode(sg.Blob)
			for _, fr := range frames {
				if fr.TransactionID == "t4" {
					return errors.New("rejected: bad record")
				}
			}
		}
		return nil
	}
	sum, err := f.d.Until(context.Background(), time.Now().Add(10*time.Second))
	if err != nil || sum.Replayed != 9 || sum.Quarantined != 1 || sum.Remaining != 0 {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	if got := strings.Join(f.seqs(t, "q", "p0"), " "); got != "0 1 2 3 5 6 7 8 9" {
		t.Fatalf("stored %s", got)
	}
	if st := f.sp.Stats(); st.Quarantined != 1 {
		t.Fatalf("spool stats %+v", st)
	}
}

func TestUntilStopsAtTheDeadline(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "q", 10, 1, Options{})
	f.ping.up.Store(false)
	f.store.BeforePush = func([]ports.Segment) error { return ports.ErrUnavailable }
	sum, err := f.d.Until(context.Background(), time.Now().Add(50*time.Millisecond))
	if err == nil || sum.Remaining != 10 || sum.Replayed != 0 {
		t.Fatalf("database away: %+v, %v (want an error and everything left)", sum, err)
	}
}

// Replay waits while push maintenance is on (Paused) and while pushes are held out of
// the database (Held), and resumes, in order, when it ends.
func TestRunPausesAndResumes(t *testing.T) {
	for _, by := range []string{"paused", "held"} {
		t.Run(by, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var stopped atomic.Bool
				stopped.Store(true)
				opts := Options{Interval: time.Millisecond}
				if by == "paused" {
					opts.Paused = stopped.Load
				} else {
					opts.Held = stopped.Load
				}
				f := newFixture(t, "q", 5, 1, opts)
				f.d.Start()
				defer f.d.Stop()
				time.Sleep(30 * time.Millisecond) // fake time: thirty idle re-checks
				synctest.Wait()
				if n := len(f.seqs(t, "q", "p0")); n != 0 {
					t.Fatalf("%d records replayed while %s", n, by)
				}
				stopped.Store(false)
				for deadline := time.Now().Add(5 * time.Second); !f.sp.Empty(); time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("spool not drained after resuming")
					}
				}
				if got := strings.Join(f.seqs(t, "q", "p0"), " "); got != "0 1 2 3 4" {
					t.Fatalf("after resuming: %s", got)
				}
			})
		})
	}
}

// After an outage long enough for the backoff to reach MaxBackoff, replay resumes within
// about one Probe of the database answering again, not after the rest of a 5 s backoff.
func TestReplayResumesSoonAfterTheDatabaseReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, "q", 5, 1, Options{Interval: time.Millisecond, Backoff: 100 * time.Millisecond,
			MaxBackoff: 5 * time.Second, Probe: 250 * time.Millisecond})
		var away atomic.Bool
		away.Store(true)
		f.ping.up.Store(false)
		f.store.BeforePush = func([]ports.Segment) error {
			if away.Load() {
				return ports.ErrUnavailable
			}
			return nil
		}
		f.d.Start()
		defer f.d.Stop()
		time.Sleep(20 * time.Second) // fake time: the backoff grew to MaxBackoff
		synctest.Wait()
		if !f.d.Healthy() && f.sp.Empty() {
			t.Fatal("the spool was replayed while the database was away")
		}
		back := time.Now()
		away.Store(false)
		f.ping.up.Store(true)
		for deadline := back.Add(time.Minute); !f.sp.Empty(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("spool not drained after the database came back")
			}
		}
		if took := time.Since(back); took > 300*time.Millisecond {
			t.Fatalf("replay resumed %v after the database answered again, want within one Probe (250ms)", took)
		}
	})
}

func TestUnhealthyUntilTheDatabaseAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, "q", 0, 1, Options{Interval: time.Millisecond})
		f.ping.up.Store(false)
		f.d.Unhealthy()
		f.d.Start()
		defer f.d.Stop()
		time.Sleep(20 * time.Millisecond) // fake time: several failed pings
		synctest.Wait()
		if f.d.Healthy() {
			t.Fatal("healthy while pings fail")
		}
		f.ping.up.Store(true)
		for deadline := time.Now().Add(5 * time.Second); !f.d.Healthy(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("never healthy again after the database came back")
			}
		}
	})
}

// A batch that kept failing with the database up is taken apart record by record; if
// the database goes away meanwhile, the records failing then are not poison: they stay
// spooled instead of being quarantined.
func TestNoQuarantineWhileTheDatabaseIsAway(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "q", 10, 1, Options{MaxBatch: 10, Permanent: 2})
	var calls atomic.Int32
	f.store.BeforePush = func([]ports.Segment) error {
		switch n := calls.Add(1); {
		case n <= 2: // the whole batch fails twice with the database up: isolate
			return errors.New("statement timeout")
		case n <= 8: // then the database goes away
			f.ping.up.Store(false)
			return ports.ErrUnavailable
		default:
			f.ping.up.Store(true)
			return nil
		}
	}
	sum, err := f.d.Until(context.Background(), time.Now().Add(10*time.Second))
	if err != nil || sum.Replayed != 10 || sum.Quarantined != 0 || sum.Remaining != 0 {
		t.Fatalf("summary %+v, %v (want every record replayed, none quarantined)", sum, err)
	}
	if got := strings.Join(f.seqs(t, "q", "p0"), " "); got != "0 1 2 3 4 5 6 7 8 9" {
		t.Fatalf("stored %s", got)
	}
}

// TestPartialFailureResendsOnlyTheRest: when some partitions' bundles of a step commit
// and others fail, the retry sends only what failed; with dedup off (window 0) a resent
// record would be stored twice.
func TestPartialFailureResendsOnlyTheRest(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "q", 64, 8, Options{MaxBatch: 100})
	f.store.SetWindow(tenant, "q", 0)
	var failures atomic.Int32
	f.store.BeforePush = func(segs []ports.Segment) error {
		for _, sg := range segs {
			if sg.Partition == "p3" && failures.Add(1) <= 2 {
				return errors.New("this bundle fails")
			}
		}
		return nil
	}
	sum, err := f.d.Until(context.Background(), time.Now().Add(10*time.Second))
	if err != nil || sum.Replayed != 64 || sum.Remaining != 0 {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	for p := range 8 {
		if got := f.seqs(t, "q", fmt.Sprintf("p%d", p)); len(got) != 8 {
			t.Fatalf("p%d stored %d records (%v), want 8 exactly", p, len(got), got)
		}
	}
}
