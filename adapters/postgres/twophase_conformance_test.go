package postgres

import (
	"context"
	"testing"

	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/ports/porttest"
)

// needPrepared skips on a server that takes no prepared transactions
// (max_prepared_transactions 0, PostgreSQL's default: a QUEEN_TEST_PG_URL server; the
// throwaway cluster allows 50).
func needPrepared(t *testing.T, s *Store) {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), `SELECT current_setting('max_prepared_transactions')::int`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Skip("the server's max_prepared_transactions is 0: two-phase commit is off")
	}
}

func TestTwoPhaseStoreConformance(t *testing.T) {
	porttest.TwoPhaseStore(t, func(t *testing.T) porttest.ConsumeFixture {
		f := consumeFixture(t)
		needPrepared(t, f.TwoPhase.(*Store))
		return f
	})
}

func TestDecisionLogConformance(t *testing.T) {
	porttest.DecisionLog(t, func(t *testing.T) ports.DecisionLog { return newStore(t, Options{PoolSize: 4}) })
}
