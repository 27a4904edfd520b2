package spooltest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/ports"
)

// Env is one spool directory under test and the hooks the suite needs to reach its
// files behind the spool's back. Names are ports.SpoolFS names: "x" in the directory,
// "failed/x" in the quarantine.
type Env struct {
	// FS is a handle on the directory, empty when Run asks for a new Env. The suite opens
	// spools on it one after the other (each Open takes the lock anew).
	FS ports.SpoolFS
	// Read returns a file's bytes; it fails the test when the file does not exist.
	Read func(t *testing.T, name string) []byte
	// Write creates or replaces a file with data, durably: bit rot, an operator, or a
	// write torn by a crash.
	Write func(t *testing.T, name string, data []byte)
	// Names returns every file of the directory and of failed/ ("failed/x"), sorted.
	// Files the implementation keeps for itself (a lock file) may appear: the suite looks
	// only at the spool's own names.
	Names func(t *testing.T) []string
	// Kill returns the directory as the next process finds it if this process died now:
	// a new Env, unlocked, that later changes made through this one do not reach. It
	// must hold everything the spool had synced (the suite kills only after the spool
	// acknowledged durability); it may hold more (the kernel keeps a dead process's
	// unsynced writes) or exactly that (a power loss).
	Kill func(t *testing.T) Env
}

// Run runs the suite; newEnv must return an empty directory of its own on every call.
func Run(t *testing.T, newEnv func(t *testing.T) Env) {
	tests := []struct {
		name string
		run  func(t *testing.T, newEnv func(t *testing.T) Env)
	}{
		{"append, next and commit", testAppendNextCommit},
		{"reopen after close replays the rest", testReopenAfterClose},
		{"process death after acknowledged appends", testKilledAfterAppend},
		{"process death in the middle of replay", testKilledMidReplay},
		{"open rebuilds the state a dead process left", testOpenRebuildsState},
		{"a corrupt record is quarantined, the others replay", testCorruptRecord},
		{"a corrupt last record is not taken for a torn one", testCorruptLastRecord},
		{"a corrupt header is quarantined, the records replay", testCorruptHeader},
		{"a file of an unsupported version moves to failed/", testUnsupportedVersion},
		{"a torn tail is dropped", testTornTail},
		{"a quarantined record is a replayable file", testQuarantine},
		{"quarantine again after a process death counts once", testQuarantineAgainAfterDeath},
		{"open counts what failed/ already holds", testFailedCountedAtOpen},
		{"open removes orphan and half-written position files", testOrphanAndTempFiles},
		{"a damaged position replays the file from its start", testDamagedPosition},
		{"bit rot after an append is quarantined at replay", testBitRotAfterAppend},
		{"files rotate after EventsPerFile records", testRotation},
		{"pending is tracked per partition", testPendingPerPartition},
		{"a second open of a running spool is refused", testLocked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newEnv)
		})
	}
}

