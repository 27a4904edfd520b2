package admin

import (
	"testing"

	"github.com/queen-go/queen/ports/porttest"
)

// TestRetentionStoreConformance runs the port's suite on the PostgreSQL store (the
// retention functions of schema/012_retention.sql) on a fresh database per case, with
// the admin ports of the same database showing what was left.
func TestRetentionStoreConformance(t *testing.T) {
	porttest.Retention(t, func(t *testing.T) porttest.RetentionFixture {
		f := newFixture(t, Options{})
		return porttest.RetentionFixture{Store: f.store, Messages: f.admin, Traces: f.admin, AdminWorld: adminWorld(f)}
	})
}
