package postgres

import (
	"context"
	"testing"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/ports/porttest"
)

// TestSystemStateConformance runs the port's suite on a migrated store over a fresh
// database per case (queen.system_state starts empty).
func TestSystemStateConformance(t *testing.T) {
	porttest.SystemState(t, func(t *testing.T) ports.SystemState {
		s, err := Open(context.Background(), pgtest.NewDatabase(t), Options{PoolSize: 10})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		if err := s.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s
	})
}
