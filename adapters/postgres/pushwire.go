package postgres

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queen-go/queen/ports"
)

// The bundle call's wire encoding. A fused bundle is the broker's most frequent
// statement (one per commit, about 26 single-message segments under 64 clients), and
// pgx's generic path costs about 2 µs of broker CPU per segment on it: each array
// element is planned and encoded through interfaces, the parameter buffer is cut back
// to 256 bytes after every call and regrown for the next 4-8 KB bundle, and each result
// row is scanned by reflection. Here the eight parameters are written in PostgreSQL's
// binary array format into one pooled buffer, the statement is sent with
// pgconn.ExecPrepared, and the rows are read from their binary values.
//
// Binary array layout (PostgreSQL's array_send), big-endian int32s:
//
//	ndim (1) | has-nulls flag (0) | element type OID | length | lower bound (1) |
//	then per element: byte length | bytes
//
// Result columns (log_push_multi_v4/v3/v2's RETURNS TABLE, partition_id cast to text):
// ord int4, partition_id text, base_offset int8 (NULL: duplicate or refused),
// created_at timestamptz (int64 µs since 2000-01-01 UTC), window_seconds int4, dup_idx
// int4[], dup_off int8[] (NULL unless duplicate). A refused segment (v4: plaintext for
// a queue that encrypts) has base_offset and dup_idx NULL, and may have every other
// column but ord NULL. pushFieldOIDs pins them: a statement whose description differs
// is refused before it runs.

// PostgreSQL type OIDs of the bundle call.
const (
	oidBool        = 16
	oidBytea       = 17
	oidInt8        = 20
	oidInt4        = 23
	oidText        = 25
	oidUUID        = 2950
	oidTimestamptz = 1184
	oidInt4Array   = 1007
	oidInt8Array   = 1016
)

// pushFieldOIDs are the result columns' types, in order.
var pushFieldOIDs = [...]uint32{oidInt4, oidText, oidInt8, oidTimestamptz, oidInt4, oidInt4Array, oidInt8Array}

// paramFormats and resultFormats have one binary format code per parameter, and per
// result column, of the bundle call.
var (
	paramFormats  = [...]int16{1, 1, 1, 1, 1, 1, 1, 1}
	resultFormats = [len(pushFieldOIDs)]int16{1, 1, 1, 1, 1, 1, 1}
)

// postgresEpochMicros is timestamptz's zero, 2000-01-01 UTC, in µs since the Unix epoch.
const postgresEpochMicros = 946_684_800_000_000

// pushParams holds one bundle call's encoded parameters; pooled, so a bundle's 4-8 KB
// are written into a buffer that already has the room.
type pushParams struct {
	buf    []byte
	values [8][]byte
}

var pushParamsPool = sync.Pool{New: func() any { return &pushParams{buf: make([]byte, 0, 8<<10)} }}

// maxPooledParams bounds the buffer kept for the next bundle (a bundle of 100-message
// segments can be megabytes): a larger one is left to the garbage collector.
const maxPooledParams = 256 << 10

func (p *pushParams) release() {
	if cap(p.buf) <= maxPooledParams {
		p.buf, p.values = p.buf[:0], [8][]byte{}
		pushParamsPool.Put(p)
	}
}

