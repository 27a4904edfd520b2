package postgres

import (
	"testing"

	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/ports/porttest"
)

func TestPlacementStoreConformance(t *testing.T) {
	porttest.PlacementStore(t, func(t *testing.T) ports.PlacementStore { return newStore(t, Options{PoolSize: 8}) })
}
