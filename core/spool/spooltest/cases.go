package spooltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/ports"
)

func testAppendNextCommit(t *testing.T, newEnv func(t *testing.T) Env) {
	env := newEnv(t)
	s := Open(t, env.FS, spool.Options{})
	if !s.Empty() {
		t.Fatal("new spool not empty")
	}
	if b, err := s.Next(10); b != nil || err != nil {
		t.Fatalf("Next on an empty spool = %v, %v", b, err)
	}
	want := recs(0, 5, "p")
	appendAll(t, s, want[:2]...)
	appendAll(t, s, want[2:]...)
	only(t, env, "queen-", ".tmp")
	wantStats(t, "after two appends", s.Stats(), map[string]int64{"PendingRecords": 5, "PendingFiles": 1, "Appended": 5, "Fsyncs": 2})
	b, err := s.Next(3)
	if err != nil {
		t.Fatal(err)
	}
	sameRecords(t, b.Records, want[:3])
	if buf := only(t, env, "queen-", ".buf"); b.File != buf || len(names(t, env, "queen-", ".tmp")) != 0 {
		t.Fatalf("Next did not finalize the active file: batch of %s, files %v", b.File, env.Names(t))
	}
	// Next without Commit does not advance.
	if b, err = s.Next(3); err != nil {
		t.Fatal(err)
	}
	sameRecords(t, b.Records, want[:3])
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(b); err == nil {
		t.Fatal("second Commit of a batch accepted")
	}
	only(t, env, "queen-", ".pos") // a partial commit is durable
	sameRecords(t, drain(t, s, 3), want[3:])
	if got := names(t, env, "queen-", ""); len(got) != 0 {
		t.Fatalf("files left after a full replay: %v", got)
	}
	wantStats(t, "after replay", s.Stats(), map[string]int64{"PendingRecords": 0, "PendingFiles": 0, "Replayed": 5})
	if !s.Empty() {
		t.Fatal("not empty after replay")
	}
	// The spool keeps working after its file was replayed and deleted.
	appendAll(t, s, rec(9, "p"))
	sameRecords(t, drain(t, s, 10), []spool.Record{rec(9, "p")})
}

func testReopenAfterClose(t *testing.T, newEnv func(t *testing.T) Env) {
	env := newEnv(t)
	opts := spool.Options{EventsPerFile: 4}
	s := Open(t, env.FS, opts)
	all := recs(0, 10, "p")
	appendEach(t, s, all)
	b, err := s.Next(3)
	if err != nil || b == nil || len(b.Records) != 3 {
		t.Fatalf("Next = %v, %v", b, err)
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	closeSpool(t, s)
	if tmp := names(t, env, "queen-", ".tmp"); len(tmp) != 0 {
		t.Fatalf("Close left active files %v", tmp)
	}

	s2 := Open(t, env.FS, opts)
	wantStats(t, "after reopening", s2.Stats(), map[string]int64{"PendingRecords": 7, "PendingFiles": 3})
	if !s2.Pending(ports.DefaultTenant, "orders", "p") {
		t.Fatal("the partition is not pending after reopening")
	}
	sameRecords(t, drain(t, s2, 2), all[3:])
	closeSpool(t, s2)
	if left := names(t, env, "queen-", ""); len(left) != 0 {
		t.Fatalf("left after a full replay: %v", left)
	}
	if failed := names(t, env, "failed/", ""); len(failed) != 0 {
		t.Fatalf("quarantined without damage: %v", failed)
	}
}

func testKilledAfterAppend(t *testing.T, newEnv func(t *testing.T) Env) {
	// What an Append in flight when the process died may have left after the last
	// acknowledged record: never acknowledged, so dropped, unless it cannot be a torn
	// write (then it is set aside as corrupt, and still nothing acknowledged is lost).
	tails := []struct {
		name    string
		tail    func(lastFrame []byte) []byte
		corrupt int64
	}{
		{"nothing after the last record", func([]byte) []byte { return nil }, 0},
		{"a partial frame header", func(f []byte) []byte { return f[:spool.FrameHeaderSize-6] }, 0},
		{"a frame whose body was cut short", func(f []byte) []byte { return f[:spool.FrameHeaderSize+3] }, 0},
		{"zero bytes of a file grown but never written", func([]byte) []byte { return make([]byte, 4096) }, 0},
		{"garbage shorter than a frame header", func([]byte) []byte { return []byte("garbage") }, 0},
		{"garbage longer than a frame header", func([]byte) []byte { return bytes.Repeat([]byte("garbage!"), 8) }, 1},
	}
	for _, tc := range tails {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := newEnv(t)
			s := Open(t, env.FS, spool.Options{})
			acked := recs(0, 10, "p")
			appendEach(t, s, acked)
			dead := env.Kill(t)
			tmp := only(t, dead, "queen-", ".tmp")
			data := dead.Read(t, tmp)
			offs := frames(t, data)
			if len(offs) != len(acked) {
				t.Fatalf("the dead process's file holds %d records, want the %d acknowledged", len(offs), len(acked))
			}
			dead.Write(t, tmp, append(bytes.Clone(data), tc.tail(data[offs[len(offs)-1]:])...))

			s2 := Open(t, dead.FS, spool.Options{})
			wantStats(t, "after the death", s2.Stats(), map[string]int64{"PendingRecords": 10, "PendingFiles": 1})
			if left := names(t, dead, "queen-", ".tmp"); len(left) != 0 {
				t.Fatalf("Open left the dead process's active file: %v", left)
			}
			sameRecords(t, drain(t, s2, 4), acked)
			wantStats(t, "after replay", s2.Stats(), map[string]int64{"CorruptRecords": tc.corrupt, "FailedFiles": tc.corrupt})
		})
	}
}

