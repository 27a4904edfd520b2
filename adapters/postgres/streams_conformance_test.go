package postgres

import (
	"testing"

	"github.com/queen-go/queen/ports/porttest"
)

func TestStreamStoreConformance(t *testing.T) {
	porttest.StreamStore(t, consumeFixture)
}
