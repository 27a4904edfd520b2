package spool

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// These tests need what only the in-memory file system can do: a power loss while an
// fsync is held, injected I/O errors, counted fsyncs. The scenarios a real directory can
// reproduce (torn tails, corrupt records, process death, quarantine, reopening) are in
// the spooltest suite, run here over memory (suite_test.go) and by adapters/spoolfs over
// a real directory.

// rec returns a distinct record for partition part; i is in its transaction id and
// payload.
func rec(i int, part string) Record {
	r := Record{
		Tenant:        ports.DefaultTenant,
		Queue:         "orders",
		Partition:     part,
		TransactionID: fmt.Sprintf("txn-%06d", i),
		Payload:       []byte(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", i%7))),
		Encrypted:     i%3 == 0,
	}
	r.MessageID[0], r.MessageID[15] = byte(i), byte(i>>8)
	if i%2 == 0 {
		r.HasTrace = true
		r.TraceID[3] = byte(i)
	}
	if i%5 == 0 {
		r.ProducerSub = "user-" + part
	}
	return r
}

func recs(from, n int, part string) []Record {
	out := make([]Record, n)
	for i := range out {
		out[i] = rec(from+i, part)
	}
	return out
}

func open(t *testing.T, m *memFS, opts Options) *Spool {
	t.Helper()
	s, err := Open(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func appendAll(t *testing.T, s *Spool, rs ...Record) {
	t.Helper()
	if err := s.Append(context.Background(), rs); err != nil {
		t.Fatal(err)
	}
}

// drain replays everything in batches of limit and returns the records in order.
func drain(t *testing.T, s *Spool, limit int) []Record {
	t.Helper()
	var out []Record
	for {
		b, err := s.Next(limit)
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			return out
		}
		if len(b.Records) == 0 || len(b.Records) > limit {
			t.Fatalf("batch of %d records with limit %d", len(b.Records), limit)
		}
		out = append(out, b.Records...)
		if err := s.Commit(b); err != nil {
			t.Fatal(err)
		}
	}
}

func sameRecords(t *testing.T, got, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d: %v", len(got), len(want), txns(got))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("record %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func txns(rs []Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.TransactionID
	}
	return out
}

func TestGroupCommit(t *testing.T) {
	t.Parallel()
	m := newMemFS()
	m.setSyncHook(slowSync(2 * time.Millisecond))
	s := open(t, m, Options{})
	const appenders, each = 64, 5
	var wg sync.WaitGroup
	for g := range appenders {
		wg.Go(func() {
			for k := range each {
				if err := s.Append(context.Background(), []Record{rec(g*each+k, fmt.Sprint("p", g))}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	st := s.Stats()
	t.Logf("%d appends, %d fsyncs", st.Appended, st.Fsyncs)
	if st.Appended != appenders*each || st.Fsyncs >= st.Appended/4 {
		t.Fatalf("group commit did not group: %+v", st)
	}
	got := drain(t, s, 100)
	seen := map[string]int{}
	last := map[string]string{}
	for _, r := range got {
		seen[r.TransactionID]++
		// Per-partition order: each appender appends sequentially.
		if prev := last[r.Partition]; prev != "" && prev >= r.TransactionID {
			t.Fatalf("partition %s out of order: %s after %s", r.Partition, r.TransactionID, prev)
		}
		last[r.Partition] = r.TransactionID
	}
	if len(got) != appenders*each || len(seen) != appenders*each {
		t.Fatalf("replayed %d records, %d distinct", len(got), len(seen))
	}
}

func TestCrashAfterAppend(t *testing.T) {
	t.Parallel()
	m := newMemFS()
	s, err := Open(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { _ = s.Close() })
	acked := recs(0, 10, "p")
	for i := range acked {
		appendAll(t, s, acked[i])
	}
	// An Append held inside its fsync when the power goes.
	inSync, release := make(chan struct{}), make(chan struct{})
	m.setSyncHook(func(string) { close(inSync); <-release })
	errc := make(chan error, 1)
	go func() { errc <- s.Append(context.Background(), recs(100, 3, "p")) }()
	<-inSync
	crashed := m.crash()
	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err) // the live process saw its fsync complete
	}

	s2 := open(t, crashed, Options{})
	if st := s2.Stats(); st.PendingRecords != 10 || st.PendingFiles != 1 {
		t.Fatalf("after the crash %+v", st)
	}
	sameRecords(t, drain(t, s2, 4), acked)
	if got := s2.Stats().CorruptRecords; got != 0 {
		t.Fatalf("a torn tail was counted corrupt: %d", got)
	}
}

func TestFullDisk(t *testing.T) {
	t.Parallel()
	// fail makes op fail with ENOSPC on data files (.tmp), or on every spool file.
	fail := func(op string, dataOnly bool) func(string, string) error {
		return func(o, name string) error {
			if o == op && strings.HasPrefix(name, "queen-") && (!dataOnly || strings.HasSuffix(name, ".tmp")) {
				return syscall.ENOSPC
			}
			return nil
		}
	}
	for _, tc := range []struct {
		op       string
		partial  bool
		dataOnly bool // the position file of the abandoned file can still be written
		restart  bool // replay after a clean restart rather than in this process
	}{
		{op: "write", partial: true},
		{op: "write"},
		{op: "sync"},
		{op: "sync", dataOnly: true, restart: true},
		{op: "create"},
	} {
		t.Run(fmt.Sprintf("%s partial=%v dataOnly=%v restart=%v", tc.op, tc.partial, tc.dataOnly, tc.restart), func(t *testing.T) {
			t.Parallel()
			m := newMemFS()
			s, err := Open(m, Options{})
			if err != nil {
				t.Fatal(err)
			}
			s.Start()
			t.Cleanup(func() { _ = s.Close() })
			acked := recs(0, 3, "a")
			appendAll(t, s, acked...)
			if tc.op == "create" {
				// Force a new file for the next Append.
				b, _ := s.Next(100)
				if err := s.Commit(b); err != nil {
					t.Fatal(err)
				}
				acked = nil
			}
			m.setFault(fail(tc.op, tc.dataOnly), tc.partial)
			err = s.Append(context.Background(), recs(10, 2, "b"))
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Append on a full disk = %v", err)
			}
			if s.Pending(ports.DefaultTenant, "orders", "b") {
				t.Fatal("records of a failed Append are pending")
			}
			if st := s.Stats(); st.Appended != 3 || st.PendingRecords != int64(len(acked)) || st.WriteFailedAt.IsZero() {
				t.Fatalf("stats after a failed Append %+v", st)
			}
			m.setFault(nil, false)
			more := recs(20, 2, "c")
			appendAll(t, s, more...)
			if st := s.Stats(); !st.WriteFailedAt.IsZero() {
				t.Fatalf("the write failure is still reported after a good Append: %+v", st)
			}
			want := append(append([]Record{}, acked...), more...)
			if tc.restart {
				// The failed records are in the file (written, not synced): a clean
				// restart must not replay them either.
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				s = open(t, m, Options{})
			}
			sameRecords(t, drain(t, s, 100), want)
			if st := s.Stats(); st.CorruptRecords != 0 {
				t.Fatalf("stats %+v", st)
			}
			_ = s.Close()
		})
	}
}

func TestPendingDuringAppend(t *testing.T) {
	t.Parallel()
	m := newMemFS()
	inSync, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	m.setSyncHook(func(name string) {
		if strings.HasSuffix(name, ".tmp") {
			once.Do(func() { close(inSync); <-release })
		}
	})
	s := open(t, m, Options{})
	go func() { _ = s.Append(context.Background(), []Record{rec(1, "p")}) }()
	<-inSync // header fsync of the new file
	if !s.Pending(ports.DefaultTenant, "orders", "p") {
		t.Fatal("a partition being spooled is not pending: a concurrent push would overtake it")
	}
	close(release)
}

func TestCommitPositionError(t *testing.T) {
	t.Parallel()
	m := newMemFS()
	s := open(t, m, Options{})
	all := recs(0, 6, "p")
	appendAll(t, s, all...)
	b, _ := s.Next(2)
	m.setFault(func(op, name string) error {
		if op == "create" && strings.HasSuffix(name, ".pos~") {
			return syscall.EIO
		}
		return nil
	}, false)
	if err := s.Commit(b); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Commit = %v", err)
	}
	m.setFault(nil, false)
	// The records are in the database: Next moves on rather than replay them at once.
	sameRecords(t, drain(t, s, 2), all[2:])
}

func TestAppendContextAndErrors(t *testing.T) {
	t.Parallel()
	m := newMemFS()
	s := open(t, m, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Append(ctx, recs(0, 1, "p")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with a cancelled context = %v", err)
	}
	big := rec(1, "p")
	big.Payload = make([]byte, MaxRecordBytes)
	if err := s.Append(context.Background(), []Record{rec(0, "p"), big}); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("Append of an oversized record = %v", err)
	}
	if !s.Empty() || s.Stats().Appended != 0 {
		t.Fatal("a rejected Append left records")
	}
	if err := s.Append(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}
