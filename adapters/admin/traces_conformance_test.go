package admin

import (
	"testing"

	"github.com/queen-go/queen/ports/porttest"
)

// TestTraceStoreConformance runs the port's suite on a fresh database per case.
func TestTraceStoreConformance(t *testing.T) {
	porttest.TraceStore(t, func(t *testing.T) porttest.TraceFixture {
		f := newFixture(t, Options{})
		return porttest.TraceFixture{Store: f.admin, AdminWorld: adminWorld(f),
			StoredTraces: func(t *testing.T) int {
				t.Helper()
				return f.count(t, `SELECT count(*) FROM queen.message_traces`)
			}}
	})
}
