package history

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: every component
// that starts goroutines must stop them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
