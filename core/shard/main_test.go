package shard

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: the push tests start
// fusion batchers, and every one must be stopped.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
