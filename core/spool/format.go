package spool

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
)

// Layout constants (see doc.go).
const (
	// Version is the data file format version this package writes and reads.
	Version = 1
	// HeaderSize is the size of the data file header in bytes.
	HeaderSize = 16
	// FrameHeaderSize is the size of a record's frame header in bytes.
	FrameHeaderSize = 16
	// MinBodyBytes is the smallest valid body: flags, message id, six one-byte lengths.
	MinBodyBytes = 1 + 16 + 6
	// MaxRecordBytes bounds a record body (128 MiB): twice the largest push body the
	// HTTP adapter accepts (64 MiB), so any pushed item fits, while a damaged length is
	// recognised as impossible instead of being trusted.
	MaxRecordBytes = 128 << 20
	// posSize is the size of a position file in bytes.
	posSize = 32

	flagEncrypted = 1 << 0
	flagTrace     = 1 << 1
	knownFlags    = flagEncrypted | flagTrace
)

var (
	fileMagic   = []byte("QUEENSPL")
	recordMagic = []byte{0xF5, 'Q', 'R', 'C'}
	posMagic    = []byte("QUEENPOS")
	castagnoli  = crc32.MakeTable(crc32.Castagnoli)
)

// ErrRecordTooLarge is returned by Append for a record whose body would exceed
// MaxRecordBytes.
var ErrRecordTooLarge = errors.New("spool: record too large")

func checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// appendHeader appends a version-1 file header.
func appendHeader(dst []byte) []byte {
	start := len(dst)
	dst = append(dst, fileMagic...)
	dst = binary.LittleEndian.AppendUint16(dst, Version)
	dst = binary.LittleEndian.AppendUint16(dst, 0)
	return binary.LittleEndian.AppendUint32(dst, checksum(dst[start:start+12]))
}

// headerStatus classifies the first bytes of a data file.
type headerStatus int

const (
	headerOK          headerStatus = iota
	headerShort                    // fewer than HeaderSize bytes: nothing was ever acknowledged
	headerUnsupported              // a valid header of another version: never interpret
	headerCorrupt                  // wrong magic or CRC: a corrupt region at offset 0
)

func checkHeader(data []byte) (headerStatus, string) {
	if len(data) < HeaderSize {
		return headerShort, ""
	}
	h := data[:HeaderSize]
	if !bytes.Equal(h[:8], fileMagic) || binary.LittleEndian.Uint32(h[12:]) != checksum(h[:12]) {
		return headerCorrupt, "file header: bad magic or checksum"
	}
	v, flags := binary.LittleEndian.Uint16(h[8:]), binary.LittleEndian.Uint16(h[10:])
	if v != Version || flags != 0 {
		return headerUnsupported, fmt.Sprintf("file header: unsupported format version %d flags %#x", v, flags)
	}
	return headerOK, ""
}

