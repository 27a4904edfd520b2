package push

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/core/spool/spooltest"
	"github.com/queen-go/queen/internal/syncbuf"
	"github.com/queen-go/queen/ports"
)

// spoolFixture is a push service whose bundles can be failed and whose spool sits on a
// fault-injecting file system.
func spoolFixture(t *testing.T, divert *atomic.Bool) (*fixture, *memory.SpoolFS, *spool.Spool, *atomic.Int32) {
	t.Helper()
	fsys := memory.NewSpoolFS()
	sp := spooltest.Open(t, fsys, spool.Options{})
	failed := new(atomic.Int32)
	f := newFixture(t, Options{Spool: sp, Divert: divert.Load, BundleFailed: func() { failed.Add(1) }})
	return f, fsys, sp, failed
}

func statuses(res []Result) string {
	s := ""
	for _, r := range res {
		s += string(r.Status) + " "
	}
	return s
}

func TestFailedBundlesAreSpooled(t *testing.T) {
	t.Parallel()
	var divert atomic.Bool
	f, _, sp, failed := spoolFixture(t, &divert)
	f.store.BeforePush = func([]ports.Segment) error { return ports.ErrUnavailable }
	res := f.svc.Push(context.Background(), tenant, "", []Item{
		{Queue: "q", Partition: "a", Payload: []byte(`1`), TransactionID: "x"},
		{Queue: "q", Partition: "a", Payload: []byte(`2`), TransactionID: "x"}, // a follower: buffered too
		{Queue: "q", Partition: "b", Payload: []byte(`3`)},
	})
	if got := statuses(res); got != "buffered buffered buffered " {
		t.Fatalf("statuses %s", got)
	}
	if st := sp.Stats(); st.PendingRecords != 2 || failed.Load() == 0 {
		t.Fatalf("spooled %d records (want 2: the follower is not stored twice), BundleFailed %d", st.PendingRecords, failed.Load())
	}
	// The database is back, but partition a still has spooled records: a new push to it
	// goes behind them; partition c has none and commits.
	f.store.BeforePush = nil
	res = f.svc.Push(context.Background(), tenant, "", []Item{
		{Queue: "q", Partition: "a", Payload: []byte(`4`)},
		{Queue: "q", Partition: "c", Payload: []byte(`5`)},
	})
	if got := statuses(res); got != "buffered queued " {
		t.Fatalf("after recovery: %s", got)
	}
}

func TestDivertSpoolsWithoutTryingTheDatabase(t *testing.T) {
	t.Parallel()
	var divert atomic.Bool
	divert.Store(true)
	f, _, sp, _ := spoolFixture(t, &divert)
	var bundles atomic.Int32
	f.store.BeforePush = func([]ports.Segment) error { bundles.Add(1); return nil }
	res := f.svc.Push(context.Background(), tenant, "", []Item{{Queue: "q", Payload: []byte(`1`)}, {Queue: "r", Payload: []byte(`2`)}})
	if got := statuses(res); got != "buffered buffered " || bundles.Load() != 0 || sp.Stats().PendingRecords != 2 {
		t.Fatalf("statuses %s, bundles %d, spooled %d", got, bundles.Load(), sp.Stats().PendingRecords)
	}
}

