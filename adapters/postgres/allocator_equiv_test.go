package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/ports"
)

// The equivalence test a set-based allocator must pass (docs/design.md "Decisions"):
// the set-based bundle function (log_push_multi_v3, the broker's only allocator path)
// against its per-segment reference (log_push_multi_v2 calling log_push_one_v2 per
// segment), driven with the same random bundles on two databases of one cluster.
// Bundles mix queues with and without a dedup window, duplicates inside a segment,
// inside a bundle and across bundles, several segments of one partition in one bundle,
// new partitions, empty segments (both must refuse the bundle alike), every kind of
// caller watermark, hash history cut by retention (txns_start) and aged out of the
// window. After every bundle the two answers must match (status, base offset, window,
// duplicate frames and their offsets) and at the end the stored rows must be the same.
// A concurrent phase then runs several bundles at once on overlapping partitions on
// each side.

// refPushStmt is pushStmt on the per-segment reference, which has no plain flags: it
// takes the encoder's eighth parameter and ignores it (no queue of the test encrypts,
// so v4 commits a plain segment as v3, hence v2, would).
var refPushStmt = bundleStmt{name: "queen_push_multi_v2_ref",
	sql: strings.Replace(strings.Replace(pushStmt.sql, "log_push_multi_v4", "log_push_multi_v2", 1),
		", $8::bool[])", ") WHERE $8::bool[] IS NULL OR $8::bool[] IS NOT NULL", 1)}

const (
	equivDedupQueue = "eq-dedup" // dedup window 3600 s
	equivPlainQueue = "eq-plain" // dedup window 0
)

// equivSide is one database and the bundle function it is driven through.
type equivSide struct {
	name string
	s    *Store
	stmt bundleStmt
}

func (d equivSide) push(ctx context.Context, segs []ports.Segment) ([]ports.SegmentResult, error) {
	var out []ports.SegmentResult
	err := d.s.run(ctx, "equivalence", func(ctx context.Context, c *pgxpool.Conn) error {
		var err error
		out, err = pushBundleWith(ctx, c, d.stmt, segs)
		return err
	})
	return out, err
}

