package admin

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/queen-go/queen/ports"
)

// The MetricsReader's reads of the present (docs/api.md §5.11a): the dead letters' error
// texts, the consumer groups' lag, and what PostgreSQL's statistics views say of the
// database. None takes a lock, none writes; pg_buffercache is read only where it is
// installed, never created.

// DeadLetterErrors implements ports.MetricsReader: one statement over the tenant's dead
// letters.
func (a *Admin) DeadLetterErrors(ctx context.Context, tenant string, f ports.ResourceFilter, limit int) ([]ports.DeadLetterError, error) {
	if limit <= 0 {
		return nil, nil
	}
	var rows []struct {
		Error string `bun:"error"`
		Count int64  `bun:"count"`
	}
	err := a.read(ctx, "dead letter errors", func(ctx context.Context, c bun.Conn) error {
		st := newStmt(c)
		q := st.NewSelect().TableExpr("queen.dlq AS d").Join("JOIN queen.queues AS q ON q.id = d.queue_id").
			ColumnExpr("coalesce(d.error_message, '') AS error, count(*) AS count")
		return whereQueues(st, q, tenant, f.Queue, f.Namespace, f.Task).
			GroupExpr("1").OrderExpr("2 DESC, 1").Limit(int64(limit)).Scan(ctx, &rows)
	})
	if err != nil {
		return nil, err
	}
	out := make([]ports.DeadLetterError, len(rows))
	for i, r := range rows {
		out[i] = ports.DeadLetterError{Error: r.Error, Count: r.Count}
	}
	return out, nil
}

// Lag implements ports.MetricsReader: one statement over every (group, queue) pair's
// positions, as the consumer-group listings read them (groupPairs,
// log_group_positions_v1): offset lag by watermark arithmetic, time lag from the commit
// time of the oldest unconsumed segment.
func (a *Admin) Lag(ctx context.Context, tenant string) (ports.LagFigures, error) {
	var r struct {
		Positions    int64   `bun:"positions"`
		OffsetAvg    float64 `bun:"offset_avg"`
		OffsetMedian float64 `bun:"offset_median"`
		OffsetMax    float64 `bun:"offset_max"`
		TimeAvg      float64 `bun:"time_avg"`
		TimeMedian   float64 `bun:"time_median"`
		TimeMax      float64 `bun:"time_max"`
	}
	err := a.groupRead(ctx, "lag", func(ctx context.Context, tx bun.Tx) error {
		st := newStmt(tx)
		return st.NewRaw(`
WITH pairs AS (?0),
pos AS (
    -- oldest_unconsumed_at is named once: the inlined function copies its probe into
    -- every use. greatest() reads its NULL (nothing waits) as 0.
    SELECT x.lag::float8 AS lag,
           greatest(extract(epoch FROM now() - x.oldest_unconsumed_at), 0)::float8 AS secs
      FROM pairs p
     CROSS JOIN LATERAL queen.log_group_positions_v1(ARRAY[p.grp], ARRAY[p.queue_id]) x)
SELECT count(*) AS positions,
       coalesce(avg(lag), 0) AS offset_avg,
       coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY lag), 0) AS offset_median,
       coalesce(max(lag), 0) AS offset_max,
       coalesce(avg(secs), 0) AS time_avg,
       coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY secs), 0) AS time_median,
       coalesce(max(secs), 0) AS time_max
  FROM pos`, groupPairs(st, tenant, "")).Scan(ctx, &r)
	})
	if err != nil {
		return ports.LagFigures{}, err
	}
	return ports.LagFigures{Positions: r.Positions, OffsetAvg: r.OffsetAvg, OffsetMedian: r.OffsetMedian,
		OffsetMax: r.OffsetMax, TimeAvg: r.TimeAvg, TimeMedian: r.TimeMedian, TimeMax: r.TimeMax}, nil
}

// anaSettings are the server settings PostgresStats reports (shared buffers and the
// other memory settings, and what the autovacuum threshold is computed from).
var anaSettings = []string{"shared_buffers", "effective_cache_size", "work_mem", "maintenance_work_mem",
	"wal_buffers", "max_connections", "autovacuum", "autovacuum_vacuum_threshold",
	"autovacuum_vacuum_scale_factor", "track_io_timing"}

// anaQueryText bounds the text of an active query, in characters.
const anaQueryText = 500

// anaActiveQueries bounds the active queries listed (the longest running first).
const anaActiveQueries = 20

