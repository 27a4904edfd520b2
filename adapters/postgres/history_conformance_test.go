package postgres

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/ports/porttest"
)

// TestMetricsWriterConformance runs the port's suite on a migrated store over a fresh
// database per case, reading the rows back from the metrics tables.
func TestMetricsWriterConformance(t *testing.T) {
	porttest.MetricsWriter(t, func(t *testing.T) porttest.MetricsFixture {
		s := newStore(t, Options{PoolSize: 10})
		return porttest.MetricsFixture{
			Writer:  s,
			Queues:  s.queueMinutes,
			Brokers: s.brokerMinutes,
			Rollups: s.queueRollups,
		}
	})
}

func colNames[T any](cols []metricCol[T]) string {
	var names []string
	for _, c := range cols {
		names = append(names, c.name)
	}
	return strings.Join(names, ", ")
}

func (s *Store) queueMinutes(t *testing.T) []ports.QueueMinute {
	t.Helper()
	return s.queueRows(t, `SELECT minute, tenant_id::text, queue_name, `+colNames(queueCols)+` FROM queen.metrics_queue_minutes`)
}

// queueRollups reads the rollups of width minutes, each bucket as a row's Minute.
func (s *Store) queueRollups(t *testing.T, width int) []ports.QueueMinute {
	t.Helper()
	return s.queueRows(t, `SELECT bucket, tenant_id::text, queue_name, `+colNames(queueCols)+
		` FROM queen.metrics_queue_rollups WHERE width = $1`, width)
}

func (s *Store) queueRows(t *testing.T, sql string, args ...any) []ports.QueueMinute {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []ports.QueueMinute
	for rows.Next() {
		var q ports.QueueMinute
		dest := []any{&q.Minute, &q.Tenant, &q.Queue}
		for _, c := range queueCols {
			dest = append(dest, c.at(&q))
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatal(err)
		}
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func (s *Store) brokerMinutes(t *testing.T) []ports.BrokerMinute {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT minute, broker, hostname, port, parked::text, `+colNames(brokerCols)+
		` FROM queen.metrics_broker_minutes`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []ports.BrokerMinute
	for rows.Next() {
		var b ports.BrokerMinute
		var port int32
		var parked string
		dest := []any{&b.Minute, &b.Broker, &b.Hostname, &port, &parked}
		for _, c := range brokerCols {
			dest = append(dest, c.at(&b))
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatal(err)
		}
		b.Port = int(port)
		if err := json.Unmarshal([]byte(parked), &b.Parked); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