// TestFullDiskAnswersFailed: when the spool cannot make the items durable, they are
// failed, never buffered (buffered promises the record is on disk).
func TestFullDiskAnswersFailed(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"write", "sync"} {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			var divert atomic.Bool
			f, fsys, sp, _ := spoolFixture(t, &divert)
			var logs syncbuf.Buffer
			f.svc.opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			f.store.BeforePush = func([]ports.Segment) error { return ports.ErrUnavailable }
			fsys.SetFault(func(o, _ string) error {
				if o == op || o == "create" {
					return syscall.ENOSPC
				}
				return nil
			}, true)
			res := f.svc.Push(context.Background(), tenant, "", []Item{{Queue: "q", Payload: []byte(`1`)}, {Queue: "q", Payload: []byte(`2`)}})
			if got := statuses(res); got != "failed failed " {
				t.Fatalf("statuses %s", got)
			}
			divert.Store(true)
			res = f.svc.Push(context.Background(), tenant, "", []Item{{Queue: "q", Partition: "other", Payload: []byte(`3`)}})
			if got := statuses(res); got != "failed " {
				t.Fatalf("diverted push on a full disk: %s", got)
			}
			// Two failed writes, one error line: the rest wait for spoolLogEvery.
			if n := strings.Count(logs.String(), "spool write failed"); n != 1 {
				t.Fatalf("%d log lines for two failed spool writes, want 1:\n%s", n, logs.String())
			}
			// Space again: the spool works and nothing of the failed pushes is in it.
			fsys.SetFault(nil, false)
			res = f.svc.Push(context.Background(), tenant, "", []Item{{Queue: "q", Partition: "later", Payload: []byte(`4`)}})
			if got := statuses(res); got != "buffered " {
				t.Fatalf("after the disk recovered: %s", got)
			}
			b, err := sp.Next(100)
			if err != nil || b == nil || len(b.Records) != 1 || string(b.Records[0].Payload) != "4" {
				t.Fatalf("spool content %+v, %v", b, err)
			}
		})
	}
}

// TestTransactionWaitsForSpooledPushes: a transaction may not overtake the spooled pushes
// of a partition it writes to.
func TestTransactionWaitsForSpooledPushes(t *testing.T) {
	t.Parallel()
	var divert atomic.Bool
	divert.Store(true)
	f, _, _, _ := spoolFixture(t, &divert)
	f.svc.opts.Codec, f.svc.opts.Transactions = f.codec, refuseTxn{t}
	if got := statuses(f.svc.Push(context.Background(), tenant, "", []Item{{Queue: "q", Partition: "a", Payload: []byte(`1`)}})); got != "buffered " {
		t.Fatalf("push: %s", got)
	}
	_, err := f.svc.Transaction(context.Background(), tenant, "", []TxnOp{{Push: &TxnPush{Item: Item{Queue: "q", Partition: "a", Payload: []byte(`2`)}}}}, "")
	if !errors.Is(err, ErrSpooledAhead) {
		t.Fatalf("transaction behind spooled pushes: %v, want ErrSpooledAhead", err)
	}
}

// refuseTxn is a transaction store that must not be reached.
type refuseTxn struct{ t *testing.T }

func (r refuseTxn) Transaction(context.Context, []ports.Segment, []ports.AckItem, string) ([]ports.SegmentResult, []ports.AckResult, error) {
	r.t.Error("the transaction reached the store")
	return nil, nil, errors.New("refused")
}

// TestOnlyOutagesDivert: every failed bundle's frames are spooled, but only a failure
// that says the database is away (unreachable, too slow) reports an outage, which
// spools every push until it answers again; a bundle the store gave up on after
// concurrent deletions of its queue (ports.ErrConflict) is no outage.
func TestOnlyOutagesDivert(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		err    error
		outage bool
	}{
		{"unreachable", ports.ErrUnavailable, true},
		{"statement timeout", ports.ErrTimeout, true},
		{"collided with deletions every run", ports.ErrConflict, false},
		{"a broker bug", ports.ErrInvalid, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var divert atomic.Bool
			f, _, sp, failed := spoolFixture(t, &divert)
			f.store.BeforePush = func([]ports.Segment) error { return tt.err }
			res := f.svc.Push(context.Background(), tenant, "", []Item{{Queue: "q", Payload: []byte(`1`)}})
			if got := statuses(res); got != "buffered " || sp.Stats().PendingRecords != 1 {
				t.Fatalf("statuses %s, spooled %d: want the frame buffered", got, sp.Stats().PendingRecords)
			}
			if got := failed.Load() > 0; got != tt.outage {
				t.Fatalf("BundleFailed called: %v, want %v", got, tt.outage)
			}
		})
	}
}
