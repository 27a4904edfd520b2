package memory

import (
	"testing"

	"github.com/queen-go/queen/ports/porttest"
)

func TestMessageStoreConformance(t *testing.T) {
	porttest.MessageStore(t, func(*testing.T) porttest.MessageFixture {
		s := NewStore()
		return porttest.MessageFixture{Store: s.Messages(), AdminWorld: adminWorld(s)}
	})
}
