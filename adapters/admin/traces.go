package admin

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"

	"github.com/queen-go/queen/ports"
)

var _ ports.TraceStore = (*Admin)(nil)

// traceRow is a row of queen.message_traces (schema/011_traces.sql).
type traceRow struct {
	bun.BaseModel `bun:"table:queen.message_traces,alias:t"`

	ID            string    `bun:"id,pk,nullzero,type:uuid"`
	TenantID      string    `bun:"tenant_id,type:uuid"`
	PartitionID   string    `bun:"partition_id,type:uuid"`
	TransactionID string    `bun:"transaction_id"`
	ConsumerGroup string    `bun:"consumer_group"`
	EventType     string    `bun:"event_type"`
	Names         []string  `bun:"trace_names,array"`
	Data          string    `bun:"data"`                // the JSON text as sent: a text literal the json column parses, not re-encoded
	CreatedAt     time.Time `bun:"created_at,nullzero"` // NULL on insert: the column default
	ExpiresAt     time.Time `bun:"expires_at"`
}

// traceTable is traceRow's table, as bun describes it.
func traceTable(db bun.IDB) *schema.Table {
	return db.Dialect().Tables().Get(reflect.TypeFor[traceRow]())
}

// traceView is a trace as read back, with its partition's names ("" once it is gone).
type traceView struct {
	ID            string    `bun:"id"`
	PartitionID   string    `bun:"partition_id"`
	TransactionID string    `bun:"transaction_id"`
	ConsumerGroup string    `bun:"consumer_group"`
	EventType     string    `bun:"event_type"`
	Names         []string  `bun:"trace_names,array"`
	Data          string    `bun:"data"`
	CreatedAt     time.Time `bun:"created_at"`
	Queue         *string   `bun:"queue"`
	Partition     *string   `bun:"partition"`
}

func (v *traceView) port() ports.Trace {
	t := ports.Trace{ID: v.ID, CreatedAt: v.CreatedAt, NewTrace: ports.NewTrace{PartitionID: v.PartitionID,
		TransactionID: v.TransactionID, ConsumerGroup: v.ConsumerGroup, EventType: v.EventType,
		Names: v.Names, Data: []byte(v.Data)}}
	if t.Names == nil {
		t.Names = []string{}
	}
	if v.Queue != nil {
		t.Queue = *v.Queue
	}
	if v.Partition != nil {
		t.Partition = *v.Partition
	}
	return t
}

// selectTraces is a query of st selecting live traces (alias t) with their partition's
// names, as traceView. Expired traces the insert batches have not deleted yet are left
// out.
func selectTraces(st *stmt) *bun.SelectQuery {
	return st.NewSelect().
		TableExpr("queen.message_traces AS t").
		Join("LEFT JOIN queen.log_partitions AS lp ON lp.id = t.partition_id").
		Join("LEFT JOIN queen.queues AS q ON q.id = lp.queue_id").
		ColumnExpr(traceColumns).
		Where("t.expires_at > now()")
}

// traceColumns are traceView's columns, from a trace (alias t), its partition (lp) and
// its queue (q).
const traceColumns = "t.id::text AS id, t.partition_id::text AS partition_id, t.transaction_id, t.consumer_group, " +
	"t.event_type, t.trace_names, t.data::text AS data, t.created_at, q.name AS queue, lp.name AS partition"

