package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/adapters/pglocal"
)

// twoPhaseClients is the concurrency of BenchmarkTwoPhaseFloor: transactions in flight.
const twoPhaseClients = 16

// BenchmarkTwoPhaseFloor is the floor under a transaction that spans two database
// clusters (docs/design.md, "Several PostgreSQL clusters"): what PostgreSQL itself
// spends, without the broker, on a two-operation transaction committed on one cluster
// against the same two operations on two clusters under two-phase commit with the
// decision recorded on the first (BEGIN and an INSERT on each, PREPARE TRANSACTION on
// each, the decision's INSERT committed on the first, COMMIT PREPARED on each). Two
// throwaway clusters (fsync and synchronous_commit on, max_prepared_transactions 64),
// twoPhaseClients transactions in flight, the sides alternating in QUEEN_BENCH_ROUNDS
// rounds of QUEEN_BENCH_SECONDS in all. It reports transactions per second, both
// clusters' CPU per transaction (postmasters and backends, /proc) and the ratios. Run
// with -benchtime 1x.
func BenchmarkTwoPhaseFloor(b *testing.B) {
	d, rounds := benchDuration(), benchRounds()
	ctx := context.Background()
	a, bb := startPrepared(b, "a"), startPrepared(b, "b")
	pa, pb := floorPool(b, a.URL()), floorPool(b, bb.URL())
	for _, p := range []*pgxpool.Pool{pa, pb} {
		if _, err := p.Exec(ctx, `CREATE TABLE ops (id bigserial PRIMARY KEY, p text NOT NULL, v bytea NOT NULL)`); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := pa.Exec(ctx, `CREATE TABLE decisions (gid text PRIMARY KEY, commit boolean NOT NULL, at timestamptz NOT NULL DEFAULT now())`); err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 256)
	var seq atomic.Int64
	one := func(ctx context.Context) error {
		tx, err := pa.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		for _, p := range []string{"p1", "p2"} {
			if _, err := tx.Exec(ctx, `INSERT INTO ops (p, v) VALUES ($1, $2)`, p, payload); err != nil {
				return err
			}
		}
		return tx.Commit(ctx)
	}
	two := func(ctx context.Context) error {
		gid := fmt.Sprintf("queen:%d", seq.Add(1))
		for i, p := range []*pgxpool.Pool{pa, pb} {
			if err := prepare(ctx, p, fmt.Sprintf("%s:%d", gid, i), payload); err != nil {
				return err
			}
		}
		if _, err := pa.Exec(ctx, `INSERT INTO decisions (gid, commit) VALUES ($1, true)`, gid); err != nil {
			return err
		}
		for i, p := range []*pgxpool.Pool{pa, pb} {
			if _, err := p.Exec(ctx, fmt.Sprintf(`COMMIT PREPARED '%s:%d'`, gid, i)); err != nil {
				return err
			}
		}
		return nil
	}
	sides := []struct {
		name string
		fn   func(context.Context) error
		txns int64
		took time.Duration
		cpu  time.Duration
	}{{name: "one cluster", fn: one}, {name: "two clusters, 2PC", fn: two}}
	b.ResetTimer()
	for range b.N {
		for r := range rounds {
			for i := range sides {
				s := &sides[i]
				cpu0 := clusterCPU(b, a.PID()) + clusterCPU(b, bb.PID())
				res := runLoad(twoPhaseClients, d/time.Duration(rounds)/2, func(int, int) (int, error) {
					return 1, s.fn(context.Background())
				})
				if res.errors > 0 {
					b.Fatalf("%s: %d transactions failed", s.name, res.errors)
				}
				s.txns, s.took = s.txns+res.msgs, s.took+res.elapsed
				s.cpu += clusterCPU(b, a.PID()) + clusterCPU(b, bb.PID()) - cpu0
			}
			b.Logf("round %d done", r)
		}
	}
	b.StopTimer()
	base := sides[0]
	for _, s := range sides {
		rate := float64(s.txns) / s.took.Seconds()
		cpu := float64(s.cpu.Microseconds()) / float64(s.txns)
		b.Logf("%s: %.0f txns/s (%.3fx), PostgreSQL CPU %.1f µs/txn (%.3fx)", s.name, rate,
			rate/(float64(base.txns)/base.took.Seconds()), cpu, cpu/(float64(base.cpu.Microseconds())/float64(base.txns)))
	}
	two2 := sides[1]
	b.ReportMetric(float64(two2.cpu.Microseconds())/float64(two2.txns)/(float64(base.cpu.Microseconds())/float64(base.txns)), "pg-cpu/txn-2pc/one")
	b.ReportMetric((float64(two2.txns)/two2.took.Seconds())/(float64(base.txns)/base.took.Seconds()), "txns/s-2pc/one")
}

// prepare runs one operation on p in a transaction and prepares it as gid.
func prepare(ctx context.Context, p *pgxpool.Pool, gid string, payload []byte) error {
	c, err := p.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	if _, err := c.Exec(ctx, `BEGIN`); err != nil {
		return err
	}
	if _, err := c.Exec(ctx, `INSERT INTO ops (p, v) VALUES ('p', $1)`, payload); err != nil {
		_, _ = c.Exec(ctx, `ROLLBACK`)
		return err
	}
	_, err = c.Exec(ctx, fmt.Sprintf(`PREPARE TRANSACTION '%s'`, gid))
	return err
}

// startPrepared starts a throwaway cluster that accepts prepared transactions, stopped at
// the benchmark's end.
func startPrepared(b *testing.B, name string) *pglocal.Server {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := pglocal.Start(ctx, filepath.Join(b.TempDir(), name), pglocal.Options{MaxConnections: 100,
		Settings: map[string]string{"max_prepared_transactions": "64", "fsync": "on", "synchronous_commit": "on"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = srv.Stop(ctx)
	})
	return srv
}

// floorPool is a pool of twoPhaseClients connections to url, closed at the end.
func floorPool(b *testing.B, url string) *pgxpool.Pool {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = twoPhaseClients
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	return p
}
