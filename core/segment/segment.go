package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Version is the packed layout version written in the first byte.
const Version = 1

// Frame flags (see doc.go).
const (
	FlagEncrypted   = 1 << 0
	FlagProducerSub = 1 << 1
	FlagTrace       = 1 << 2
	knownFlags      = FlagEncrypted | FlagProducerSub | FlagTrace
)

// MaxDecodedBytes bounds the decompressed size of one blob (1 GiB): a hostile or corrupt
// blob cannot make the decoder allocate without bound.
const MaxDecodedBytes = 1 << 30

// Frame is one message of a segment.
type Frame struct {
	ID            [16]byte
	TransactionID string
	ProducerSub   string   // "" when none
	TraceID       [16]byte // meaningful when HasTrace
	HasTrace      bool
	Encrypted     bool
	Payload       []byte // raw JSON (or encryption envelope)
}

// ErrCorrupt is wrapped by every decoding error.
var ErrCorrupt = errors.New("segment: corrupt blob")

// SmallSegmentBytes is the packed size below which segments are compressed at zstd's
// fastest level, without entropy coding of literals, whatever the configured level: on
// inputs this small the higher levels spend more time resetting their match tables than
// they save in bytes, and building Huffman tables for a few hundred literal bytes is a
// visible share of the broker's CPU under single-message pushes, where most segments
// are one or two frames (docs/benchmarks.md, "Micro-benchmarks").
const SmallSegmentBytes = 4 << 10

// StoredSegmentBytes is the packed size below which segments are not compressed at all:
// the blob is a zstd frame holding one raw (stored) block, which every zstd decoder
// reads. A segment this small is one to three frames, mostly a message id, a transaction
// id and one payload, and LZ matching without entropy coding saves it few bytes, while
// an EncodeAll call costs microseconds (tables reset per call): under single-message
// pushes, where nearly every segment is one frame, that was about 4% of the broker's CPU
// per message (docs/benchmarks.md).
const StoredSegmentBytes = 512

// Codec compresses and decompresses blobs. It is safe for concurrent use.
type Codec struct {
	enc   *zstd.Encoder // configured level, for segments of SmallSegmentBytes and more
	small *zstd.Encoder // fastest level, for smaller segments
	dec   *zstd.Decoder
	bufs  sync.Pool // *[]byte scratch for packing
}

// NewCodec returns a codec compressing at the given zstd level (1-22).
func NewCodec(level int) (*Codec, error) {
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithZeroFrames(true))
	if err != nil {
		return nil, fmt.Errorf("segment: zstd encoder: %w", err)
	}
	small, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithNoEntropyCompression(true),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithZeroFrames(true))
	if err != nil {
		return nil, fmt.Errorf("segment: zstd encoder: %w", err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(MaxDecodedBytes))
	if err != nil {
		return nil, fmt.Errorf("segment: zstd decoder: %w", err)
	}
	return &Codec{enc: enc, small: small, dec: dec}, nil
}

// Encode packs frames and compresses them into a new blob.
func (c *Codec) Encode(frames []Frame) []byte {
	bp, _ := c.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	packed := Pack((*bp)[:0], frames)
	if len(packed) < StoredSegmentBytes {
		blob := appendStored(make([]byte, 0, len(packed)+storedOverhead), packed)
		*bp = packed
		c.bufs.Put(bp)
		return blob
	}
	enc := c.enc
	if len(packed) < SmallSegmentBytes {
		enc = c.small
	}
	// Room for the incompressible case (raw blocks plus frame header), so small blobs
	// are not copied to a bigger slice halfway.
	blob := enc.EncodeAll(packed, make([]byte, 0, len(packed)+len(packed)>>7+64))
	*bp = packed
	c.bufs.Put(bp)
	return blob
}

// storedOverhead is the size of a stored frame's header: the magic number, the frame
// header descriptor, a content size of up to two bytes, and the block header.
const storedOverhead = 4 + 1 + 2 + 3

// appendStored appends packed (shorter than 65,792 bytes) to dst as one zstd frame
// with a single raw block (RFC 8878 §3.1.1): a single-segment frame whose content size
// is given, no window descriptor, no dictionary and no checksum.
func appendStored(dst, packed []byte) []byte {
	n := len(packed)
	dst = append(dst, 0x28, 0xb5, 0x2f, 0xfd) // magic number 0xFD2FB528, little-endian
	if n < 256 {
		dst = append(dst, 0x20, byte(n)) // Single_Segment_flag; a 1-byte Frame_Content_Size
	} else {
		v := n - 256 // a 2-byte Frame_Content_Size holds the size minus 256
		dst = append(dst, 0x60, byte(v), byte(v>>8))
	}
	bh := 1 | uint32(n)<<3 // Last_Block, Block_Type 0 (raw), Block_Size
	dst = append(dst, byte(bh), byte(bh>>8), byte(bh>>16))
	return append(dst, packed...)
}