// bodySize returns the size in bytes of r's body.
func bodySize(r *Record) int {
	n := 1 + 16
	if r.HasTrace {
		n += 16
	}
	for _, l := range [...]int{len(r.Tenant), len(r.Queue), len(r.Partition), len(r.TransactionID), len(r.ProducerSub), len(r.Payload)} {
		n += uvarintLen(uint64(l)) + l
	}
	return n
}

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// appendFrame appends r as one record frame (header and body).
func appendFrame(dst []byte, r *Record) ([]byte, error) {
	size := bodySize(r)
	if size > MaxRecordBytes {
		return dst, fmt.Errorf("%w: %d body bytes (max %d)", ErrRecordTooLarge, size, MaxRecordBytes)
	}
	start := len(dst)
	dst = slices.Grow(dst, FrameHeaderSize+size)
	dst = append(dst, make([]byte, FrameHeaderSize)...)
	var flags byte
	if r.Encrypted {
		flags |= flagEncrypted
	}
	if r.HasTrace {
		flags |= flagTrace
	}
	dst = append(dst, flags)
	dst = append(dst, r.MessageID[:]...)
	if r.HasTrace {
		dst = append(dst, r.TraceID[:]...)
	}
	for _, s := range [...]string{r.Tenant, r.Queue, r.Partition, r.TransactionID, r.ProducerSub} {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	dst = binary.AppendUvarint(dst, uint64(len(r.Payload)))
	dst = append(dst, r.Payload...)
	body := dst[start+FrameHeaderSize:]
	h := dst[start : start+FrameHeaderSize]
	copy(h, recordMagic)
	binary.LittleEndian.PutUint32(h[4:], uint32(len(body)))
	binary.LittleEndian.PutUint32(h[8:], checksum(body))
	binary.LittleEndian.PutUint32(h[12:], checksum(h[:12]))
	return dst, nil
}

// fields are the parts of a record body, aliasing the body.
type fields struct {
	flags                                 byte
	id, trace                             []byte
	tenant, queue, partition, txn, sub, p []byte
}

var errBody = errors.New("malformed body")

// parseBody splits a body into its fields without allocating; every length is checked
// against the bytes that remain, so a damaged body is an error, never a panic.
func parseBody(b []byte) (fields, error) {
	var f fields
	if len(b) < MinBodyBytes {
		return f, errBody
	}
	f.flags = b[0]
	if f.flags&^knownFlags != 0 {
		return f, errBody
	}
	f.id, b = b[1:17], b[17:]
	if f.flags&flagTrace != 0 {
		if len(b) < 16 {
			return f, errBody
		}
		f.trace, b = b[:16], b[16:]
	}
	for _, dst := range [...]*[]byte{&f.tenant, &f.queue, &f.partition, &f.txn, &f.sub, &f.p} {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return f, errBody
		}
		*dst, b = b[k:k+int(n)], b[k+int(n):]
	}
	if len(b) != 0 {
		return f, errBody
	}
	return f, nil
}

// record copies the fields into a Record that does not alias the file's bytes.
func (f *fields) record() Record {
	r := Record{
		Tenant:        string(f.tenant),
		Queue:         string(f.queue),
		Partition:     string(f.partition),
		TransactionID: string(f.txn),
		ProducerSub:   string(f.sub),
		Encrypted:     f.flags&flagEncrypted != 0,
		HasTrace:      f.flags&flagTrace != 0,
		Payload:       bytes.Clone(f.p),
	}
	if r.Payload == nil {
		r.Payload = []byte{}
	}
	copy(r.MessageID[:], f.id)
	copy(r.TraceID[:], f.trace)
	return r
}

// frameAt checks the record at p of data[:end]. It returns the frame length and the body
// when the record is valid; otherwise torn reports whether the bytes at p look like a
// record cut short by a crash (a frame header too short, or valid but with the body
// running past end), and reason says what is wrong.
func frameAt(data []byte, p, end int) (n int, body []byte, f fields, torn bool, reason string) {
	if end-p < FrameHeaderSize {
		return 0, nil, f, true, "truncated frame header"
	}
	h := data[p : p+FrameHeaderSize]
	if binary.LittleEndian.Uint32(h[12:]) != checksum(h[:12]) {
		return 0, nil, f, false, "frame header checksum mismatch"
	}
	if !bytes.Equal(h[:4], recordMagic) {
		return 0, nil, f, false, "bad record magic"
	}
	size := binary.LittleEndian.Uint32(h[4:])
	if size < MinBodyBytes || size > MaxRecordBytes {
		return 0, nil, f, false, fmt.Sprintf("impossible body length %d", size)
	}
	if uint64(size) > uint64(end-p-FrameHeaderSize) {
		return 0, nil, f, true, "body runs past the end of the file"
	}
	body = data[p+FrameHeaderSize : p+FrameHeaderSize+int(size)]
	if binary.LittleEndian.Uint32(h[8:]) != checksum(body) {
		return 0, nil, f, false, "body checksum mismatch"
	}
	f, err := parseBody(body)
	if err != nil {
		return 0, nil, f, false, "body checksum matches but the body does not decode"
	}
	return FrameHeaderSize + int(size), body, f, false, ""
}

