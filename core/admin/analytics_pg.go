package admin

import (
	"cmp"
	"context"
	"slices"

	"github.com/queen-go/queen/ports"
)

// CacheRatio is a relation's (or a sum's) block reads with the share found in shared
// buffers, in percent (0 when it was never read).
type CacheRatio struct {
	Name, Table string
	ports.CacheFigures
	Ratio float64
}

func cacheRatio(name, table string, c ports.CacheFigures) CacheRatio {
	return CacheRatio{Name: name, Table: table, CacheFigures: c, Ratio: ratio(float64(c.Hits)*100, float64(c.Hits+c.Reads))}
}

// TableHealth is one table's dead tuples and updates, with their shares in percent.
type TableHealth struct {
	ports.TableActivity
	DeadPct, HotPct float64
	// VacuumDue: its dead tuples passed autovacuum's threshold.
	VacuumDue bool
}

// BufferShare is one relation's share of shared buffers, in percent.
type BufferShare struct {
	ports.BufferUse
	Pct float64
}

// PostgresReport is GET /api/v1/analytics/postgres-stats: the statistics views read
// live, ranked.
type PostgresReport struct {
	Stats    ports.PostgresStats
	Database CacheRatio
	// Tables are schema queen's tables by name; Indexes its indexes with the most
	// reads from outside shared buffers first (at most postgresIndexes); TablesSum and
	// IndexesSum the sums over all of them.
	Tables, Indexes       []CacheRatio
	TablesSum, IndexesSum CacheRatio
	// DeadTuples are the tables with dead tuples, the most first; HotUpdates those with
	// updates, the most first; Autovacuum the tables with dead tuples past autovacuum's
	// threshold, the most first.
	DeadTuples, HotUpdates, Autovacuum []TableHealth
	// BufferUsage is nil without pg_buffercache.
	BufferUsage []BufferShare
}

// postgresIndexes bounds the indexes listed.
const postgresIndexes = 20

// Postgres reads the database's statistics: one connection, nine statements at most.
func (a *Analytics) Postgres(ctx context.Context) (PostgresReport, error) {
	return share(ctx, a, "postgres", func(ctx context.Context) (PostgresReport, error) {
		st, err := a.reader.PostgresStats(ctx, a.opts.SlowQuery)
		if err != nil {
			return PostgresReport{}, err
		}
		return postgresReport(st), nil
	})
}

func postgresReport(st ports.PostgresStats) PostgresReport {
	out := PostgresReport{Stats: st, Database: cacheRatio(st.Database.Name, "", st.Database.CacheFigures),
		Tables: []CacheRatio{}, Indexes: []CacheRatio{}, DeadTuples: []TableHealth{}, HotUpdates: []TableHealth{},
		Autovacuum: []TableHealth{}}
	var tsum, isum ports.CacheFigures
	for _, t := range st.Tables {
		out.Tables = append(out.Tables, cacheRatio(t.Table, t.Table, t.CacheFigures))
		tsum.Hits, tsum.Reads = tsum.Hits+t.Hits, tsum.Reads+t.Reads
	}
	for _, i := range st.Indexes {
		out.Indexes = append(out.Indexes, cacheRatio(i.Index, i.Table, i.CacheFigures))
		isum.Hits, isum.Reads = isum.Hits+i.Hits, isum.Reads+i.Reads
	}
	slices.SortStableFunc(out.Indexes, func(x, y CacheRatio) int {
		return cmp.Or(cmp.Compare(y.Reads, x.Reads), cmp.Compare(y.Hits, x.Hits), cmp.Compare(x.Name, y.Name))
	})
	out.Indexes = out.Indexes[:min(len(out.Indexes), postgresIndexes)]
	out.TablesSum, out.IndexesSum = cacheRatio("tables", "", tsum), cacheRatio("indexes", "", isum)
	for _, t := range st.Activity {
		h := TableHealth{TableActivity: t, DeadPct: ratio(float64(t.DeadTuples)*100, float64(t.DeadTuples+t.LiveTuples)),
			HotPct: ratio(float64(t.HotUpdates)*100, float64(t.Updates)), VacuumDue: t.DeadTuples > t.VacuumThreshold}
		if t.DeadTuples > 0 {
			out.DeadTuples = append(out.DeadTuples, h)
		}
		if t.Updates > 0 {
			out.HotUpdates = append(out.HotUpdates, h)
		}
		if h.VacuumDue && t.DeadTuples > 0 {
			out.Autovacuum = append(out.Autovacuum, h)
		}
	}
	byDead := func(x, y TableHealth) int {
		return cmp.Or(cmp.Compare(y.DeadTuples, x.DeadTuples), cmp.Compare(x.Table, y.Table))
	}
	slices.SortStableFunc(out.DeadTuples, byDead)
	slices.SortStableFunc(out.Autovacuum, byDead)
	slices.SortStableFunc(out.HotUpdates, func(x, y TableHealth) int {
		return cmp.Or(cmp.Compare(y.Updates, x.Updates), cmp.Compare(x.Table, y.Table))
	})
	if st.BufferUsage != nil {
		out.BufferUsage = make([]BufferShare, len(st.BufferUsage))
		for i, b := range st.BufferUsage {
			out.BufferUsage[i] = BufferShare{BufferUse: b, Pct: ratio(float64(b.Buffers)*100, float64(st.BufferTotal))}
		}
	}
	return out
}
