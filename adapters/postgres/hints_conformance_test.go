package postgres

import (
	"context"
	"testing"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/ports/porttest"
)

// hintStores returns n migrated Stores on one fresh database: n brokers sharing it.
func hintStores(t *testing.T, n int) []*Store {
	t.Helper()
	url := pgtest.NewDatabase(t)
	out := make([]*Store, n)
	for i := range out {
		s, err := Open(context.Background(), url, Options{PoolSize: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		if i == 0 {
			if err := s.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		out[i] = s
	}
	return out
}

func TestHintBusConformance(t *testing.T) {
	porttest.HintBus(t, func(t *testing.T, n int) []ports.HintBus {
		buses := make([]ports.HintBus, n)
		for i, s := range hintStores(t, n) {
			buses[i] = s
		}
		return buses
	})
}
