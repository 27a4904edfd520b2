package memory

import (
	"testing"

	"github.com/queen-go/queen/ports/porttest"
)

func TestQueueSettingsConformance(t *testing.T) {
	porttest.QueueSettings(t, func(t *testing.T) porttest.QueueSettingsFixture {
		cf := consumeFixture(t)
		return porttest.QueueSettingsFixture{Settings: cf.Segments.(*Store), Segments: cf.Segments, Configure: cf.Configure}
	})
}