// rows dumps a query's rows as strings, for comparing two databases.
func (d equivSide) rows(t *testing.T, sql string) []string {
	t.Helper()
	rows, err := d.s.pool.Query(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %s: %v", d.name, sql, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(vals...))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Stored state by names (partition ids differ between the databases), in key order.
const (
	equivPartitionsSQL = `SELECT q.name, ' ', lp.name, ' ', lp.last_offset, ' ', lp.txns_start
		FROM queen.log_partitions lp JOIN queen.queues q ON q.id = lp.queue_id ORDER BY 1, 3`
	equivSegmentsSQL = `SELECT q.name, ' ', lp.name, ' ', s.base_offset, ' ', s.msg_count, ' ', encode(s.blob, 'escape')
		FROM queen.log_segments s JOIN queen.log_partitions lp ON lp.id = s.partition_id
		JOIN queen.queues q ON q.id = lp.queue_id ORDER BY 1, 3, 5`
	equivTxnsSQL = `SELECT q.name, ' ', lp.name, ' ', t.end_offset, ' ', t.base_offset, ' ', encode(t.hashes, 'hex')
		FROM queen.log_txns t JOIN queen.log_partitions lp ON lp.id = t.partition_id
		JOIN queen.queues q ON q.id = lp.queue_id ORDER BY 1, 3, 5`
)

func newEquivSides(t *testing.T) (ref, set equivSide) {
	ref = equivSide{name: "per-segment reference", s: newStore(t, Options{PoolSize: 6}), stmt: refPushStmt}
	set = equivSide{name: "set-based", s: newStore(t, Options{PoolSize: 6}), stmt: pushStmt}
	for _, d := range []equivSide{ref, set} {
		d.s.exec(t, `INSERT INTO queen.queues (tenant_id, name, namespace, task, dedup_window_seconds)
			VALUES ($1::uuid, $2, '', '', 3600), ($1::uuid, $3, '', '', 0)`,
			ports.DefaultTenant, equivDedupQueue, equivPlainQueue)
	}
	return ref, set
}

// equivGen draws random bundles.
type equivGen struct {
	rng      *rand.Rand
	alphabet [][]byte // transaction-id hashes: few, so that duplicates are common
	parts    int      // partitions per queue so far (new ones appear over time)
	blobs    int
}

func newEquivGen(seed uint64, prefix string, hashes int) *equivGen {
	g := &equivGen{rng: rand.New(rand.NewPCG(seed, 18)), parts: 2}
	for i := range hashes {
		h := make([]byte, 16)
		copy(h, fmt.Sprintf("%s-%d", prefix, i))
		g.alphabet = append(g.alphabet, h)
	}
	return g
}

// bundle draws 1-8 segments; last gives a partition's last offset on the reference
// side (-1 when it does not exist) for the watermark choices.
func (g *equivGen) bundle(last func(queue, part string) int64, queues []string, tag string) []ports.Segment {
	if g.rng.IntN(10) == 0 {
		g.parts++ // a new partition
	}
	segs := make([]ports.Segment, 1+g.rng.IntN(8))
	for i := range segs {
		q, p := queues[g.rng.IntN(len(queues))], fmt.Sprintf("p%d", g.rng.IntN(g.parts))
		n := 1 + g.rng.IntN(4)
		if g.rng.IntN(60) == 0 {
			n = 0 // an empty segment: both sides must refuse the whole bundle
		}
		hashes := make([]byte, 0, 16*n)
		for range n {
			hashes = append(hashes, g.alphabet[g.rng.IntN(len(g.alphabet))]...)
		}
		g.blobs++
		segs[i] = ports.Segment{Tenant: ports.DefaultTenant, Queue: q, Partition: p, Count: n, Hashes: hashes,
			Verified: g.watermark(last(q, p)), Blob: fmt.Appendf(nil, "%s-%d", tag, g.blobs),
			Plain: g.rng.IntN(2) == 0} // no queue encrypts: v4 commits plain segments as v3 does
	}
	return segs
}

// watermark is a caller's verified watermark: none, right, stale, or impossible.
func (g *equivGen) watermark(last int64) int64 {
	switch g.rng.IntN(5) {
	case 0:
		return last
	case 1:
		return max(last-1-int64(g.rng.IntN(3)), -1)
	case 2:
		return last + 5 // above the allocator: another incarnation's history
	default:
		return -1
	}
}

func TestAllocatorEquivalence(t *testing.T) {
	t.Parallel()
	ref, set := newEquivSides(t)
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	g := newEquivGen(seed, "h", 24)
	queues := []string{equivDedupQueue, equivPlainQueue}
	refused := 0
	for b := range 300 {
		lasts := lastOffsets(t, ref)
		last := func(q, p string) int64 {
			if v, ok := lasts[q+"/"+p]; ok {
				return v
			}
			return -1
		}
		segs := g.bundle(last, queues, "seq")
		rr, rerr := ref.push(ctx, segs)
		sr, serr := set.push(ctx, segs)
		if rerr != nil || serr != nil {
			if sqlState(rerr) == "" || sqlState(rerr) != sqlState(serr) {
				t.Fatalf("bundle %d (seed %d): reference error %v, set-based error %v", b, seed, rerr, serr)
			}
			refused++
			continue
		}
		compareResults(t, fmt.Sprintf("bundle %d (seed %d)", b, seed), segs, rr, sr, true)
		if b%25 == 24 {
			ageHistory(t, g.rng, ref, set)
		}
	}
	if refused == 0 {
		t.Logf("no bundle was refused in this run (seed %d)", seed)
	}
	for _, q := range []string{equivPartitionsSQL, equivSegmentsSQL, equivTxnsSQL} {
		if a, b := ref.rows(t, q), set.rows(t, q); !slices.Equal(a, b) {
			t.Fatalf("stored rows differ (seed %d) for %s\nreference: %v\nset-based: %v", seed, q, a, b)
		}
	}
}

func TestAllocatorEquivalenceConcurrent(t *testing.T) {
	t.Parallel()
	ref, set := newEquivSides(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	const workers, bundles = 4, 40
	// Each worker draws its own sequence with its own hashes, so a worker's verdicts do
	// not depend on how the workers interleave; partitions overlap between workers.
	gens := func() []*equivGen {
		out := make([]*equivGen, workers)
		for w := range out {
			out[w] = newEquivGen(seed+uint64(w), fmt.Sprintf("w%d", w), 12)
			out[w].parts = 4
		}
		return out
	}
	noWatermark := func(string, string) int64 { return -1 }
	type verdict struct {
		status ports.SegmentStatus
		dups   []int
	}
	run := func(d equivSide) [][]verdict {
		out := make([][]verdict, workers)
		var wg sync.WaitGroup
		for w, g := range gens() {
			wg.Go(func() {
				for b := range bundles {
					segs := g.bundle(noWatermark, []string{equivDedupQueue}, fmt.Sprintf("w%d", w))
					for i := range segs {
						segs[i].Verified = -1 // a watermark would make the verdicts depend on the interleaving
					}
					res, err := d.push(context.Background(), segs)
					if err != nil {
						if sqlState(err) != "22023" {
							t.Errorf("%s: worker %d bundle %d: %v", d.name, w, b, err)
						}
						out[w] = append(out[w], verdict{status: 0}) // refused
						continue
					}
					for _, r := range res {
						v := verdict{status: r.Status}
						for _, dup := range r.Dups {
							v.dups = append(v.dups, dup.Index)
						}
						out[w] = append(out[w], v)
					}
				}
			})
		}
		wg.Wait()
		return out
	}
	var refV, setV [][]verdict
	var both sync.WaitGroup
	both.Go(func() { refV = run(ref) })
	both.Go(func() { setV = run(set) })
	both.Wait()
	for w := range refV {
		if len(refV[w]) != len(setV[w]) {
			t.Fatalf("worker %d: %d verdicts against %d (seed %d)", w, len(refV[w]), len(setV[w]), seed)
		}
		for k := range refV[w] {
			if refV[w][k].status != setV[w][k].status || !slices.Equal(refV[w][k].dups, setV[w][k].dups) {
				t.Fatalf("worker %d segment %d: reference %+v, set-based %+v (seed %d)", w, k, refV[w][k], setV[w][k], seed)
			}
		}
	}
	// Offsets depend on the interleaving; what is stored per partition does not: the
	// same segments (by blob), tiling the offsets without gap, each with its hash row.
	for _, d := range []equivSide{ref, set} {
		checkTiling(t, d)
	}
	if a, b := storedBlobs(t, ref), storedBlobs(t, set); !slices.Equal(a, b) {
		t.Fatalf("stored segments differ (seed %d)\nreference: %v\nset-based: %v", seed, a, b)
	}
}

// compareResults fails unless the two answers to segs agree; offsets too when exact.
func compareResults(t *testing.T, what string, segs []ports.Segment, ref, set []ports.SegmentResult, exact bool) {
	t.Helper()
	for i := range segs {
		r, s := ref[i], set[i]
		same := r.Status == s.Status && r.Window == s.Window && len(r.Dups) == len(s.Dups)
		if exact {
			same = same && r.BaseOffset == s.BaseOffset
		}
		for k := 0; same && k < len(r.Dups); k++ {
			same = r.Dups[k].Index == s.Dups[k].Index && (!exact || r.Dups[k].Offset == s.Dups[k].Offset)
		}
		if !same {
			t.Fatalf("%s, segment %d (%s/%s, %d frames, verified %d): reference %+v, set-based %+v",
				what, i, segs[i].Queue, segs[i].Partition, segs[i].Count, segs[i].Verified, r, s)
		}
	}
}

// ageHistory applies the same history change to both sides: one partition's hash rows
// cut by retention (txns_start moved up), another's aged out of the dedup window.
func ageHistory(t *testing.T, rng *rand.Rand, sides ...equivSide) {
	t.Helper()
	cut, aged := fmt.Sprintf("p%d", rng.IntN(4)), fmt.Sprintf("p%d", rng.IntN(4))
	back := rng.Int64N(3)
	for _, d := range sides {
		d.s.exec(t, `UPDATE queen.log_partitions lp SET txns_start = GREATEST(lp.txns_start, lp.last_offset + 1 - $2)
			FROM queen.queues q WHERE q.id = lp.queue_id AND q.name = $1 AND lp.name = $3`, equivDedupQueue, back, cut)
		d.s.exec(t, `DELETE FROM queen.log_txns t USING queen.log_partitions lp, queen.queues q
			WHERE lp.id = t.partition_id AND q.id = lp.queue_id AND q.name = $1 AND lp.name = $2
			  AND t.base_offset < lp.txns_start`, equivDedupQueue, cut)
		d.s.exec(t, `UPDATE queen.log_txns t SET created_at = t.created_at - interval '2 hours'
			FROM queen.log_partitions lp, queen.queues q
			WHERE lp.id = t.partition_id AND q.id = lp.queue_id AND q.name = $1 AND lp.name = $2`, equivDedupQueue, aged)
	}
}

func lastOffsets(t *testing.T, d equivSide) map[string]int64 {
	t.Helper()
	rows, err := d.s.pool.Query(context.Background(), `SELECT q.name || '/' || lp.name, lp.last_offset
		FROM queen.log_partitions lp JOIN queen.queues q ON q.id = lp.queue_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var k string
		var v int64
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	return out
}

// checkTiling fails unless every partition's segments cover 0..last_offset without gap
// or overlap and each segment has its hash row with the same span.
func checkTiling(t *testing.T, d equivSide) {
	t.Helper()
	bad := d.rows(t, `WITH s AS (
		SELECT s.partition_id, s.base_offset, s.msg_count,
		       lag(s.base_offset + s.msg_count, 1, 0::bigint) OVER (PARTITION BY s.partition_id ORDER BY s.base_offset) AS want
		  FROM queen.log_segments s)
		SELECT 'gap ', s.partition_id::text, ' ', s.base_offset FROM s WHERE s.base_offset <> s.want
		UNION ALL
		SELECT 'end ', lp.id::text, ' ', lp.last_offset FROM queen.log_partitions lp
		 WHERE lp.last_offset <> coalesce((SELECT max(s.base_offset + s.msg_count) - 1 FROM queen.log_segments s
		                                   WHERE s.partition_id = lp.id), -1)
		UNION ALL
		SELECT 'hash row ', s.partition_id::text, ' ', s.base_offset FROM queen.log_segments s
		 WHERE NOT EXISTS (SELECT 1 FROM queen.log_txns x WHERE x.partition_id = s.partition_id
		                      AND x.base_offset = s.base_offset AND x.end_offset = s.base_offset + s.msg_count - 1)`)
	if len(bad) > 0 {
		t.Fatalf("%s: offsets do not tile: %v", d.name, bad)
	}
}

// storedBlobs lists each partition's segments by blob, with their hash rows, sorted.
func storedBlobs(t *testing.T, d equivSide) []string {
	t.Helper()
	out := d.rows(t, `SELECT lp.name, ' ', encode(s.blob, 'escape'), ' ', encode(x.hashes, 'hex')
		FROM queen.log_segments s JOIN queen.log_partitions lp ON lp.id = s.partition_id
		JOIN queen.log_txns x ON x.partition_id = s.partition_id AND x.base_offset = s.base_offset`)
	slices.Sort(out)
	return out
}

// sqlState is err's SQLSTATE, or "" when it is not a PostgreSQL error.
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}
