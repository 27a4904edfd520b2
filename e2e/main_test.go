package e2e

import (
	"os"
	"testing"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
)

// TestMain runs the tests, stops the throwaway PostgreSQL cluster and fails the run when
// a goroutine is left behind (pgtest.Main checks with goleak): every broker, client and
// proxy a test starts must be stopped by it. With QUEEN_E2E_CHILD_BROKER set, the test
// binary is a broker instead (the child process TestSpoolSurvivesSIGKILL kills).
func TestMain(m *testing.M) {
	if os.Getenv(childBrokerEnv) == "1" {
		os.Exit(runChildBroker())
	}
	pgtest.Main(m)
}
