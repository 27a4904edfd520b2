package segment

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
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

// TestSmallSegmentsStored: segments packed below StoredSegmentBytes are stored as one
// raw zstd block (the packed bytes follow the frame header as they are), larger ones are
// compressed, and both decode, here and with a plain zstd decoder.
func TestSmallSegmentsStored(t *testing.T) {
	t.Parallel()
	c := testCodec(t)
	plain, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for _, size := range []int{1, 100, 200, 240, 300, 470, 2000} { // packed: about size + 30
		frames := []Frame{{ID: [16]byte{7}, TransactionID: "t", Payload: bytes.Repeat([]byte("a"), size)}}
		packed := Pack(nil, frames)
		blob := c.Encode(frames)
		stored := bytes.HasSuffix(blob, packed) && len(blob) <= len(packed)+storedOverhead
		if want := len(packed) < StoredSegmentBytes; stored != want {
			t.Errorf("payload %d (packed %d): stored %v, want %v (blob %d bytes)", size, len(packed), stored, want, len(blob))
		}
		got, err := c.Decode(blob)
		if err != nil || !equalFrames(got, frames) {
			t.Fatalf("payload %d: decode: %v", size, err)
		}
		raw, err := plain.DecodeAll(blob, nil)
		if err != nil || !bytes.Equal(raw, packed) {
			t.Fatalf("payload %d: plain zstd decoder: %v", size, err)
		}
	}
	// The stored layout at the bounds of its content-size field.
	for _, n := range []int{2, 255, 256, 257, 4096, 65791} {
		packed := bytes.Repeat([]byte{0xab}, n)
		raw, err := plain.DecodeAll(appendStored(nil, packed), nil)
		if err != nil || !bytes.Equal(raw, packed) {
			t.Fatalf("stored frame of %d bytes: %v", n, err)
		}
	}
}

// BenchmarkEncodeSingle is the segment of a single-message push: one frame
// with a minted transaction id and a 110-byte payload.
func BenchmarkEncodeSingle(b *testing.B) {
	c := testCodec(b)
	frames := []Frame{{ID: [16]byte{1, 2, 3}, TransactionID: "0193a4b2-7c1d-7e3f-8a9b-0c1d2e3f4a5b",
		Payload: []byte(`{"seq":17,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`)}}
	b.ReportAllocs()
	for b.Loop() {
		c.Encode(frames)
	}
}
