package spool

import (
	"bytes"
	"context"
	"encoding/binary"
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

func TestAppendNextCommit(t *testing.T) {
	t.Parallel()
	m := newMemFS()
	s := open(t, m, Options{})
	if !s.Empty() {
		t.Fatal("new spool not empty")
	}
	if b, err := s.Next(10); b != nil || err != nil {
		t.Fatalf("Next on an empty spool = %v, %v", b, err)
	}
	want := recs(0, 5, "p")
	appendAll(t, s, want[:2]...)
	appendAll(t, s, want[2:]...)
	if got := m.names("queen-", ".tmp"); len(got) != 1 {
		t.Fatalf("active files %v", got)
	}
	st := s.Stats()
	if st.PendingRecords != 5 || st.PendingFiles != 1 || st.Appended != 5 || st.Fsyncs != 2 || s.Empty() {
		t.Fatalf("stats after append %+v", st)
	}
	b, err := s.Next(3)
	if err != nil {
		t.Fatal(err)
	}
	sameRecords(t, b.Records, want[:3])
	if !strings.HasSuffix(b.File, ".buf") || len(m.names("queen-", ".buf")) != 1 {
		t.Fatalf("Next did not finalize the active file: %s %v", b.File, m.names("", ""))
	}
	// Next without Commit does not advance.
	b, err = s.Next(3)
	if err != nil {
		t.Fatal(err)
	}
	sameRecords(t, b.Records, want[:3])
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(b); err == nil {
		t.Fatal("second Commit of a batch accepted")
	}
	if got := m.names("queen-", ".pos"); len(got) != 1 {
		t.Fatalf("no position file after a partial commit: %v", m.names("", ""))
	}
	sameRecords(t, drain(t, s, 3), want[3:])
	if got := m.names("queen-", ""); len(got) != 0 {
		t.Fatalf("files left after a full replay: %v", got)
	}
	st = s.Stats()
	if st.PendingRecords != 0 || st.PendingFiles != 0 || st.Replayed != 5 || !s.Empty() {
		t.Fatalf("stats after replay %+v", st)
	}
	// The spool keeps working after its file was replayed and deleted.
	appendAll(t, s, rec(9, "p"))
	sameRecords(t, drain(t, s, 10), []Record{rec(9, "p")})
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

func TestCrashMidReplay(t *testing.T) {
	t.Parallel()
	m := newMemFS()
	s, err := Open(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { _ = s.Close() })
	all := recs(0, 50, "p")
	appendAll(t, s, all...)
	b, err := s.Next(20)
	if err != nil {
		t.Fatal(err)
	}
	sameRecords(t, b.Records, all[:20])
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if b, err = s.Next(20); err != nil || len(b.Records) != 20 {
		t.Fatal(b, err) // read but never committed
	}
	crashed := m.crash()

	s2 := open(t, crashed, Options{})
	if st := s2.Stats(); st.PendingRecords != 30 {
		t.Fatalf("pending after the crash %+v", st)
	}
	sameRecords(t, drain(t, s2, 7), all[20:])
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
			if st := s.Stats(); st.Appended != 3 || st.PendingRecords != int64(len(acked)) {
				t.Fatalf("stats after a failed Append %+v", st)
			}
			m.setFault(nil, false)
			more := recs(20, 2, "c")
			appendAll(t, s, more...)
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

// flip returns data with byte i inverted.
func flip(data []byte, i int) []byte {
	out := bytes.Clone(data)
	out[i] ^= 0xFF
	return out
}

// frameOffsets returns the offsets of the records of a clean data file.
func frameOffsets(t *testing.T, data []byte) []int {
	t.Helper()
	var offs []int
	sc := newScanner(data, 0, 0)
	for {
		it, ok := sc.next()
		if !ok {
			return offs
		}
		if it.kind != itemRecord {
			t.Fatalf("unexpected item %+v", it)
		}
		offs = append(offs, it.off)
	}
}

// spoolFile writes recs into a closed spool and returns the fs and the .buf name.
func spoolFile(t *testing.T, rs []Record) (*memFS, string) {
	t.Helper()
	m := newMemFS()
	s, err := Open(m, Options{Now: func() time.Time { return time.UnixMilli(1700000000000) }})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { _ = s.Close() })
	for i := range rs {
		appendAll(t, s, rs[i])
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	bufs := m.names("queen-", ".buf")
	if len(bufs) != 1 {
		t.Fatalf("files %v", m.names("", ""))
	}
	return m, bufs[0]
}

func TestCorruptRecordQuarantined(t *testing.T) {
	t.Parallel()
	all := recs(0, 5, "p")
	for _, where := range []string{"payload", "length", "magic"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			m, name := spoolFile(t, all)
			data := m.get(name)
			offs := frameOffsets(t, data)
			i := map[string]int{
				"payload": offs[2] + (offs[3]-offs[2])*3/4,
				"length":  offs[2] + 5,
				"magic":   offs[2],
			}[where]
			m.put(name, flip(data, i))
			s := open(t, m, Options{})
			if st := s.Stats(); st.PendingRecords != 4 {
				t.Fatalf("pending after Open %+v", st)
			}
			want := append(append([]Record{}, all[:2]...), all[3:]...)
			sameRecords(t, drain(t, s, 100), want)
			st := s.Stats()
			if st.CorruptRecords != 1 || st.FailedFiles != 1 || st.FailedBytes != int64(offs[3]-offs[2]) {
				t.Fatalf("stats %+v", st)
			}
			raw := m.get(fmt.Sprintf("failed/%s-%012d.corrupt", strings.TrimSuffix(name, ".buf"), offs[2]))
			if !bytes.Equal(raw, flip(data, i)[offs[2]:offs[3]]) {
				t.Fatalf("quarantined bytes %x", raw)
			}
			if len(m.names("failed/", ".reason")) != 1 || len(m.names("queen-", "")) != 0 {
				t.Fatalf("files %v", m.names("", ""))
			}
		})
	}
}

func TestCorruptLastRecordIsNotTorn(t *testing.T) {
	t.Parallel()
	all := recs(0, 3, "p")
	m, name := spoolFile(t, all)
	data := m.get(name)
	m.put(name, flip(data, len(data)-2)) // inside the last payload: a complete record
	s := open(t, m, Options{})
	sameRecords(t, drain(t, s, 100), all[:2])
	if st := s.Stats(); st.CorruptRecords != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestCorruptHeader(t *testing.T) {
	t.Parallel()
	all := recs(0, 3, "p")
	m, name := spoolFile(t, all)
	m.put(name, flip(m.get(name), 3))
	s := open(t, m, Options{})
	sameRecords(t, drain(t, s, 100), all)
	if st := s.Stats(); st.CorruptRecords != 1 || st.FailedBytes != HeaderSize {
		t.Fatalf("stats %+v", st)
	}
}

func TestUnsupportedVersion(t *testing.T) {
	t.Parallel()
	m, name := spoolFile(t, recs(0, 3, "p"))
	data := append(appendHeaderVersion(2), m.get(name)[HeaderSize:]...)
	m.put(name, data)
	s := open(t, m, Options{})
	if !s.Empty() {
		t.Fatal("a file of an unknown version is pending")
	}
	base := strings.TrimSuffix(name, ".buf")
	if !bytes.Equal(m.get("failed/"+base+".buf"), data) || m.get("failed/"+base+".buf.reason") == nil {
		t.Fatalf("files %v", m.names("", ""))
	}
	if st := s.Stats(); st.FailedFiles != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// appendHeaderVersion is a file header claiming another format version.
func appendHeaderVersion(v uint16) []byte {
	h := appendHeader(nil)
	binary.LittleEndian.PutUint16(h[8:], v)
	binary.LittleEndian.PutUint32(h[12:], checksum(h[:12]))
	return h
}

func TestTornTail(t *testing.T) {
	t.Parallel()
	all := recs(0, 4, "p")
	m, name := spoolFile(t, all)
	data := m.get(name)
	offs := frameOffsets(t, data)
	for _, cut := range []int{len(data) - 1, offs[3] + 20, offs[3] + 3} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			m2 := m.crash()
			m2.put(name, data[:cut])
			s := open(t, m2, Options{})
			sameRecords(t, drain(t, s, 100), all[:3])
			if st := s.Stats(); st.CorruptRecords != 0 || st.FailedFiles != 0 {
				t.Fatalf("a torn tail was quarantined: %+v", st)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
	// A zero-filled tail (the file grew but the data never landed) is torn too.
	m3 := m.crash()
	m3.put(name, append(bytes.Clone(data[:offs[3]]), make([]byte, 100)...))
	s := open(t, m3, Options{})
	sameRecords(t, drain(t, s, 100), all[:3])
	if st := s.Stats(); st.CorruptRecords != 0 {
		t.Fatalf("stats %+v", st)
	}
	// A file shorter than its header never acknowledged anything: removed at Open.
	m4 := newMemFS()
	m4.put("queen-0000000000001-00000001.buf", data[:7])
	s4 := open(t, m4, Options{})
	if !s4.Empty() || len(m4.names("queen-", "")) != 0 {
		t.Fatalf("short file kept: %v", m4.names("", ""))
	}
}

func TestRotation(t *testing.T) {
	t.Parallel()
	m := newMemFS()
	s := open(t, m, Options{EventsPerFile: 3})
	all := recs(0, 7, "p")
	for i := range all {
		appendAll(t, s, all[i])
	}
	if bufs, tmps := m.names("queen-", ".buf"), m.names("queen-", ".tmp"); len(bufs) != 2 || len(tmps) != 1 {
		t.Fatalf("after 7 records with 3 per file: %v %v", bufs, tmps)
	}
	if st := s.Stats(); st.PendingFiles != 3 {
		t.Fatalf("stats %+v", st)
	}
	// An Append larger than the threshold stays in one file.
	appendAll(t, s, recs(7, 5, "p")...)
	all = append(all, recs(7, 5, "p")...)
	sameRecords(t, drain(t, s, 2), all)
}

func TestPendingPerPartition(t *testing.T) {
	t.Parallel()
	m := newMemFS()
	s := open(t, m, Options{})
	const tn, q = ports.DefaultTenant, "orders"
	appendAll(t, s, rec(0, "p1"), rec(1, "p1"), rec(2, "p2"))
	if !s.Pending(tn, q, "p1") || !s.Pending(tn, q, "p2") || s.Pending(tn, q, "p3") || s.Pending("other", q, "p1") {
		t.Fatal("pending after append")
	}
	b, err := s.Next(2)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Pending(tn, q, "p1") {
		t.Fatal("Next alone took a partition off pending")
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if s.Pending(tn, q, "p1") || !s.Pending(tn, q, "p2") {
		t.Fatal("pending after committing p1")
	}
	b, _ = s.Next(2)
	if err := s.Quarantine(b, 0, errors.New("queue deleted")); err != nil {
		t.Fatal(err)
	}
	if s.Pending(tn, q, "p2") {
		t.Fatal("a quarantined record is pending")
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if !s.Empty() {
		t.Fatal("not empty")
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

func TestOpenRebuildsState(t *testing.T) {
	t.Parallel()
	m := newMemFS()
	s, err := Open(m, Options{EventsPerFile: 4})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { _ = s.Close() })
	all := append(recs(0, 6, "p1"), recs(6, 3, "p2")...)
	for i := range all {
		appendAll(t, s, all[i])
	}
	b, _ := s.Next(2)
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	names := m.names("queen-", "")
	crashed := m.crash() // the .tmp file is left behind

	s2 := open(t, crashed, Options{EventsPerFile: 4})
	st := s2.Stats()
	if st.PendingRecords != 7 || st.PendingFiles != 3 {
		t.Fatalf("stats after Open %+v (files %v)", st, names)
	}
	if len(crashed.names("queen-", ".tmp")) != 0 {
		t.Fatal("Open left an active file")
	}
	if !s2.Pending(ports.DefaultTenant, "orders", "p1") || !s2.Pending(ports.DefaultTenant, "orders", "p2") {
		t.Fatal("pending not rebuilt")
	}
	// New files sort after the old ones even with a clock that went back.
	s2.opts.Now = func() time.Time { return time.UnixMilli(1) }
	appendAll(t, s2, rec(50, "p1"))
	sameRecords(t, drain(t, s2, 3), append(all[2:], rec(50, "p1")))
}

func TestLocked(t *testing.T) {
	t.Parallel()
	m := newMemFS()
	s, err := Open(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { _ = s.Close() })
	if _, err := Open(m.handle(), Options{}); !errors.Is(err, ports.ErrSpoolLocked) {
		t.Fatalf("second Open = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(context.Background(), recs(0, 1, "p")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close = %v", err)
	}
	s2, err := Open(m.handle(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s2.Start()
	t.Cleanup(func() { _ = s2.Close() })
	_ = s2.Close()
}

func TestQuarantine(t *testing.T) {
	t.Parallel()
	m := newMemFS()
	s := open(t, m, Options{})
	all := recs(0, 4, "p")
	appendAll(t, s, all...)
	b, err := s.Next(10)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Quarantine(b, 1, errors.New("invalid payload")); err != nil {
		t.Fatal(err)
	}
	// A new Next before Commit skips the quarantined record; the old batch is stale.
	b2, err := s.Next(10)
	if err != nil {
		t.Fatal(err)
	}
	sameRecords(t, b2.Records, []Record{all[0], all[2], all[3]})
	if err := s.Commit(b); err == nil {
		t.Fatal("Commit of a stale batch accepted")
	}
	if err := s.Commit(b2); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Quarantined != 1 || st.Replayed != 3 || st.FailedFiles != 1 || st.PendingRecords != 0 {
		t.Fatalf("stats %+v", st)
	}
	rejected := m.names("failed/", ".rejected")
	if len(rejected) != 1 {
		t.Fatalf("failed/ %v", m.names("failed/", ""))
	}
	// The rejected file is a valid spool file holding the record.
	m2 := newMemFS()
	m2.put("queen-0000000000001-00000001.buf", m.get(rejected[0]))
	sameRecords(t, drain(t, open(t, m2, Options{}), 10), []Record{all[1]})
	reason := string(m.get(rejected[0] + ".reason"))
	if !strings.Contains(reason, "invalid payload") || !strings.Contains(reason, "txn-000001") {
		t.Fatalf("reason %q", reason)
	}
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

func TestOrphanAndTempFiles(t *testing.T) {
	t.Parallel()
	m := newMemFS()
	m.put("queen-0000000000005-00000007.pos", position{offset: 16}.encode())
	m.put("queen-0000000000005-00000008.pos~", []byte("half"))
	m.put("LOCK", nil)
	m.put("unrelated.txt", []byte("x"))
	s := open(t, m, Options{})
	if got := m.names("queen-", ""); len(got) != 0 {
		t.Fatalf("leftovers %v", got)
	}
	appendAll(t, s, rec(0, "p"))
	if got := m.names("queen-", ".tmp"); len(got) != 1 || got[0] != "queen-0000000000005-00000009.tmp" && got[0] <= "queen-0000000000005-00000008" {
		t.Fatalf("sequence did not continue past existing names: %v", got)
	}
}

func TestDamagedPositionReplaysFromStart(t *testing.T) {
	t.Parallel()
	m := newMemFS()
	s, _ := Open(m, Options{})
	s.Start()
	t.Cleanup(func() { _ = s.Close() })
	all := recs(0, 4, "p")
	appendAll(t, s, all...)
	b, _ := s.Next(2)
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	pos := m.names("queen-", ".pos")[0]
	m.put(pos, flip(m.get(pos), 13))
	s2 := open(t, m, Options{})
	sameRecords(t, drain(t, s2, 10), all)
}

func TestBitRotAfterAppend(t *testing.T) {
	t.Parallel()
	m := newMemFS()
	s := open(t, m, Options{EventsPerFile: 2})
	a, b, c := rec(0, "p1"), rec(1, "p2"), rec(2, "p1")
	appendAll(t, s, a)
	appendAll(t, s, b)
	appendAll(t, s, c) // rotates: the first file is final and not read yet
	bufs := m.names("queen-", ".buf")
	if len(bufs) != 1 {
		t.Fatalf("files %v", m.names("", ""))
	}
	data := m.get(bufs[0])
	m.put(bufs[0], flip(data, len(data)-3)) // inside b's payload
	sameRecords(t, drain(t, s, 10), []Record{a, c})
	if s.Pending(ports.DefaultTenant, "orders", "p2") || !s.Empty() || s.Stats().PendingRecords != 0 {
		t.Fatalf("an unreadable record stays pending: %+v", s.Stats())
	}
	if st := s.Stats(); st.CorruptRecords != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestQuarantineAgainAfterCrash(t *testing.T) {
	t.Parallel()
	m := newMemFS()
	s, _ := Open(m, Options{})
	s.Start()
	t.Cleanup(func() { _ = s.Close() })
	all := recs(0, 3, "p")
	appendAll(t, s, all...)
	b, _ := s.Next(10)
	if err := s.Quarantine(b, 0, errors.New("bad")); err != nil {
		t.Fatal(err)
	}
	crashed := m.crash() // before Commit

	s2 := open(t, crashed, Options{})
	if st := s2.Stats(); st.FailedFiles != 1 || st.PendingRecords != 3 {
		t.Fatalf("stats after the crash %+v", st)
	}
	b, _ = s2.Next(10)
	sameRecords(t, b.Records, all)
	if err := s2.Quarantine(b, 0, errors.New("bad")); err != nil {
		t.Fatal(err)
	}
	if err := s2.Commit(b); err != nil {
		t.Fatal(err)
	}
	if st := s2.Stats(); st.FailedFiles != 1 || st.Quarantined != 1 || st.Replayed != 2 || !s2.Empty() {
		t.Fatalf("stats %+v", st)
	}
	if got := crashed.names("failed/", ""); len(got) != 2 {
		t.Fatalf("failed/ %v", got)
	}
}