// encodePushParams writes log_push_multi_v4's eight arrays for segs: queues,
// partitions, counts, hashes, verified watermarks, blobs, tenants (NULL when every
// segment is the default tenant's: the function fills it in without parsing n UUIDs)
// and plain flags (NULL when no segment is Plain: the function checks nothing).
func encodePushParams(segs []ports.Segment) (*pushParams, error) {
	p := pushParamsPool.Get().(*pushParams)
	n := len(segs)
	b := p.buf[:0]
	var start [8]int
	start[0], b = len(b), arrayHeader(b, oidText, n)
	for _, sg := range segs {
		b = appendElem(b, sg.Queue)
	}
	start[1], b = len(b), arrayHeader(b, oidText, n)
	for _, sg := range segs {
		b = appendElem(b, sg.Partition)
	}
	start[2], b = len(b), arrayHeader(b, oidInt4, n)
	for _, sg := range segs {
		if sg.Count < 0 || sg.Count > math.MaxInt32 {
			p.release()
			return nil, fmt.Errorf("postgres: push: segment of %d messages: %w", sg.Count, ports.ErrInvalid)
		}
		b = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(b, 4), uint32(sg.Count))
	}
	start[3], b = len(b), arrayHeader(b, oidBytea, n)
	for _, sg := range segs {
		b = appendElem(b, sg.Hashes)
	}
	start[4], b = len(b), arrayHeader(b, oidInt8, n)
	for _, sg := range segs {
		b = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(b, 8), uint64(sg.Verified))
	}
	start[5], b = len(b), arrayHeader(b, oidBytea, n)
	for _, sg := range segs {
		b = appendElem(b, sg.Blob)
	}
	start[6] = len(b)
	if !defaultTenantOnly(segs) {
		b = arrayHeader(b, oidUUID, n)
		for _, sg := range segs {
			id, err := uuid.Parse(tenantOf(sg))
			if err != nil {
				p.release()
				return nil, fmt.Errorf("postgres: push: tenant %q: %w", sg.Tenant, ports.ErrInvalid)
			}
			b = append(binary.BigEndian.AppendUint32(b, 16), id[:]...)
		}
	}
	start[7] = len(b)
	if anyPlain(segs) {
		b = arrayHeader(b, oidBool, n)
		for _, sg := range segs {
			v := byte(0)
			if sg.Plain {
				v = 1
			}
			b = append(binary.BigEndian.AppendUint32(b, 1), v)
		}
	}
	// Slice only once the buffer stopped growing: earlier slices would point into an
	// array that append has since replaced.
	for i := range 6 {
		p.values[i] = b[start[i]:start[i+1]]
	}
	if start[7] > start[6] {
		p.values[6] = b[start[6]:start[7]]
	}
	if len(b) > start[7] {
		p.values[7] = b[start[7]:]
	}
	p.buf = b
	return p, nil
}

func tenantOf(sg ports.Segment) string { return tenantOr(sg.Tenant) }

// tenantOr is tenant, or the default tenant when it is empty (requests without one).
func tenantOr(tenant string) string {
	if tenant == "" {
		return ports.DefaultTenant
	}
	return tenant
}

func anyPlain(segs []ports.Segment) bool {
	for _, sg := range segs {
		if sg.Plain {
			return true
		}
	}
	return false
}

func defaultTenantOnly(segs []ports.Segment) bool {
	for _, sg := range segs {
		if tenantOf(sg) != ports.DefaultTenant {
			return false
		}
	}
	return true
}

// arrayHeader appends a one-dimensional, NULL-free array header of n elements of oid.
func arrayHeader(b []byte, oid uint32, n int) []byte {
	for _, v := range [...]uint32{1, 0, oid, uint32(n), 1} {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b
}

// appendElem appends one element: its length, then its bytes.
func appendElem[S string | []byte](b []byte, v S) []byte {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(v))), v...)
}

// checkPushFields refuses a statement whose result columns are not the bundle call's.
func checkPushFields(sd *pgconn.StatementDescription) error {
	if len(sd.Fields) != len(pushFieldOIDs) {
		return fmt.Errorf("postgres: push: statement %s returns %d columns, want %d: %w", sd.Name, len(sd.Fields), len(pushFieldOIDs), ports.ErrInvalid)
	}
	for i, f := range sd.Fields {
		if f.DataTypeOID != pushFieldOIDs[i] {
			return fmt.Errorf("postgres: push: statement %s column %s has type %d, want %d: %w", sd.Name, f.Name, f.DataTypeOID, pushFieldOIDs[i], ports.ErrInvalid)
		}
	}
	return nil
}

// errWire is a malformed value in a bundle call's result.
var errWire = errors.New("postgres: push: malformed result value")