func testKilledMidReplay(t *testing.T, newEnv func(t *testing.T) Env) {
	env := newEnv(t)
	s := Open(t, env.FS, spool.Options{})
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
	if b, err = s.Next(20); err != nil || b == nil || len(b.Records) != 20 {
		t.Fatalf("Next = %v, %v", b, err) // read but never committed
	}
	dead := env.Kill(t)

	s2 := Open(t, dead.FS, spool.Options{})
	wantStats(t, "after the death", s2.Stats(), map[string]int64{"PendingRecords": 30, "PendingFiles": 1})
	sameRecords(t, drain(t, s2, 7), all[20:])
}

func testOpenRebuildsState(t *testing.T, newEnv func(t *testing.T) Env) {
	env := newEnv(t)
	clk := newClock(1700000000000)
	opts := spool.Options{EventsPerFile: 4, Now: clk.now}
	s := Open(t, env.FS, opts)
	all := append(recs(0, 6, "p1"), recs(6, 3, "p2")...)
	appendEach(t, s, all)
	b, err := s.Next(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	dead := env.Kill(t)
	only(t, dead, "queen-", ".tmp") // the active file the dead process left

	s2 := Open(t, dead.FS, opts)
	wantStats(t, "after Open", s2.Stats(), map[string]int64{"PendingRecords": 7, "PendingFiles": 3})
	if left := names(t, dead, "queen-", ".tmp"); len(left) != 0 {
		t.Fatalf("Open left an active file: %v", left)
	}
	const tn, q = ports.DefaultTenant, "orders"
	if !s2.Pending(tn, q, "p1") || !s2.Pending(tn, q, "p2") || s2.Pending(tn, q, "p3") {
		t.Fatal("pending partitions not rebuilt")
	}
	// New files sort after the old ones even with a clock that went back.
	clk.ms.Store(1)
	appendAll(t, s2, rec(50, "p1"))
	want := append(append([]spool.Record{}, all[2:]...), rec(50, "p1"))
	sameRecords(t, drain(t, s2, 3), want)
}

func testCorruptRecord(t *testing.T, newEnv func(t *testing.T) Env) {
	all := recs(0, 5, "p")
	for _, where := range []string{"payload", "length", "magic"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			env, name := closedFile(t, newEnv, all)
			data := env.Read(t, name)
			offs := frames(t, data)
			i := map[string]int{
				"payload": offs[2] + (offs[3]-offs[2])*3/4,
				"length":  offs[2] + 5,
				"magic":   offs[2],
			}[where]
			bad := flip(data, i)
			env.Write(t, name, bad)
			s := Open(t, env.FS, spool.Options{})
			wantStats(t, "after Open", s.Stats(), map[string]int64{"PendingRecords": 4})
			want := append(append([]spool.Record{}, all[:2]...), all[3:]...)
			sameRecords(t, drain(t, s, 100), want)
			wantStats(t, "after replay", s.Stats(), map[string]int64{"CorruptRecords": 1, "FailedFiles": 1,
				"FailedBytes": int64(offs[3] - offs[2])})
			raw := env.Read(t, fmt.Sprintf("failed/%s-%012d.corrupt", strings.TrimSuffix(name, ".buf"), offs[2]))
			if !bytes.Equal(raw, bad[offs[2]:offs[3]]) {
				t.Fatalf("quarantined bytes %x, want the damaged record %x", raw, bad[offs[2]:offs[3]])
			}
			if len(names(t, env, "failed/", ".reason")) != 1 || len(names(t, env, "queen-", "")) != 0 {
				t.Fatalf("files %v, want one reason in failed/ and nothing left to replay", env.Names(t))
			}
		})
	}
}

