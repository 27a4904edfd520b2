package spoolfs_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind (a spool's writer
// that was never closed).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