// decodePushRow reads one result row (binary values, the columns of pushFieldOIDs)
// into its ordinal and result.
func decodePushRow(vals [][]byte) (int32, ports.SegmentResult, error) {
	var r ports.SegmentResult
	if len(vals) != len(pushFieldOIDs) {
		return 0, r, fmt.Errorf("%w: %d columns", errWire, len(vals))
	}
	ord, err := int4Of(vals[0])
	if err != nil {
		return 0, r, err
	}
	if vals[2] == nil && vals[5] == nil { // neither stored nor a duplicate: refused
		r.Status, r.PartitionID = ports.SegmentEncrypted, string(vals[1])
		return ord, r, nil
	}
	if vals[1] == nil {
		return 0, r, fmt.Errorf("%w: NULL partition id", errWire)
	}
	r.PartitionID = string(vals[1])
	if vals[2] == nil { // no base offset: the segment duplicates stored history
		idx, err := int4s(vals[5])
		if err != nil {
			return 0, r, err
		}
		off, err := int8s(vals[6])
		if err != nil {
			return 0, r, err
		}
		if len(idx) != len(off) {
			return 0, r, fmt.Errorf("%w: %d duplicate frames, %d offsets", errWire, len(idx), len(off))
		}
		r.Status, r.Dups = ports.SegmentDuplicate, make([]ports.Dup, len(idx))
		for k := range idx {
			r.Dups[k] = ports.Dup{Index: int(idx[k]), Offset: off[k]}
		}
		return ord, r, nil
	}
	if len(vals[2]) != 8 || len(vals[3]) != 8 {
		return 0, r, fmt.Errorf("%w: base offset of %d bytes, created_at of %d", errWire, len(vals[2]), len(vals[3]))
	}
	window, err := int4Of(vals[4])
	if err != nil {
		return 0, r, err
	}
	us := int64(binary.BigEndian.Uint64(vals[3]))
	r.Status, r.BaseOffset = ports.SegmentQueued, int64(binary.BigEndian.Uint64(vals[2]))
	r.CreatedAt = time.UnixMicro(postgresEpochMicros + us) // local time, as pgx decodes it
	r.Window = time.Duration(window) * time.Second
	return ord, r, nil
}

func int4Of(v []byte) (int32, error) {
	if len(v) != 4 {
		return 0, fmt.Errorf("%w: int4 of %d bytes", errWire, len(v))
	}
	return int32(binary.BigEndian.Uint32(v)), nil
}

// arrayElems checks a binary array of NULL-free fixed-size elements of oid and returns
// its element count and the bytes after its header. A NULL array (nil) has none.
func arrayElems(v []byte, oid uint32, size int) (int, []byte, error) {
	if v == nil {
		return 0, nil, nil
	}
	if len(v) < 12 {
		return 0, nil, fmt.Errorf("%w: array of %d bytes", errWire, len(v))
	}
	ndim, nulls, elem := binary.BigEndian.Uint32(v), binary.BigEndian.Uint32(v[4:]), binary.BigEndian.Uint32(v[8:])
	if ndim == 0 && nulls == 0 && elem == oid && len(v) == 12 {
		return 0, nil, nil // empty array
	}
	if ndim != 1 || nulls != 0 || elem != oid || len(v) < 20 {
		return 0, nil, fmt.Errorf("%w: array header (dimensions %d, nulls %d, type %d, %d bytes)", errWire, ndim, nulls, elem, len(v))
	}
	n := binary.BigEndian.Uint32(v[12:])
	body := v[20:]
	if uint64(n)*uint64(4+size) != uint64(len(body)) {
		return 0, nil, fmt.Errorf("%w: array of %d elements in %d bytes", errWire, n, len(body))
	}
	return int(n), body, nil
}

func int4s(v []byte) ([]int32, error) {
	return fixedArray(v, oidInt4, 4, func(b []byte) int32 { return int32(binary.BigEndian.Uint32(b)) })
}

func int8s(v []byte) ([]int64, error) {
	return fixedArray(v, oidInt8, 8, func(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) })
}

// fixedArray reads a binary array of NULL-free elements of oid, each size bytes, with
// read.
func fixedArray[T any](v []byte, oid uint32, size int, read func([]byte) T) ([]T, error) {
	n, body, err := arrayElems(v, oid, size)
	if err != nil {
		return nil, err
	}
	out := make([]T, n)
	for i := range out {
		e := body[(4+size)*i:]
		if l := binary.BigEndian.Uint32(e); l != uint32(size) {
			return nil, fmt.Errorf("%w: element of length %d in an array of type %d", errWire, int32(l), oid)
		}
		out[i] = read(e[4:])
	}
	return out, nil
}
