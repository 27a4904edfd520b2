package memory

import (
	"testing"

	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/ports/porttest"
)

func TestSystemStateConformance(t *testing.T) {
	porttest.SystemState(t, func(*testing.T) ports.SystemState { return NewSystemState() })
}
