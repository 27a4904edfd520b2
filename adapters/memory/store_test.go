package memory

import (
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/ports/porttest"
)

func TestSegmentStoreConformance(t *testing.T) {
	porttest.SegmentStore(t, func(t *testing.T) porttest.Fixture {
		s := NewStore()
		return porttest.Fixture{
			Store:     s,
			SetWindow: func(_ *testing.T, tenant, queue string, w time.Duration) { s.SetWindow(tenant, queue, w) },
			Age:       func(_ *testing.T, pid string, d time.Duration) { s.Age(pid, d) },
			DeleteSegment: func(_ *testing.T, pid string, off int64) {
				s.DeleteSegment(pid, off)
			},
		}
	})
}

func TestPlacementStoreConformance(t *testing.T) {
	porttest.PlacementStore(t, func(*testing.T) ports.PlacementStore { return &Placements{} })
}