// rec returns a distinct record for partition part; i is in its transaction id and
// payload, and selects the optional fields (encrypted, trace, producer sub).
func rec(i int, part string) spool.Record {
	r := spool.Record{
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

func recs(from, n int, part string) []spool.Record {
	out := make([]spool.Record, n)
	for i := range out {
		out[i] = rec(from+i, part)
	}
	return out
}

// open opens and starts a spool on fsys, closed at the end of the test.
// Open opens the spool on fsys and starts it; the test's end closes it. It is the
// setup of every test that needs a running spool (this suite, core/drain, core/push).
func Open(t testing.TB, fsys ports.SpoolFS, opts spool.Options) *spool.Spool {
	t.Helper()
	s, err := spool.Open(fsys, opts)
	if err != nil {
		t.Fatalf("spool.Open: %v", err)
	}
	s.Start()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func closeSpool(t *testing.T, s *spool.Spool) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func appendAll(t *testing.T, s *spool.Spool, rs ...spool.Record) {
	t.Helper()
	if err := s.Append(context.Background(), rs); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

// appendEach appends every record in its own Append (one fsync each).
func appendEach(t *testing.T, s *spool.Spool, rs []spool.Record) {
	t.Helper()
	for i := range rs {
		appendAll(t, s, rs[i])
	}
}

// drain replays everything in batches of limit and returns the records in order.
func drain(t *testing.T, s *spool.Spool, limit int) []spool.Record {
	t.Helper()
	var out []spool.Record
	for {
		b, err := s.Next(limit)
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if b == nil {
			return out
		}
		if len(b.Records) == 0 || len(b.Records) > limit {
			t.Fatalf("batch of %d records with limit %d", len(b.Records), limit)
		}
		out = append(out, b.Records...)
		if err := s.Commit(b); err != nil {
			t.Fatalf("Commit: %v", err)
		}
	}
}

func sameRecords(t *testing.T, got, want []spool.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records %v, want %d %v", len(got), txns(got), len(want), txns(want))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("record %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func txns(rs []spool.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.TransactionID
	}
	return out
}

// names returns the files of env whose name has prefix and suffix, sorted.
func names(t *testing.T, env Env, prefix, suffix string) []string {
	t.Helper()
	var out []string
	for _, n := range env.Names(t) {
		if strings.HasPrefix(n, prefix) && strings.HasSuffix(n, suffix) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// only returns the single file of env with prefix and suffix.
func only(t *testing.T, env Env, prefix, suffix string) string {
	t.Helper()
	got := names(t, env, prefix, suffix)
	if len(got) != 1 {
		t.Fatalf("files %s*%s: %v, want exactly one (all files: %v)", prefix, suffix, got, env.Names(t))
	}
	return got[0]
}

// flip returns data with byte i inverted.
func flip(data []byte, i int) []byte {
	out := bytes.Clone(data)
	out[i] ^= 0xFF
	return out
}

// The on-disk layout, from core/spool's doc.go.
var (
	fileMagic   = []byte("QUEENSPL")
	recordMagic = []byte{0xF5, 'Q', 'R', 'C'}
	posMagic    = []byte("QUEENPOS")
	castagnoli  = crc32.MakeTable(crc32.Castagnoli)
)

// frames returns the offsets of the records of a clean data file, walking the frame
// headers (magic, then the body length at bytes [4,8)).
func frames(t *testing.T, data []byte) []int {
	t.Helper()
	if len(data) < spool.HeaderSize || !bytes.Equal(data[:len(fileMagic)], fileMagic) {
		t.Fatalf("no data file header in %d bytes", len(data))
	}
	var offs []int
	for p := spool.HeaderSize; p < len(data); {
		if p+spool.FrameHeaderSize > len(data) || !bytes.Equal(data[p:p+len(recordMagic)], recordMagic) {
			t.Fatalf("no frame header at offset %d of a clean file of %d bytes", p, len(data))
		}
		offs = append(offs, p)
		p += spool.FrameHeaderSize + int(binary.LittleEndian.Uint32(data[p+4:]))
		if p > len(data) {
			t.Fatalf("frame at %d runs past the end of a clean file", offs[len(offs)-1])
		}
	}
	return offs
}

// headerVersion is a valid data file header claiming format version v.
func headerVersion(v uint16) []byte {
	h := append([]byte{}, fileMagic...)
	h = binary.LittleEndian.AppendUint16(h, v)
	h = binary.LittleEndian.AppendUint16(h, 0)
	return binary.LittleEndian.AppendUint32(h, crc32.Checksum(h, castagnoli))
}

// positionFile is a valid .pos file: records before offset are done, the data file's
// valid length is end (0: all of it).
func positionFile(offset, end uint64) []byte {
	b := append([]byte{}, posMagic...)
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint64(b, offset)
	b = binary.LittleEndian.AppendUint64(b, end)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// clock is a settable clock for Options.Now (Unix milliseconds).
type clock struct{ ms atomic.Int64 }

func newClock(ms int64) *clock {
	c := &clock{}
	c.ms.Store(ms)
	return c
}

func (c *clock) now() time.Time { return time.UnixMilli(c.ms.Load()) }

// closedFile writes rs (one Append each) into a fresh directory with a fixed clock,
// closes the spool, and returns the directory and the name of its one data file.
func closedFile(t *testing.T, newEnv func(t *testing.T) Env, rs []spool.Record) (Env, string) {
	t.Helper()
	env := newEnv(t)
	s := Open(t, env.FS, spool.Options{Now: newClock(1700000000000).now})
	appendEach(t, s, rs)
	closeSpool(t, s)
	return env, only(t, env, "queen-", ".buf")
}

// wantStats fails unless the figures of st named in want have those values.
func wantStats(t *testing.T, what string, st spool.Stats, want map[string]int64) {
	t.Helper()
	v := reflect.ValueOf(st)
	for _, field := range slices.Sorted(maps.Keys(want)) {
		f := v.FieldByName(field)
		if !f.IsValid() {
			t.Fatalf("spool.Stats has no field %s", field)
		}
		if f.Int() != want[field] {
			t.Fatalf("%s: %s = %d, want %d (stats %+v)", what, field, f.Int(), want[field], st)
		}
	}
}
