package admin

import (
	"testing"

	"github.com/queen-go/queen/ports/porttest"
)

// TestMessageStoreConformance runs the port's suite on a fresh database per case.
func TestMessageStoreConformance(t *testing.T) {
	porttest.MessageStore(t, func(t *testing.T) porttest.MessageFixture {
		f := newFixture(t, Options{})
		return porttest.MessageFixture{Store: f.admin, AdminWorld: adminWorld(f)}
	})
}
