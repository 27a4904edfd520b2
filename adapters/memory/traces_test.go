package memory

import (
	"testing"

	"github.com/queen-go/queen/ports/porttest"
)

func TestTraceStoreConformance(t *testing.T) {
	porttest.TraceStore(t, func(*testing.T) porttest.TraceFixture {
		s := NewStore()
		return porttest.TraceFixture{Store: s, AdminWorld: adminWorld(s),
			StoredTraces: func(*testing.T) int { return s.StoredTraces() }}
	})
}
