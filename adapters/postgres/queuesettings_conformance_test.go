package postgres

import (
	"testing"

	"github.com/queen-go/queen/ports/porttest"
)

// TestQueueSettingsConformance runs the port's suite on the store (EncryptionEnabled,
// push.go) on a fresh database per case, queues configured by the consume suites' hook.
func TestQueueSettingsConformance(t *testing.T) {
	porttest.QueueSettings(t, func(t *testing.T) porttest.QueueSettingsFixture {
		cf := consumeFixture(t)
		return porttest.QueueSettingsFixture{Settings: cf.Segments.(*Store), Segments: cf.Segments, Configure: cf.Configure}
	})
}
