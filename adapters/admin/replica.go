package admin

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/queen-go/queen/core/replication"
	"github.com/queen-go/queen/ports"
)

// Reads from a replica (QUEEN_PG_READ_URL, docs/reliability.md "Reads from replicas").
//
// These reads go through read, so they run on Options.Replica while Options.UseReplica
// says so: the resources and status listings (ListQueues, QueueDetail, QueueDepth,
// CountsBy, Overview, Status, StorageTotals), the consumer-group listings
// (GroupSummaries, GroupPositions, LaggingPositions), the message browse and one
// message's detail (BrowseSegments, BrowseModes, SegmentBlobs, FindMessage), the
// dead-letter listing (DeadLetters), the traces (MessageTraces, TracesByName,
// TraceNames) and the analytics over the metrics history (QueueSeries, QueueTotals,
// BrokerSeries, ParkedSeries, Retention, DeadLetterErrors, Lag). None of them follows a
// write of the same request.
//
// Everything else runs on the primary: every write (Configure, DeleteQueue, AddTrace,
// the group changes, the dead-letter moves and deletions), the reads a write depends on
// (NewestDeadLetter picks the row a replay moves; SegmentAt checks what a replay's push
// just found), and PostgresStats, whose statistics views describe the server they are
// read on: the dashboard shows the primary's.

// read runs fn as run does, on the replica while the reads go there. A replica that
// cannot take the read (unreachable, or a statement cancelled by a conflict with
// recovery) hands it to the primary, at once: the router notices such a replica only at
// its next measurement.
func (a *Admin) read(ctx context.Context, op string, fn func(context.Context, bun.Conn) error) error {
	if a.replica == nil || a.opts.UseReplica == nil || !a.opts.UseReplica() {
		return a.run(ctx, op, fn)
	}
	err := a.runOn(ctx, a.replica, op+" (replica)", fn)
	if err == nil || ctx.Err() != nil || !replicaFailed(err) {
		return err
	}
	a.opts.Logger.Debug("admin: the replica could not answer a read, the primary does", "op", op, "err", err)
	return a.run(ctx, op, fn)
}

// replicaFailed reports an error of the replica itself rather than of the read:
// unreachable, no connection within the statement timeout (a standby that hangs), or
// the statement cancelled because recovery needed what it read (SQLSTATE 40001,
// "conflict with recovery"; 57P04: the standby is being promoted or shut down).
func replicaFailed(err error) bool {
	switch sqlState(err) {
	case "40001", "57P01", "57P02", "57P03", "57P04":
		return true
	}
	var acquire *acquireError
	return errors.Is(err, ports.ErrUnavailable) || errors.As(err, &acquire)
}

var _ replication.ReplicaReader = (*Admin)(nil)

// ReplicaReading implements replication.ReplicaReader: the primary's current WAL
// position first, then the replica's replay position and the age of the last
// transaction it replayed (on the replica's own clock). Without a replica it fails.
func (a *Admin) ReplicaReading(ctx context.Context) (replication.Reading, error) {
	var rd replication.Reading
	if a.replica == nil {
		return rd, errors.New("admin: no replica configured")
	}
	var primary int64
	err := a.run(ctx, "replica reading: primary position", func(ctx context.Context, c bun.Conn) error {
		return c.QueryRowContext(ctx, `SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::int8`).Scan(&primary)
	})
	if err != nil {
		return rd, err
	}
	var (
		replay int64
		age    sql.NullFloat64
	)
	err = a.runOn(ctx, a.replica, "replica reading: replay position", func(ctx context.Context, c bun.Conn) error {
		return c.QueryRowContext(ctx, `SELECT pg_is_in_recovery(),
			coalesce((pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::int8, 0),
			extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8`).
			Scan(&rd.InRecovery, &replay, &age)
	})
	if err != nil {
		return rd, err
	}
	rd.PrimaryLSN, rd.ReplayLSN = uint64(max(primary, 0)), uint64(max(replay, 0))
	if age.Valid {
		rd.ReplayAge, rd.HasReplayTime = time.Duration(age.Float64*float64(time.Second)), true
	}
	return rd, nil
}
