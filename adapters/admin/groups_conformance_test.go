package admin

import (
	"testing"

	"github.com/queen-go/queen/ports/porttest"
)

// TestGroupStoreConformance runs the port's suite on a fresh database per case.
func TestGroupStoreConformance(t *testing.T) {
	porttest.GroupStore(t, func(t *testing.T) porttest.GroupFixture {
		f := newFixture(t, Options{})
		return porttest.GroupFixture{Store: f.admin, AdminWorld: adminWorld(f)}
	})
}
