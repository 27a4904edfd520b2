package postgres

import (
	"testing"

	"github.com/queen-go/queen/ports/porttest"
)

func TestTransactionStoreConformance(t *testing.T) {
	porttest.TransactionStore(t, consumeFixture)
}
