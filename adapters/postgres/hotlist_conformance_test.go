package postgres

import (
	"testing"

	"github.com/queen-go/queen/ports/porttest"
)

func TestHotlistStoreConformance(t *testing.T) {
	porttest.HotlistStore(t, consumeFixture)
}