// itemKind is what a scanner step found.
type itemKind int

const (
	itemRecord  itemKind = iota + 1 // a valid record
	itemCorrupt                     // a corrupt region, to quarantine
)

// item is one step of a scan: the span [off, off+n) of the data and, for a record, its
// decoded fields (aliasing the data).
type item struct {
	kind   itemKind
	off, n int
	f      fields
	reason string // itemCorrupt
}

// scanner walks the records of data[:end] from an offset, resyncing after corruption
// as doc.go describes. It only slices data: it never allocates in proportion to a length
// read from the file.
type scanner struct {
	data []byte
	p    int
	end  int
	// header is set while offset 0 (the file header) has not been checked yet.
	header bool
}

// newScanner scans data from byte offset from up to end (0 or beyond len(data) = the
// whole data). Offset 0 means the file header has not been read.
func newScanner(data []byte, from, end int) *scanner {
	if end <= 0 || end > len(data) {
		end = len(data)
	}
	from = max(0, min(from, end))
	return &scanner{data: data, p: from, end: end, header: from == 0}
}

// next returns the next item, or ok false at the end (a torn tail ends the scan
// silently: torn reports whether one was dropped).
func (s *scanner) next() (it item, ok bool) {
	if s.header {
		s.header = false
		st, reason := checkHeader(s.data[:s.end])
		switch st {
		case headerOK:
			s.p = HeaderSize
		case headerShort:
			s.p = s.end
			return it, false
		default: // headerUnsupported is checked by callers before scanning
			return s.damaged(0, reason, false)
		}
	}
	if s.p >= s.end {
		return it, false
	}
	n, _, f, torn, reason := frameAt(s.data, s.p, s.end)
	if n > 0 {
		it = item{kind: itemRecord, off: s.p, n: n, f: f}
		s.p += n
		return it, true
	}
	return s.damaged(s.p, reason, torn)
}

// damaged handles an invalid record (or header) at p: resync to the next valid record,
// or decide whether the tail is torn or corrupt.
func (s *scanner) damaged(p int, reason string, torn bool) (item, bool) {
	if q := s.resync(p); q >= 0 {
		s.p = q
		return item{kind: itemCorrupt, off: p, n: q - p, reason: reason}, true
	}
	s.p = s.end
	if torn || allZero(s.data[p:s.end]) {
		return item{}, false
	}
	return item{kind: itemCorrupt, off: p, n: s.end - p, reason: reason}, true
}

// resync returns the offset of the next valid record after p, or -1.
func (s *scanner) resync(p int) int {
	for i := p + 1; i < s.end; {
		k := bytes.Index(s.data[i:s.end], recordMagic)
		if k < 0 {
			return -1
		}
		c := i + k
		if n, _, _, _, _ := frameAt(s.data, c, s.end); n > 0 {
			return c
		}
		i = c + 1
	}
	return -1
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// position is the content of a .pos file.
type position struct {
	offset int64 // first byte not yet committed or quarantined; 0 = not started
	end    int64 // valid length of the data file; 0 = the whole file
}

func (p position) encode() []byte {
	b := make([]byte, 0, posSize)
	b = append(b, posMagic...)
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(p.offset))
	b = binary.LittleEndian.AppendUint64(b, uint64(p.end))
	return binary.LittleEndian.AppendUint32(b, checksum(b))
}

func decodePosition(b []byte) (position, error) {
	if len(b) != posSize || !bytes.Equal(b[:8], posMagic) ||
		binary.LittleEndian.Uint32(b[28:]) != checksum(b[:28]) {
		return position{}, errors.New("bad magic, size or checksum")
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v != 1 {
		return position{}, fmt.Errorf("unsupported position version %d", v)
	}
	off, end := binary.LittleEndian.Uint64(b[12:]), binary.LittleEndian.Uint64(b[20:])
	if off > 1<<62 || end > 1<<62 {
		return position{}, errors.New("offset out of range")
	}
	return position{offset: int64(off), end: int64(end)}, nil
}