// Decode decompresses and unpacks a blob. Payloads of the returned frames point into
// one freshly allocated buffer.
func (c *Codec) Decode(blob []byte) ([]Frame, error) {
	packed, err := c.dec.DecodeAll(blob, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
	}
	return Unpack(packed)
}

// Pack appends the packed layout of frames to dst.
func Pack(dst []byte, frames []Frame) []byte {
	dst = append(dst, Version)
	dst = binary.AppendUvarint(dst, uint64(len(frames)))
	for i := range frames {
		f := &frames[i]
		var flags byte
		if f.Encrypted {
			flags |= FlagEncrypted
		}
		if f.ProducerSub != "" {
			flags |= FlagProducerSub
		}
		if f.HasTrace {
			flags |= FlagTrace
		}
		dst = append(dst, flags)
		dst = append(dst, f.ID[:]...)
		dst = binary.AppendUvarint(dst, uint64(len(f.TransactionID)))
		dst = append(dst, f.TransactionID...)
		if f.ProducerSub != "" {
			dst = binary.AppendUvarint(dst, uint64(len(f.ProducerSub)))
			dst = append(dst, f.ProducerSub...)
		}
		if f.HasTrace {
			dst = append(dst, f.TraceID[:]...)
		}
		dst = binary.AppendUvarint(dst, uint64(len(f.Payload)))
		dst = append(dst, f.Payload...)
	}
	return dst
}

// Unpack parses a packed (decompressed) segment. Payloads alias packed.
func Unpack(packed []byte) ([]Frame, error) {
	r := reader{b: packed}
	v, err := r.byte()
	if err != nil {
		return nil, err
	}
	if v != Version {
		return nil, fmt.Errorf("%w: unknown version %d", ErrCorrupt, v)
	}
	n, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	// Every frame takes at least 19 bytes (flags, id, two empty lengths): a count that
	// cannot fit in what is left is corrupt, and is refused before allocating.
	if n > uint64(len(r.b))/19 {
		return nil, fmt.Errorf("%w: %d frames cannot fit in %d bytes", ErrCorrupt, n, len(r.b))
	}
	frames := make([]Frame, n)
	for i := range frames {
		if err := r.frame(&frames[i]); err != nil {
			return nil, fmt.Errorf("frame %d: %w", i, err)
		}
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(r.b))
	}
	return frames, nil
}

type reader struct{ b []byte }

func (r *reader) byte() (byte, error) {
	if len(r.b) < 1 {
		return 0, fmt.Errorf("%w: truncated", ErrCorrupt)
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v, nil
}

func (r *reader) uvarint() (uint64, error) {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad varint", ErrCorrupt)
	}
	r.b = r.b[n:]
	return v, nil
}

func (r *reader) bytes(n uint64) ([]byte, error) {
	if n > uint64(len(r.b)) {
		return nil, fmt.Errorf("%w: length %d exceeds remaining %d bytes", ErrCorrupt, n, len(r.b))
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v, nil
}

func (r *reader) lenBytes() ([]byte, error) {
	n, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	return r.bytes(n)
}

func (r *reader) frame(f *Frame) error {
	flags, err := r.byte()
	if err != nil {
		return err
	}
	if flags&^knownFlags != 0 {
		return fmt.Errorf("%w: unknown flags %#x", ErrCorrupt, flags)
	}
	id, err := r.bytes(16)
	if err != nil {
		return err
	}
	copy(f.ID[:], id)
	txn, err := r.lenBytes()
	if err != nil {
		return err
	}
	f.TransactionID = string(txn)
	if flags&FlagProducerSub != 0 {
		sub, err := r.lenBytes()
		if err != nil {
			return err
		}
		f.ProducerSub = string(sub)
	}
	if flags&FlagTrace != 0 {
		tr, err := r.bytes(16)
		if err != nil {
			return err
		}
		copy(f.TraceID[:], tr)
		f.HasTrace = true
	}
	f.Encrypted = flags&FlagEncrypted != 0
	f.Payload, err = r.lenBytes()
	return err
}
