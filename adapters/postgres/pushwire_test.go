package postgres

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queen-go/queen/ports"
)

// Array type OIDs of the parameters, as pgx knows them.
const (
	oidTextArray  = 1009
	oidByteaArray = 1001
	oidUUIDArray  = 2951
	oidBoolArray  = 1000
)

// pgxEncode is pgx's own binary encoding of v as oid: the reference encodePushParams
// must match byte for byte.
func pgxEncode(t testing.TB, oid uint32, v any) []byte {
	t.Helper()
	b, err := pgtype.NewMap().Encode(oid, pgtype.BinaryFormatCode, v, nil)
	if err != nil {
		t.Fatalf("pgx encode %T as %d: %v", v, oid, err)
	}
	return b
}

// randomSegments makes n segments with random names, counts, hashes, watermarks and
// blobs (empty ones included); tenants are all the default one unless mixed, and about
// one bundle in three has plain segments.
func randomSegments(rng *rand.Rand, n int, mixed bool) []ports.Segment {
	plain := rng.IntN(3) == 0
	bytesOf := func(max int) []byte {
		b := make([]byte, rng.IntN(max+1))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	segs := make([]ports.Segment, n)
	for i := range segs {
		segs[i] = ports.Segment{Queue: string(bytesOf(12)), Partition: string(bytesOf(30)), Count: rng.IntN(5000),
			Hashes: bytesOf(64), Verified: rng.Int64N(1<<40) - 1, Blob: bytesOf(300), Plain: plain && rng.IntN(2) == 0}
		if mixed && rng.IntN(2) == 0 {
			segs[i].Tenant = uuid.NewString()
		} else if rng.IntN(2) == 0 {
			segs[i].Tenant = ports.DefaultTenant // "" means the same
		}
	}
	return segs
}

// TestPushParamsMatchPgx: the hand-written parameters of the bundle call are the bytes
// pgx would send for the same arrays, tenants NULL when all are the default one, plain
// flags NULL when no segment is plain.
func TestPushParamsMatchPgx(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	for round := range 200 {
		segs := randomSegments(rng, rng.IntN(40), round%3 == 0)
		p, err := encodePushParams(segs)
		if err != nil {
			t.Fatal(err)
		}
		var queues, parts []string
		var tenants [][16]byte
		var counts []int32
		var verified []int64
		var hashes, blobs [][]byte
		var plain []bool
		for _, sg := range segs {
			plain = append(plain, sg.Plain)
			queues, parts, tenants = append(queues, sg.Queue), append(parts, sg.Partition), append(tenants, uuid.MustParse(tenantOf(sg)))
			counts, verified = append(counts, int32(sg.Count)), append(verified, sg.Verified)
			hashes, blobs = append(hashes, sg.Hashes), append(blobs, sg.Blob)
		}
		want := [][]byte{pgxEncode(t, oidTextArray, queues), pgxEncode(t, oidTextArray, parts),
			pgxEncode(t, oidInt4Array, counts), pgxEncode(t, oidByteaArray, hashes), pgxEncode(t, oidInt8Array, verified),
			pgxEncode(t, oidByteaArray, blobs), nil, nil}
		if !defaultTenantOnly(segs) {
			want[6] = pgxEncode(t, oidUUIDArray, tenants)
		}
		if slices.Contains(plain, true) {
			want[7] = pgxEncode(t, oidBoolArray, plain)
		}
		for i := range want {
			if len(segs) == 0 && i < 6 {
				// pgx writes an empty array with no dimensions; ours says one of length 0:
				// PostgreSQL reads both as '{}'.
				continue
			}
			if !bytes.Equal(p.values[i], want[i]) {
				t.Fatalf("round %d, parameter %d:\n got %x\nwant %x", round, i+1, p.values[i], want[i])
			}
		}
		p.release()
	}
}

func TestPushParamsRefuseBadInput(t *testing.T) {
	t.Parallel()
	for name, sg := range map[string]ports.Segment{
		"negative count": {Queue: "q", Partition: "p", Count: -1},
		"bad tenant":     {Tenant: "not-a-uuid", Queue: "q", Partition: "p", Count: 1},
	} {
		if _, err := encodePushParams([]ports.Segment{sg}); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
}

// row builds a result row's binary values as PostgreSQL sends them (pgx encodes them).
func row(t testing.TB, ord int32, pid string, base *int64, at time.Time, window int32, idx []int32, off []int64) [][]byte {
	t.Helper()
	vals := [][]byte{pgxEncode(t, oidInt4, ord), []byte(pid), nil, pgxEncode(t, oidTimestamptz, at), pgxEncode(t, oidInt4, window), nil, nil}
	if base != nil {
		vals[2] = pgxEncode(t, oidInt8, *base)
	}
	if idx != nil {
		vals[5], vals[6] = pgxEncode(t, oidInt4Array, idx), pgxEncode(t, oidInt8Array, off)
	}
	return vals
}

func TestDecodePushRow(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 13, 4, 5, 123456000, time.UTC)
	base := int64(1 << 40)
	tests := []struct {
		name string
		vals [][]byte
		ord  int32
		want ports.SegmentResult
	}{
		{name: "queued", vals: row(t, 3, "pid-1", &base, at, 600, nil, nil), ord: 3,
			want: ports.SegmentResult{Status: ports.SegmentQueued, PartitionID: "pid-1", BaseOffset: base, CreatedAt: at, Window: 600 * time.Second}},
		{name: "duplicate", vals: row(t, 1, "pid-2", nil, at, 0, []int32{0, 4}, []int64{7, 1 << 35}), ord: 1,
			want: ports.SegmentResult{Status: ports.SegmentDuplicate, PartitionID: "pid-2", Dups: []ports.Dup{{Index: 0, Offset: 7}, {Index: 4, Offset: 1 << 35}}}},
		{name: "refused", vals: [][]byte{pgxEncode(t, oidInt4, int32(4)), nil, nil, nil, nil, nil, nil}, ord: 4,
			want: ports.SegmentResult{Status: ports.SegmentEncrypted}},
		{name: "refused, partition named", vals: row(t, 5, "pid-4", nil, at, 0, nil, nil), ord: 5,
			want: ports.SegmentResult{Status: ports.SegmentEncrypted, PartitionID: "pid-4"}},
		{name: "duplicate, empty arrays", vals: row(t, 2, "pid-3", nil, at, 0, []int32{}, []int64{}), ord: 2,
			want: ports.SegmentResult{Status: ports.SegmentDuplicate, PartitionID: "pid-3", Dups: []ports.Dup{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ord, got, err := decodePushRow(tc.vals)
			if err != nil {
				t.Fatal(err)
			}
			if ord != tc.ord || got.Status != tc.want.Status || got.PartitionID != tc.want.PartitionID ||
				got.BaseOffset != tc.want.BaseOffset || !got.CreatedAt.Equal(tc.want.CreatedAt) || got.Window != tc.want.Window ||
				!slices.Equal(got.Dups, tc.want.Dups) {
				t.Fatalf("decoded %d %+v, want %d %+v", ord, got, tc.ord, tc.want)
			}
		})
	}
}

// FuzzDecodePushRow: whatever bytes a row carries, decoding answers or refuses without
// panicking, and arrays it accepts hold the elements their header announced.
func FuzzDecodePushRow(f *testing.F) {
	ints := binary.BigEndian.AppendUint32(nil, 7)
	f.Add(ints, []byte("pid"), []byte{}, []byte{}, ints, []byte{}, []byte{})
	seed := row(f, 1, "p", nil, time.Unix(0, 0), 0, []int32{1, 2}, []int64{3, 4})
	f.Add(seed[0], seed[1], seed[2], seed[3], seed[4], seed[5], seed[6])
	f.Fuzz(func(t *testing.T, a, b, c, d, e, g, h []byte) {
		_, r, err := decodePushRow([][]byte{a, b, c, d, e, g, h})
		if err != nil {
			return
		}
		if r.Status == ports.SegmentDuplicate {
			if n, _, _ := arrayElems(g, oidInt4, 4); n != len(r.Dups) {
				t.Fatalf("%d duplicates from an array of %d", len(r.Dups), n)
			}
		}
	})
}

// TestPushBundleMixedTenants: a bundle with segments of two tenants sends the tenant
// array (not NULL), and each tenant gets its own queue and partition.
func TestPushBundleMixedTenants(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{PoolSize: 2})
	other := "00000000-0000-0000-0000-000000000002"
	a, b := oneFrame("tq", "p", "t-a"), oneFrame("tq", "p", "t-b")
	b.Tenant = other
	res, err := s.PushSegments(t.Context(), []ports.Segment{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Status != ports.SegmentQueued || res[1].Status != ports.SegmentQueued || res[0].PartitionID == res[1].PartitionID ||
		res[0].BaseOffset != 0 || res[1].BaseOffset != 0 {
		t.Fatalf("results %+v: want both queued at offset 0 in two partitions", res)
	}
	var tenants int
	if err := s.pool.QueryRow(t.Context(), `SELECT count(DISTINCT tenant_id) FROM queen.queues WHERE name = 'tq'`).Scan(&tenants); err != nil || tenants != 2 {
		t.Fatalf("queue tq under %d tenants (%v), want 2", tenants, err)
	}
}
