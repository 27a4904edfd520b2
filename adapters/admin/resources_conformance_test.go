package admin

import (
	"testing"

	"github.com/queen-go/queen/ports/porttest"
)

// TestResourceStoreConformance runs the port's suite on a fresh database per case.
func TestResourceStoreConformance(t *testing.T) {
	porttest.ResourceStore(t, func(t *testing.T) porttest.ResourceFixture {
		f := newFixture(t, Options{})
		return porttest.ResourceFixture{Store: f.admin, AdminWorld: adminWorld(f)}
	})
}