// PostgresStats implements ports.MetricsReader: eight reads of the statistics views in
// one read-only transaction (the views are one snapshot per transaction), and one of
// pg_buffercache where it is installed.
func (a *Admin) PostgresStats(ctx context.Context, minQuery time.Duration) (ports.PostgresStats, error) {
	var out ports.PostgresStats
	err := a.run(ctx, "postgres stats", func(ctx context.Context, c bun.Conn) error {
		err := snapshot(ctx, c, func(tx bun.Tx) error {
			for _, read := range []func(context.Context, bun.Tx, *ports.PostgresStats) error{
				anaDatabase, anaCaches, anaSettingsRead, anaSizes, anaActivity,
			} {
				if err := read(ctx, tx, &out); err != nil {
					return err
				}
			}
			return anaActive(ctx, tx, minQuery, &out)
		})
		if err != nil {
			return err
		}
		return anaBuffers(ctx, c, &out)
	})
	return out, err
}

func anaDatabase(ctx context.Context, tx bun.Tx, out *ports.PostgresStats) error {
	var r struct {
		Name      string `bun:"name"`
		Hits      int64  `bun:"hits"`
		Reads     int64  `bun:"reads"`
		Commits   int64  `bun:"commits"`
		Rollbacks int64  `bun:"rollbacks"`
		Deadlocks int64  `bun:"deadlocks"`
		Conflicts int64  `bun:"conflicts"`
		TempFiles int64  `bun:"temp_files"`
		TempBytes int64  `bun:"temp_bytes"`
		Size      int64  `bun:"size"`
		Backends  int64  `bun:"backends"`
	}
	if err := tx.NewRaw(`
SELECT d.datname AS name, coalesce(d.blks_hit, 0) AS hits, coalesce(d.blks_read, 0) AS reads,
       coalesce(d.xact_commit, 0) AS commits, coalesce(d.xact_rollback, 0) AS rollbacks,
       coalesce(d.deadlocks, 0) AS deadlocks, coalesce(d.conflicts, 0) AS conflicts,
       coalesce(d.temp_files, 0) AS temp_files, coalesce(d.temp_bytes, 0) AS temp_bytes,
       pg_database_size(d.datid) AS size, coalesce(d.numbackends, 0) AS backends
  FROM pg_stat_database d
 WHERE d.datname = current_database()`).Scan(ctx, &r); err != nil {
		return err
	}
	out.Database = ports.DatabaseFigures{Name: r.Name, CacheFigures: ports.CacheFigures{Hits: r.Hits, Reads: r.Reads},
		Commits: r.Commits, Rollbacks: r.Rollbacks, Deadlocks: r.Deadlocks, Conflicts: r.Conflicts,
		TempFiles: r.TempFiles, TempBytes: r.TempBytes, SizeBytes: r.Size, Backends: r.Backends}
	return nil
}

type anaCacheRow struct {
	Index string `bun:"index"`
	Table string `bun:"table"`
	Hits  int64  `bun:"hits"`
	Reads int64  `bun:"reads"`
}

// anaCaches reads the cache figures of the tables and indexes of schema queen.
func anaCaches(ctx context.Context, tx bun.Tx, out *ports.PostgresStats) error {
	var tables, indexes []anaCacheRow
	if err := tx.NewRaw(`
SELECT '' AS index, schemaname || '.' || relname AS table,
       coalesce(heap_blks_hit, 0) AS hits, coalesce(heap_blks_read, 0) AS reads
  FROM pg_statio_user_tables WHERE schemaname = 'queen' ORDER BY relname`).Scan(ctx, &tables); err != nil {
		return err
	}
	if err := tx.NewRaw(`
SELECT schemaname || '.' || indexrelname AS index, schemaname || '.' || relname AS table,
       coalesce(idx_blks_hit, 0) AS hits, coalesce(idx_blks_read, 0) AS reads
  FROM pg_statio_user_indexes WHERE schemaname = 'queen' ORDER BY indexrelname`).Scan(ctx, &indexes); err != nil {
		return err
	}
	for _, t := range tables {
		out.Tables = append(out.Tables, ports.TableCache{Table: t.Table, CacheFigures: ports.CacheFigures{Hits: t.Hits, Reads: t.Reads}})
	}
	for _, i := range indexes {
		out.Indexes = append(out.Indexes, ports.IndexCache{Index: i.Index, Table: i.Table,
			CacheFigures: ports.CacheFigures{Hits: i.Hits, Reads: i.Reads}})
	}
	return nil
}