// AddTrace implements ports.TraceStore in one transaction: the partition's queue (its
// options decide the lifetime), the trace and its name rows, then the expiry batch. The
// batch takes the oldest expired rows through message_traces_expiry and skips rows
// another insert's batch holds (SKIP LOCKED): concurrent inserts never wait for each
// other. It locks only the trace rows it deletes (and their name rows, by cascade).
func (a *Admin) AddTrace(ctx context.Context, tenant string, t ports.NewTrace, lifetime func(ports.QueueOptions) time.Duration, expire int) (ports.Trace, bool, error) {
	var (
		out   ports.Trace
		found bool
	)
	err := a.run(ctx, "add trace", func(ctx context.Context, c bun.Conn) error {
		return inTx(ctx, c, func(tx bun.Tx) error {
			found = false
			var target struct {
				QueueName     string `bun:"queue_name"`
				PartitionName string `bun:"partition_name"`
				ports.QueueOptions
			}
			st := newStmt(tx)
			err := st.NewSelect().
				TableExpr("queen.log_partitions AS lp").
				Join("JOIN queen.queues AS q ON q.id = lp.queue_id").
				ColumnExpr("q.name AS queue_name, lp.name AS partition_name").
				ColumnExpr(msgQueueOptionColumns).
				Where("lp.id = ?::uuid AND q.tenant_id = ?::uuid", st.arg(t.PartitionID), st.arg(tenant)).
				Scan(ctx, &target)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			row := traceRow{TenantID: tenant, PartitionID: t.PartitionID, TransactionID: t.TransactionID,
				ConsumerGroup: t.ConsumerGroup, EventType: t.EventType, Names: t.Names, Data: string(t.Data)}
			if row.Names == nil {
				row.Names = []string{}
			}
			secs := lifetime(target.QueueOptions).Seconds()
			st = newStmt(tx)
			if _, err := st.bindModel(st.NewInsert().Model(&row), traceTable(tx), reflect.ValueOf(row), "expires_at").
				Value("expires_at", "now() + make_interval(secs => ?)", st.arg(secs)).
				Returning("id, created_at").
				Exec(ctx); err != nil {
				return err
			}
			if len(t.Names) > 0 {
				// One row per name, from one array: a multi-row insert of the model would
				// write each row's values into the text.
				st = newStmt(tx)
				if _, err := st.NewRaw(`
INSERT INTO queen.message_trace_names (tenant_id, trace_name, created_at, trace_id)
SELECT ?::uuid, n.name, ?, ?::uuid FROM unnest(?::text[]) AS n(name)`,
					st.arg(tenant), st.arg(row.CreatedAt), st.arg(row.ID), st.arg(t.Names)).Exec(ctx); err != nil {
					return err
				}
			}
			if expire > 0 {
				st = newStmt(tx)
				expired := st.NewSelect().
					TableExpr("queen.message_traces").
					Column("id").
					Where("expires_at < now()").
					OrderExpr("expires_at").
					Limit(int64(expire)).
					For("UPDATE SKIP LOCKED")
				if _, err := st.NewDelete().TableExpr("queen.message_traces").
					Where("id IN (?)", expired).Exec(ctx); err != nil {
					return err
				}
			}
			out = ports.Trace{ID: row.ID, NewTrace: t, Queue: target.QueueName, Partition: target.PartitionName,
				CreatedAt: row.CreatedAt}
			found = true
			return nil
		})
	})
	return out, found && err == nil, err
}

// MessageTraces implements ports.TraceStore through message_traces_message.
func (a *Admin) MessageTraces(ctx context.Context, tenant, partitionID, transactionID string, limit int) ([]ports.Trace, error) {
	return a.readTraces(ctx, "message traces", func(st *stmt) *bun.SelectQuery {
		return selectTraces(st).
			Where("t.tenant_id = ?::uuid AND t.partition_id = ?::uuid AND t.transaction_id = ?",
				st.arg(tenant), st.arg(partitionID), st.arg(transactionID)).
			OrderExpr("t.created_at, t.id").
			Limit(int64(limit))
	})
}

