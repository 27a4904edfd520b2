package memory

import (
	"testing"

	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/ports/porttest"
)

func TestMetricsConformance(t *testing.T) {
	porttest.MetricsWriter(t, func(*testing.T) porttest.MetricsFixture {
		m := NewMetrics()
		return porttest.MetricsFixture{
			Writer:  m,
			Queues:  func(*testing.T) []ports.QueueMinute { return m.QueueMinutes() },
			Brokers: func(*testing.T) []ports.BrokerMinute { return m.BrokerMinutes() },
		}
	})
}