func anaSettingsRead(ctx context.Context, tx bun.Tx, out *ports.PostgresStats) error {
	var rows []struct {
		Name  string `bun:"name"`
		Value string `bun:"value"`
		Bytes int64  `bun:"bytes"`
	}
	st := newStmt(tx)
	if err := st.NewRaw(`
SELECT name, current_setting(name) AS value,
       CASE WHEN vartype = 'integer' AND unit IN ('B', 'kB', '8kB', 'MB')
            THEN greatest(setting::bigint, 0) * CASE unit WHEN 'kB' THEN 1024 WHEN '8kB' THEN 8192
                                                          WHEN 'MB' THEN 1048576 ELSE 1 END
            ELSE 0 END AS bytes
  FROM pg_settings WHERE name = ANY (?::text[]) ORDER BY name`, st.arg(anaSettings)).Scan(ctx, &rows); err != nil {
		return err
	}
	for _, r := range rows {
		out.Settings = append(out.Settings, ports.Setting{Name: r.Name, Value: r.Value, Bytes: r.Bytes})
	}
	return nil
}

func anaSizes(ctx context.Context, tx bun.Tx, out *ports.PostgresStats) error {
	var rows []struct {
		Table string `bun:"table"`
		Heap  int64  `bun:"heap"`
		Index int64  `bun:"index"`
		Total int64  `bun:"total"`
	}
	// The size functions take no lock (a relation dropped meanwhile reads NULL).
	if err := tx.NewRaw(`
SELECT n.nspname || '.' || c.relname AS table, coalesce(pg_table_size(c.oid), 0) AS heap,
       coalesce(pg_indexes_size(c.oid), 0) AS index, coalesce(pg_total_relation_size(c.oid), 0) AS total
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'queen' AND c.relkind IN ('r', 'p')
 ORDER BY total DESC, c.relname`).Scan(ctx, &rows); err != nil {
		return err
	}
	for _, r := range rows {
		out.Sizes = append(out.Sizes, ports.TableSize{Table: r.Table, TableBytes: r.Heap, IndexBytes: r.Index, TotalBytes: r.Total})
	}
	return nil
}

type anaActivityRow struct {
	Table            string     `bun:"table"`
	Live             int64      `bun:"live"`
	Dead             int64      `bun:"dead"`
	Updates          int64      `bun:"updates"`
	HotUpdates       int64      `bun:"hot_updates"`
	Threshold        int64      `bun:"threshold"`
	VacuumCount      int64      `bun:"vacuum_count"`
	AutovacuumCount  int64      `bun:"autovacuum_count"`
	AnalyzeCount     int64      `bun:"analyze_count"`
	AutoanalyzeCount int64      `bun:"autoanalyze_count"`
	LastVacuum       *time.Time `bun:"last_vacuum"`
	LastAutovacuum   *time.Time `bun:"last_autovacuum"`
	LastAnalyze      *time.Time `bun:"last_analyze"`
	LastAutoanalyze  *time.Time `bun:"last_autoanalyze"`
}

// anaActivity reads the row activity and maintenance of the tables of schema queen. The
// vacuum threshold is autovacuum's: threshold + scale factor x the planner's row count.
func anaActivity(ctx context.Context, tx bun.Tx, out *ports.PostgresStats) error {
	var rows []anaActivityRow
	if err := tx.NewRaw(`
SELECT s.schemaname || '.' || s.relname AS table, coalesce(s.n_live_tup, 0) AS live, coalesce(s.n_dead_tup, 0) AS dead,
       coalesce(s.n_tup_upd, 0) AS updates, coalesce(s.n_tup_hot_upd, 0) AS hot_updates,
       (current_setting('autovacuum_vacuum_threshold')::float8
        + current_setting('autovacuum_vacuum_scale_factor')::float8 * greatest(c.reltuples, 0))::bigint AS threshold,
       s.vacuum_count, s.autovacuum_count, s.analyze_count, s.autoanalyze_count,
       s.last_vacuum, s.last_autovacuum, s.last_analyze, s.last_autoanalyze
  FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
 WHERE s.schemaname = 'queen'
 ORDER BY s.relname`).Scan(ctx, &rows); err != nil {
		return err
	}
	for _, r := range rows {
		out.Activity = append(out.Activity, ports.TableActivity{Table: r.Table, LiveTuples: r.Live, DeadTuples: r.Dead,
			Updates: r.Updates, HotUpdates: r.HotUpdates, VacuumThreshold: r.Threshold,
			VacuumCount: r.VacuumCount, AutovacuumCount: r.AutovacuumCount, AnalyzeCount: r.AnalyzeCount,
			AutoanalyzeCount: r.AutoanalyzeCount, LastVacuum: utcPtr(r.LastVacuum), LastAutovacuum: utcPtr(r.LastAutovacuum),
			LastAnalyze: utcPtr(r.LastAnalyze), LastAutoanalyze: utcPtr(r.LastAutoanalyze)})
	}
	return nil
}

