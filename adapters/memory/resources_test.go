package memory

import (
	"testing"

	"github.com/queen-go/queen/ports/porttest"
)

func TestResourceStoreConformance(t *testing.T) {
	porttest.ResourceStore(t, func(*testing.T) porttest.ResourceFixture {
		s := NewStore()
		return porttest.ResourceFixture{Store: s, AdminWorld: adminWorld(s)}
	})
}
