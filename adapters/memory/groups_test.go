package memory

import (
	"testing"

	"github.com/queen-go/queen/ports/porttest"
)

func TestGroupStoreConformance(t *testing.T) {
	porttest.GroupStore(t, func(*testing.T) porttest.GroupFixture {
		s := NewStore()
		return porttest.GroupFixture{Store: s, AdminWorld: adminWorld(s)}
	})
}