// TracesByName implements ports.TraceStore in one statement: the name rows' primary key
// read backwards (newest first) for the page, joined to their traces, and counted in
// full for the total (the page's CTE is the same selection, so both agree).
func (a *Admin) TracesByName(ctx context.Context, tenant, name string, limit, offset int) ([]ports.Trace, int64, error) {
	var rows []struct {
		Total int64 `bun:"total"`
		traceView
	}
	err := a.read(ctx, "traces by name", func(ctx context.Context, c bun.Conn) error {
		st := newStmt(c)
		sel := st.NewSelect().
			TableExpr("queen.message_trace_names AS n").
			Join("JOIN queen.message_traces AS t ON t.id = n.trace_id").
			ColumnExpr("n.trace_id, n.created_at").
			Where("n.tenant_id = ?::uuid AND n.trace_name = ? AND t.expires_at > now()", st.arg(tenant), st.arg(name))
		page := st.NewSelect().
			TableExpr("sel").
			ColumnExpr("trace_id, created_at").
			OrderExpr("created_at DESC, trace_id DESC").
			Limit(int64(limit)).
			Offset(int64(offset))
		// The count's one row carries the page (NULL columns when the page is empty).
		return st.NewSelect().
			With("sel", sel).
			With("page", page).
			TableExpr("(SELECT count(*) AS total FROM sel) AS m").
			Join("LEFT JOIN page AS pg ON true").
			Join("LEFT JOIN queen.message_traces AS t ON t.id = pg.trace_id").
			Join("LEFT JOIN queen.log_partitions AS lp ON lp.id = t.partition_id").
			Join("LEFT JOIN queen.queues AS q ON q.id = lp.queue_id").
			ColumnExpr("m.total").
			ColumnExpr(traceColumns).
			OrderExpr("pg.created_at DESC, pg.trace_id DESC").
			Scan(ctx, &rows)
	})
	if err != nil {
		return nil, 0, err
	}
	var total int64
	out := make([]ports.Trace, 0, len(rows))
	for i := range rows {
		total = rows[i].Total
		if rows[i].ID == "" {
			continue // the empty page's one row
		}
		out = append(out, rows[i].port())
	}
	return out, total, nil
}

func (a *Admin) readTraces(ctx context.Context, op string, query func(*stmt) *bun.SelectQuery) ([]ports.Trace, error) {
	var rows []traceView
	if err := a.read(ctx, op, func(ctx context.Context, c bun.Conn) error {
		return query(newStmt(c)).Scan(ctx, &rows)
	}); err != nil {
		return nil, err
	}
	out := make([]ports.Trace, len(rows))
	for i := range rows {
		out[i] = rows[i].port()
	}
	return out, nil
}

// TraceNames implements ports.TraceStore in one statement: one pass over the tenant's
// name rows (their primary key), grouped, counted in full for the total and paged.
func (a *Admin) TraceNames(ctx context.Context, tenant string, limit, offset int) ([]ports.TraceName, int64, error) {
	var rows []struct {
		Total    int64     `bun:"total"`
		Name     *string   `bun:"trace_name"` // NULL: the empty page's one row
		Traces   int64     `bun:"traces"`
		Messages int64     `bun:"messages"`
		LastSeen time.Time `bun:"last_seen"`
	}
	err := a.read(ctx, "trace names", func(ctx context.Context, c bun.Conn) error {
		st := newStmt(c)
		grouped := st.NewSelect().
			TableExpr("queen.message_trace_names AS n").
			Join("JOIN queen.message_traces AS t ON t.id = n.trace_id").
			ColumnExpr("n.trace_name, count(*) AS traces").
			ColumnExpr("count(DISTINCT (t.partition_id, t.transaction_id)) AS messages").
			ColumnExpr("max(n.created_at) AS last_seen").
			Where("n.tenant_id = ?::uuid AND t.expires_at > now()", st.arg(tenant)).
			GroupExpr("n.trace_name")
		page := st.NewSelect().
			TableExpr("g").
			ColumnExpr("*").
			OrderExpr(`last_seen DESC, trace_name COLLATE "C"`).
			Limit(int64(limit)).
			Offset(int64(offset))
		return st.NewSelect().
			With("g", grouped).
			With("page", page).
			TableExpr("(SELECT count(*) AS total FROM g) AS m").
			Join("LEFT JOIN page AS pg ON true").
			ColumnExpr("m.total, pg.trace_name, pg.traces, pg.messages, pg.last_seen").
			OrderExpr(`pg.last_seen DESC, pg.trace_name COLLATE "C"`).
			Scan(ctx, &rows)
	})
	if err != nil {
		return nil, 0, err
	}
	var total int64
	out := make([]ports.TraceName, 0, len(rows))
	for _, r := range rows {
		total = r.Total
		if r.Name == nil {
			continue
		}
		out = append(out, ports.TraceName{Name: *r.Name, Traces: r.Traces, Messages: r.Messages, LastSeen: r.LastSeen})
	}
	return out, total, nil
}
