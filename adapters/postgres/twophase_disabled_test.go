package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/ports"
)

// TestPrepareWithPreparedTransactionsDisabled: on a server with max_prepared_transactions
// 0 (PostgreSQL's default), a part of a transaction across shards is a rollback that
// names the setting and the shard, not a server error.
func TestPrepareWithPreparedTransactionsDisabled(t *testing.T) {
	t.Parallel()
	s, err := Open(context.Background(), pgtest.NewClusterWith(t, 10, nil), Options{PoolSize: 2, Shard: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Prepare(context.Background(), "queen:test:2", nil, nil, "")
	var rb *ports.RollbackError
	if !errors.As(err, &rb) || rb.Reason != "prepared_transactions_disabled" ||
		!strings.Contains(rb.Msg, "max_prepared_transactions") || !strings.Contains(rb.Msg, "shard 2") {
		t.Fatalf("Prepare = %v, want a rollback naming max_prepared_transactions and shard 2", err)
	}
}
