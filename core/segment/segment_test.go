package segment

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func testCodec(t testing.TB) *Codec {
	t.Helper()
	c, err := NewCodec(3)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func sampleFrames() []Frame {
	return []Frame{
		{ID: [16]byte{1}, TransactionID: "t-1", Payload: []byte(`{"a":1}`)},
		{ID: [16]byte{2}, TransactionID: "", Payload: []byte(`null`), ProducerSub: "alice"},
		{ID: [16]byte{3}, TransactionID: "t-3", Payload: []byte(`{"encrypted":"x"}`), Encrypted: true,
			HasTrace: true, TraceID: [16]byte{9, 9}},
		{ID: [16]byte{4}, TransactionID: strings.Repeat("x", 70000), Payload: []byte(`[1, 2 ,3]`)},
	}
}

func equalFrames(a, b []Frame) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !bytes.Equal(x.Payload, y.Payload) {
			return false
		}
		x.Payload, y.Payload = nil, nil
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	c := testCodec(t)
	tests := []struct {
		name   string
		frames []Frame
	}{
		{"empty segment", nil},
		{"one frame", sampleFrames()[:1]},
		{"all features", sampleFrames()},
		{"big payload", []Frame{{ID: [16]byte{7}, TransactionID: "big", Payload: bytes.Repeat([]byte(`{"k":"v"},`), 100000)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			blob := c.Encode(tt.frames)
			got, err := c.Decode(blob)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !equalFrames(got, tt.frames) {
				t.Fatalf("round trip changed frames:\n got %+v\nwant %+v", got, tt.frames)
			}
		})
	}
}

func TestUnpackRejectsCorruption(t *testing.T) {
	t.Parallel()
	good := Pack(nil, sampleFrames()[:2])
	tests := []struct {
		name   string
		packed []byte
	}{
		{"empty", nil},
		{"unknown version", append([]byte{2}, good[1:]...)},
		{"truncated", good[:len(good)-3]},
		{"trailing bytes", append(append([]byte{}, good...), 0)},
		{"count larger than data", []byte{Version, 0xff, 0xff, 0x03}},
		{"unknown flag", func() []byte { b := append([]byte{}, good...); b[2] = 0x80; return b }()},
		{"bad varint", []byte{Version, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Unpack(tt.packed); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Unpack error = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestDecodeRejectsNonZstd(t *testing.T) {
	t.Parallel()
	if _, err := testCodec(t).Decode([]byte("not zstd at all")); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Decode error = %v, want ErrCorrupt", err)
	}
}

// FuzzUnpack: arbitrary bytes never panic, and whatever unpacks re-packs to something
// that unpacks to the same frames.
func FuzzUnpack(f *testing.F) {
	f.Add(Pack(nil, sampleFrames()))
	f.Add(Pack(nil, nil))
	f.Add([]byte{Version, 1, 0})
	f.Fuzz(func(t *testing.T, packed []byte) {
		frames, err := Unpack(packed)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := Unpack(Pack(nil, frames))
		if err != nil {
			t.Fatalf("re-pack does not unpack: %v", err)
		}
		if !equalFrames(frames, again) {
			t.Fatalf("re-pack changed frames")
		}
	})
}

// FuzzDecode: arbitrary blobs never panic the decompress+unpack path.
func FuzzDecode(f *testing.F) {
	c := testCodec(f)
	f.Add(c.Encode(sampleFrames()))
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd})
	f.Fuzz(func(t *testing.T, blob []byte) {
		frames, err := c.Decode(blob)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error %v does not wrap ErrCorrupt", err)
		}
		if err == nil {
			if _, err := c.Decode(c.Encode(frames)); err != nil {
				t.Fatalf("re-encode does not decode: %v", err)
			}
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	c := testCodec(b)
	frames := make([]Frame, 100)
	for i := range frames {
		frames[i] = Frame{ID: [16]byte{byte(i)}, TransactionID: "txn-abcdefgh", Payload: []byte(`{"orderId":91,"total":4200,"note":"hello world"}`)}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c.Encode(frames)
	}
	b.ReportMetric(float64(b.N*len(frames))/b.Elapsed().Seconds(), "msgs/s")
}
