package postgres

import (
	"testing"

	"github.com/queen-go/queen/ports/porttest"
)

func TestPlainRefusedConformance(t *testing.T) {
	porttest.PlainRefused(t, consumeFixture)
}