func testCorruptLastRecord(t *testing.T, newEnv func(t *testing.T) Env) {
	all := recs(0, 3, "p")
	env, name := closedFile(t, newEnv, all)
	data := env.Read(t, name)
	env.Write(t, name, flip(data, len(data)-2)) // inside the last payload: a complete record
	s := Open(t, env.FS, spool.Options{})
	sameRecords(t, drain(t, s, 100), all[:2])
	wantStats(t, "after replay", s.Stats(), map[string]int64{"CorruptRecords": 1, "FailedFiles": 1})
}

func testCorruptHeader(t *testing.T, newEnv func(t *testing.T) Env) {
	all := recs(0, 3, "p")
	env, name := closedFile(t, newEnv, all)
	env.Write(t, name, flip(env.Read(t, name), 3))
	s := Open(t, env.FS, spool.Options{})
	sameRecords(t, drain(t, s, 100), all)
	wantStats(t, "after replay", s.Stats(), map[string]int64{"CorruptRecords": 1, "FailedBytes": spool.HeaderSize})
}

func testUnsupportedVersion(t *testing.T, newEnv func(t *testing.T) Env) {
	env, name := closedFile(t, newEnv, recs(0, 3, "p"))
	data := append(headerVersion(2), env.Read(t, name)[spool.HeaderSize:]...)
	env.Write(t, name, data)
	s := Open(t, env.FS, spool.Options{})
	if !s.Empty() {
		t.Fatal("a file of an unknown version is pending")
	}
	base := strings.TrimSuffix(name, ".buf")
	if !bytes.Equal(env.Read(t, "failed/"+base+".buf"), data) {
		t.Fatal("the file was not moved whole to failed/")
	}
	if len(env.Read(t, "failed/"+base+".buf.reason")) == 0 {
		t.Fatal("empty reason")
	}
	if left := names(t, env, "queen-", ""); len(left) != 0 {
		t.Fatalf("left in the directory: %v", left)
	}
	wantStats(t, "after Open", s.Stats(), map[string]int64{"FailedFiles": 1, "FailedBytes": int64(len(data)), "CorruptRecords": 0})
}

func testTornTail(t *testing.T, newEnv func(t *testing.T) Env) {
	all := recs(0, 4, "p")
	env, name := closedFile(t, newEnv, all)
	data := env.Read(t, name)
	offs := frames(t, data)
	last := offs[3]
	for _, tc := range []struct {
		name    string
		content []byte
	}{
		{"cut one byte short", data[:len(data)-1]},
		{"cut inside the last body", data[:last+spool.FrameHeaderSize+4]},
		{"cut inside the last frame header", data[:last+3]},
		{"zero bytes after the last whole record", append(bytes.Clone(data[:last]), make([]byte, 100)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dead := env.Kill(t)
			dead.Write(t, name, tc.content)
			s := Open(t, dead.FS, spool.Options{})
			sameRecords(t, drain(t, s, 100), all[:3])
			wantStats(t, "after replay", s.Stats(), map[string]int64{"CorruptRecords": 0, "FailedFiles": 0})
			if failed := names(t, dead, "failed/", ""); len(failed) != 0 {
				t.Fatalf("a torn tail was quarantined: %v", failed)
			}
		})
	}
	// A file shorter than its header never acknowledged anything (the header is synced
	// before any record is written): removed at Open.
	t.Run("a file shorter than its header", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.Write(t, "queen-0000000000001-00000001.buf", data[:7])
		s := Open(t, e.FS, spool.Options{})
		if !s.Empty() {
			t.Fatal("a short file is pending")
		}
		if left := names(t, e, "queen-", ""); len(left) != 0 {
			t.Fatalf("short file kept: %v", left)
		}
	})
}

