package spool

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the committed fixtures testdata/v1-*.buf")

// fixtureRecords are the records of the committed version-1 fixtures. Never change them:
// the fixtures prove that files written by version 1 stay readable.
func fixtureRecords() []Record {
	r := []Record{
		{Tenant: "00000000-0000-0000-0000-000000000001", Queue: "orders", Partition: "Default",
			TransactionID: "txn-1", Payload: []byte(`{"order":1}`)},
		{Tenant: "00000000-0000-0000-0000-000000000001", Queue: "orders", Partition: "eu-west",
			TransactionID: "txn-2", ProducerSub: "alice", HasTrace: true,
			Payload: []byte(`{"order":2,"note":"caf\u00e9 \u2615"}`)},
		{Tenant: "tenant-b", Queue: "secrets", Partition: "Default", TransactionID: "txn-3",
			Encrypted: true, Payload: []byte(`{"encrypted":"3q2+7w==","iv":"AAAAAAAAAAAAAAAA","authTag":"BBBB"}`)},
		{Tenant: "00000000-0000-0000-0000-000000000001", Queue: "orders", Partition: "Default",
			TransactionID: "txn-4", Payload: []byte(`[]`)},
	}
	for i := range r {
		for k := range 16 {
			r[i].MessageID[k] = byte(0x10*i + k)
			if r[i].HasTrace {
				r[i].TraceID[k] = byte(0xA0 + k)
			}
		}
	}
	return r
}

func encodeFile(t testing.TB, rs []Record) []byte {
	t.Helper()
	b := appendHeader(nil)
	for i := range rs {
		var err error
		if b, err = appendFrame(b, &rs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// fixtures returns the fixture files' content and the records replay must return.
func fixtures(t testing.TB) map[string]struct {
	data    []byte
	want    []Record
	corrupt int64
} {
	all := fixtureRecords()
	clean := encodeFile(t, all)
	offs := frameOffsetsOf(clean)
	flipped := bytes.Clone(clean)
	flipped[offs[1]+(offs[2]-offs[1])/2] ^= 0x01 // one bit in the middle of record 2
	torn := clean[:offs[3]+(len(clean)-offs[3])/2]
	return map[string]struct {
		data    []byte
		want    []Record
		corrupt int64
	}{
		"v1-clean.buf":   {clean, all, 0},
		"v1-flipped.buf": {flipped, []Record{all[0], all[2], all[3]}, 1},
		"v1-torn.buf":    {torn, all[:3], 0},
	}
}

func frameOffsetsOf(data []byte) []int {
	var offs []int
	sc := newScanner(data, 0, 0)
	for it, ok := sc.next(); ok; it, ok = sc.next() {
		offs = append(offs, it.off)
	}
	return offs
}

// TestWriteFixtures regenerates the fixtures: go test ./core/spool -run TestWriteFixtures -args -update
func TestWriteFixtures(t *testing.T) {
	if !*update {
		t.Skip("run with -args -update to rewrite testdata/v1-*.buf")
	}
	if Version != 1 {
		t.Fatal("the v1 fixtures are frozen; write fixtures of the new version under new names")
	}
	if err := os.MkdirAll("testdata", 0o750); err != nil {
		t.Fatal(err)
	}
	for name, fx := range fixtures(t) {
		if err := os.WriteFile(filepath.Join("testdata", name), fx.data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFixtures replays the committed files and checks the exact records.
func TestFixtures(t *testing.T) {
	t.Parallel()
	for name, fx := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			if Version == 1 && !bytes.Equal(data, fx.data) {
				t.Error("the encoder no longer writes the committed version-1 bytes")
			}
			m := newMemFS()
			m.put("queen-1700000000000-00000001.buf", data)
			s := open(t, m, Options{})
			if st := s.Stats(); st.PendingRecords != int64(len(fx.want)) {
				t.Fatalf("pending after Open %+v", st)
			}
			got := drain(t, s, 2)
			if !reflect.DeepEqual(got, fx.want) {
				t.Fatalf("replayed\n%+v\nwant\n%+v", got, fx.want)
			}
			if st := s.Stats(); st.CorruptRecords != fx.corrupt || !s.Empty() {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	for _, fx := range fixtures(f) {
		f.Add(fx.data)
	}
	clean := encodeFile(f, fixtureRecords())
	f.Add(clean[:HeaderSize+FrameHeaderSize+3])
	f.Add(append(bytes.Clone(clean[:HeaderSize]), recordMagic...))
	f.Add(append(make([]byte, 40), clean...))
	f.Add(position{offset: 16, end: 100}.encode())
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = decodePosition(data)
		// The scanner moves forward, stays inside the data, and its records decode.
		sc := newScanner(data, 0, 0)
		last, payload := -1, 0
		for it, ok := sc.next(); ok; it, ok = sc.next() {
			if it.off <= last || it.n <= 0 || it.off+it.n > len(data) {
				t.Fatalf("item %+v after offset %d in %d bytes", it, last, len(data))
			}
			last = it.off
			if it.kind == itemRecord {
				r := it.f.record()
				payload += len(r.Payload)
			}
		}
		if payload > len(data) {
			t.Fatalf("decoded %d payload bytes from %d bytes", payload, len(data))
		}
		// Replaying it as a spool file never panics and leaves nothing pending.
		m := newMemFS()
		m.put("queen-1700000000000-00000001.buf", data)
		s, err := Open(m, Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		t.Cleanup(func() { _ = s.Close() })
		defer s.Close()
		for {
			b, err := s.Next(3)
			if err != nil {
				t.Fatal(err)
			}
			if b == nil {
				break
			}
			if err := s.Commit(b); err != nil {
				t.Fatal(err)
			}
		}
		if st := s.Stats(); !s.Empty() || st.PendingRecords != 0 || len(m.names("queen-", "")) != 0 {
			t.Fatalf("left after replay: %+v %v", st, m.names("", ""))
		}
	})
}

func FuzzRoundTrip(f *testing.F) {
	f.Add("t", "q", "p", "txn", "", []byte(`{}`), []byte("0123456789abcdef"), false, false)
	f.Add("", "", "", "", "sub", []byte{}, []byte{}, true, true)
	f.Fuzz(func(t *testing.T, tenant, queue, partition, txn, sub string, payload, id []byte, enc, trace bool) {
		r := Record{Tenant: tenant, Queue: queue, Partition: partition, TransactionID: txn,
			ProducerSub: sub, Encrypted: enc, HasTrace: trace, Payload: bytes.Clone(payload)}
		if r.Payload == nil {
			r.Payload = []byte{}
		}
		copy(r.MessageID[:], id)
		if trace {
			copy(r.TraceID[:], bytes.Repeat(id, 2))
		}
		second := fixtureRecords()[1]
		data := encodeFile(t, []Record{r, second})
		var got []Record
		sc := newScanner(data, 0, 0)
		for it, ok := sc.next(); ok; it, ok = sc.next() {
			if it.kind != itemRecord {
				t.Fatalf("item %+v", it)
			}
			got = append(got, it.f.record())
		}
		if !reflect.DeepEqual(got, []Record{r, second}) {
			t.Fatalf("round trip\n%+v\n%+v", got, []Record{r, second})
		}
	})
}
