package pgtest

import (
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// InsertHistory writes one minute of metrics history (schema/016_metrics.sql) into the
// database at dbURL directly, dated at's minute (UTC), as a broker's flush of that
// minute would have left it: a row of queue (the default tenant) and one of broker with
// messages pushed in one request and acknowledged in another, the flush applied, and a
// retention run that removed messages of queue. The rows are inserted, not added to: no
// broker may have written that minute of queue or broker. It is for the black-box tests
// of what no broker can be made to write through the API: minutes days old, which the
// history's purge (METRICS_RETENTION_DAYS) removes, and whole minutes before the
// current one.
func InsertHistory(t testing.TB, dbURL string, at time.Time, queue, broker string, messages int64) {
	t.Helper()
	ctx, conn, done := openConn(t, dbURL)
	defer done()
	minute := at.UTC().Truncate(time.Minute) // a minute no broker wrote: plain inserts
	_, err := conn.Exec(ctx, `
		WITH q AS (
		  INSERT INTO queen.metrics_queue_minutes (minute, tenant_id, queue_name, push_requests, push_messages,
		                                           ack_requests, ack_success)
		  VALUES ($1, $2, $3, 1, $5, 1, $5)),
		r AS ( -- the minute's 5- and 60-minute rollups, which may hold other minutes already
		  INSERT INTO queen.metrics_queue_rollups AS x (width, bucket, tenant_id, queue_name, push_requests,
		                                                push_messages, ack_requests, ack_success)
		  SELECT w, date_bin(make_interval(mins => w), $1, timestamptz '1970-01-01 00:00:00+00'), $2, $3, 1, $5, 1, $5
		    FROM unnest(ARRAY[5, 60]::int2[]) AS w
		  ON CONFLICT (width, bucket, tenant_id, queue_name) DO UPDATE SET
		    push_requests = x.push_requests + 1, push_messages = x.push_messages + EXCLUDED.push_messages,
		    ack_requests = x.ack_requests + 1, ack_success = x.ack_success + EXCLUDED.ack_success),
		b AS (
		  INSERT INTO queen.metrics_broker_minutes (minute, broker, hostname, push_requests, push_messages,
		                                            ack_requests, ack_success, requests)
		  VALUES ($1, $4, 'pgtest', 1, $5, 1, $5, 2)),
		f AS (
		  INSERT INTO queen.metrics_flushes (instance, seq, applied_at) VALUES (gen_random_uuid(), 1, $1))
		INSERT INTO queen.retention_runs (ran_at, job, tenant_id, queue_name, rows_removed, bytes_removed)
		VALUES ($1, $6, $2, $3, $5, $5 * 100)`,
		minute, ports.DefaultTenant, queue, broker, messages, ports.JobRetention)
	if err != nil {
		t.Fatalf("pgtest: insert the history of %s at %s: %v", queue, minute, err)
	}
}