func testQuarantine(t *testing.T, newEnv func(t *testing.T) Env) {
	env := newEnv(t)
	s := Open(t, env.FS, spool.Options{})
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
	sameRecords(t, b2.Records, []spool.Record{all[0], all[2], all[3]})
	if err := s.Commit(b); err == nil {
		t.Fatal("Commit of a stale batch accepted")
	}
	if err := s.Commit(b2); err != nil {
		t.Fatal(err)
	}
	rejected := only(t, env, "failed/", ".rejected")
	data := env.Read(t, rejected)
	wantStats(t, "after replay", s.Stats(), map[string]int64{"Quarantined": 1, "Replayed": 3, "FailedFiles": 1,
		"FailedBytes": int64(len(data)), "PendingRecords": 0})
	// The rejected file is a valid spool file holding the record: an operator can move
	// it back under a queen-... name to replay it.
	e2 := newEnv(t)
	e2.Write(t, "queen-0000000000001-00000001.buf", data)
	sameRecords(t, drain(t, Open(t, e2.FS, spool.Options{}), 10), []spool.Record{all[1]})
	reason := string(env.Read(t, rejected+".reason"))
	if !strings.Contains(reason, "invalid payload") || !strings.Contains(reason, "txn-000001") {
		t.Fatalf("reason %q", reason)
	}
}

// listsFailed reports whether Open can count what failed/ already holds.
func listsFailed(env Env) bool {
	_, ok := env.FS.(ports.SpoolFailedLister)
	return ok
}

func testQuarantineAgainAfterDeath(t *testing.T, newEnv func(t *testing.T) Env) {
	env := newEnv(t)
	s := Open(t, env.FS, spool.Options{})
	all := recs(0, 3, "p")
	appendAll(t, s, all...)
	b, err := s.Next(10)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Quarantine(b, 0, errors.New("bad")); err != nil {
		t.Fatal(err)
	}
	dead := env.Kill(t) // before Commit

	s2 := Open(t, dead.FS, spool.Options{})
	failed := int64(0)
	if listsFailed(dead) {
		failed = 1 // Open counts the item the dead process quarantined
	}
	wantStats(t, "after the death", s2.Stats(), map[string]int64{"FailedFiles": failed, "PendingRecords": 3})
	if b, err = s2.Next(10); err != nil {
		t.Fatal(err)
	}
	sameRecords(t, b.Records, all)
	if err := s2.Quarantine(b, 0, errors.New("bad")); err != nil {
		t.Fatal(err)
	}
	if err := s2.Commit(b); err != nil {
		t.Fatal(err)
	}
	// Quarantined again, it is found in failed/ and not counted twice.
	wantStats(t, "after replay", s2.Stats(), map[string]int64{"FailedFiles": failed, "Quarantined": 1, "Replayed": 2})
	if !s2.Empty() {
		t.Fatal("not empty after replay")
	}
	if got := names(t, dead, "failed/", ""); len(got) != 2 {
		t.Fatalf("failed/ holds %v, want one rejected record and its reason", got)
	}
}

func testFailedCountedAtOpen(t *testing.T, newEnv func(t *testing.T) Env) {
	env := newEnv(t)
	s := Open(t, env.FS, spool.Options{})
	appendAll(t, s, recs(0, 3, "p")...)
	b, err := s.Next(10)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Quarantine(b, 2, errors.New("rejected")); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	closeSpool(t, s)
	size := int64(len(env.Read(t, only(t, env, "failed/", ".rejected"))))
	// A half-written item (a "~" name) is not an item.
	env.Write(t, "failed/queen-0000000000001-00000001-000000000016.corrupt~", []byte("half"))

	s2 := Open(t, env.FS, spool.Options{})
	want := map[string]int64{"FailedFiles": 0, "FailedBytes": 0}
	if listsFailed(env) {
		want = map[string]int64{"FailedFiles": 1, "FailedBytes": size}
	}
	wantStats(t, "after reopening", s2.Stats(), want)
}