// anaActive reads the statements running on the database for at least minQuery, the
// longest first, other than the reader's own; an idle-in-transaction session counts
// from its last change of state.
func anaActive(ctx context.Context, tx bun.Tx, minQuery time.Duration, out *ports.PostgresStats) error {
	var rows []struct {
		PID           int64   `bun:"pid"`
		State         string  `bun:"state"`
		Query         string  `bun:"query"`
		Seconds       float64 `bun:"seconds"`
		WaitEventType *string `bun:"wait_event_type"`
		WaitEvent     *string `bun:"wait_event"`
		App           string  `bun:"app"`
	}
	st := newStmt(tx)
	if err := st.NewRaw(`
SELECT pid, state, left(coalesce(query, ''), ?) AS query, seconds, wait_event_type, wait_event,
       coalesce(application_name, '') AS app
  FROM (SELECT a.*, coalesce(extract(epoch FROM clock_timestamp() - CASE WHEN a.state = 'active' THEN a.query_start
                                                                          ELSE a.state_change END), 0)::float8 AS seconds
          FROM pg_stat_activity a
         WHERE a.pid <> pg_backend_pid() AND a.datname = current_database()
           AND a.backend_type = 'client backend' AND a.state IS NOT NULL AND a.state <> 'idle') x
 WHERE seconds >= ?
 ORDER BY seconds DESC, pid
 LIMIT ?`, st.arg(anaQueryText), st.arg(minQuery.Seconds()), st.arg(anaActiveQueries)).Scan(ctx, &rows); err != nil {
		return err
	}
	for _, r := range rows {
		out.ActiveQueries = append(out.ActiveQueries, ports.ActiveQuery{PID: r.PID, State: r.State, Query: r.Query,
			Duration: time.Duration(r.Seconds * float64(time.Second)), WaitEventType: r.WaitEventType,
			WaitEvent: r.WaitEvent, ApplicationName: r.App})
	}
	return nil
}

// anaBufferObjects bounds the relations BufferUsage lists (those holding most buffers).
const anaBufferObjects = 20

// anaBuffers reads what shared buffers hold per relation of this database, when the
// pg_buffercache extension is installed (in whatever schema). Reading it needs the
// pg_monitor role: without it, BufferUsage stays nil, as without the extension.
func anaBuffers(ctx context.Context, c bun.Conn, out *ports.PostgresStats) error {
	var schema []string
	if err := c.NewRaw(`SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
 WHERE e.extname = 'pg_buffercache'`).Scan(ctx, &schema); err != nil {
		return err
	}
	if len(schema) == 0 {
		return nil
	}
	var rows []struct {
		Object  string `bun:"object"`
		Buffers int64  `bun:"buffers"`
		Bytes   int64  `bun:"bytes"`
		Total   int64  `bun:"total"`
	}
	st := newStmt(c)
	err := st.NewRaw(`
WITH b AS (SELECT * FROM ?0.pg_buffercache)
SELECT n.nspname || '.' || c.relname AS object, count(*) AS buffers,
       count(*) * current_setting('block_size')::bigint AS bytes, (SELECT count(*) FROM b) AS total
  FROM b
  JOIN pg_class c ON b.relfilenode = pg_relation_filenode(c.oid)
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE b.reldatabase IN (0, (SELECT oid FROM pg_database WHERE datname = current_database()))
 GROUP BY 1
 ORDER BY buffers DESC, 1
 LIMIT ?1`, bun.Ident(schema[0]), st.arg(anaBufferObjects)).Scan(ctx, &rows)
	if sqlState(err) == "42501" { // insufficient_privilege
		return nil
	}
	if err != nil {
		return err
	}
	out.BufferUsage = make([]ports.BufferUse, 0, len(rows))
	for _, r := range rows {
		out.BufferTotal = r.Total
		out.BufferUsage = append(out.BufferUsage, ports.BufferUse{Object: r.Object, Buffers: r.Buffers, Bytes: r.Bytes})
	}
	if len(rows) == 0 {
		err = c.NewRaw(`SELECT count(*) FROM ?.pg_buffercache`, bun.Ident(schema[0])).Scan(ctx, &out.BufferTotal)
	}
	return err
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
