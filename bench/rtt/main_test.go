package rtt

import (
	"testing"

	"go.uber.org/goleak"
)

// Serve's answering goroutines end with their connections.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