func testOrphanAndTempFiles(t *testing.T, newEnv func(t *testing.T) Env) {
	env := newEnv(t)
	env.Write(t, "queen-0000000000005-00000007.pos", positionFile(16, 0)) // its data file is gone
	env.Write(t, "queen-0000000000005-00000008.pos~", []byte("half"))     // a position being written
	env.Write(t, "unrelated.txt", []byte("not ours"))
	// A clock behind the names found: new names still sort after them.
	s := Open(t, env.FS, spool.Options{Now: newClock(1).now})
	if got := names(t, env, "queen-", ""); len(got) != 0 {
		t.Fatalf("leftovers %v", got)
	}
	appendAll(t, s, rec(0, "p"))
	if got := only(t, env, "queen-", ".tmp"); got != "queen-0000000000005-00000009.tmp" {
		t.Fatalf("new active file %s, want the sequence to continue past the names found", got)
	}
	if got := env.Read(t, "unrelated.txt"); string(got) != "not ours" {
		t.Fatalf("a file that is not the spool's was changed: %q", got)
	}
}

func testDamagedPosition(t *testing.T, newEnv func(t *testing.T) Env) {
	all := recs(0, 4, "p")
	env := newEnv(t)
	s := Open(t, env.FS, spool.Options{})
	appendAll(t, s, all...)
	b, err := s.Next(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	closeSpool(t, s)
	pos := only(t, env, "queen-", ".pos")
	good := env.Read(t, pos)
	for _, tc := range []struct {
		name    string
		content []byte
	}{
		{"a flipped byte", flip(good, 13)},
		{"cut short", good[:10]},
		{"an offset beyond the file", positionFile(1<<20, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dead := env.Kill(t)
			dead.Write(t, pos, tc.content)
			// Dedup by transaction id makes the replay of the first two harmless.
			sameRecords(t, drain(t, Open(t, dead.FS, spool.Options{}), 10), all)
		})
	}
}

func testBitRotAfterAppend(t *testing.T, newEnv func(t *testing.T) Env) {
	env := newEnv(t)
	s := Open(t, env.FS, spool.Options{EventsPerFile: 2})
	a, b, c := rec(0, "p1"), rec(1, "p2"), rec(2, "p1")
	appendAll(t, s, a)
	appendAll(t, s, b)
	appendAll(t, s, c) // rotates: the first file is final and not read yet
	buf := only(t, env, "queen-", ".buf")
	data := env.Read(t, buf)
	env.Write(t, buf, flip(data, len(data)-3)) // inside b's payload
	sameRecords(t, drain(t, s, 10), []spool.Record{a, c})
	if s.Pending(ports.DefaultTenant, "orders", "p2") || !s.Empty() {
		t.Fatalf("an unreadable record stays pending: %+v", s.Stats())
	}
	wantStats(t, "after replay", s.Stats(), map[string]int64{"PendingRecords": 0, "CorruptRecords": 1})
}

func testRotation(t *testing.T, newEnv func(t *testing.T) Env) {
	env := newEnv(t)
	s := Open(t, env.FS, spool.Options{EventsPerFile: 3})
	all := recs(0, 7, "p")
	appendEach(t, s, all)
	if bufs, tmps := names(t, env, "queen-", ".buf"), names(t, env, "queen-", ".tmp"); len(bufs) != 2 || len(tmps) != 1 {
		t.Fatalf("after 7 records with 3 per file: %v %v", bufs, tmps)
	}
	wantStats(t, "after 7 appends", s.Stats(), map[string]int64{"PendingFiles": 3})
	// An Append larger than the threshold stays in one file.
	appendAll(t, s, recs(7, 5, "p")...)
	all = append(all, recs(7, 5, "p")...)
	sameRecords(t, drain(t, s, 2), all)
}

func testPendingPerPartition(t *testing.T, newEnv func(t *testing.T) Env) {
	env := newEnv(t)
	s := Open(t, env.FS, spool.Options{})
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
	if b, err = s.Next(2); err != nil {
		t.Fatal(err)
	}
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

func testLocked(t *testing.T, newEnv func(t *testing.T) Env) {
	env := newEnv(t)
	s := Open(t, env.FS, spool.Options{})
	if s2, err := spool.Open(env.FS, spool.Options{}); !errors.Is(err, ports.ErrSpoolLocked) {
		if err == nil {
			_ = s2.Close()
		}
		t.Fatalf("second Open = %v, want ErrSpoolLocked", err)
	}
	closeSpool(t, s)
	if err := s.Append(context.Background(), recs(0, 1, "p")); !errors.Is(err, spool.ErrClosed) {
		t.Fatalf("Append after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Next(1); !errors.Is(err, spool.ErrClosed) {
		t.Fatalf("Next after Close = %v, want ErrClosed", err)
	}
	s2 := Open(t, env.FS, spool.Options{})
	closeSpool(t, s2)
}
