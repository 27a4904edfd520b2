package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWrites: writes from many goroutines, read while they run, all arrive
// whole (the race detector checks the locking).
func TestConcurrentWrites(t *testing.T) {
	t.Parallel()
	var buf Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if n, err := buf.Write([]byte("line\n")); n != 5 || err != nil {
					t.Errorf("Write = %d, %v", n, err)
				}
				_ = buf.String()
			}
		})
	}
	wg.Wait()
	if got := strings.Count(buf.String(), "line\n"); got != 800 {
		t.Fatalf("%d lines, want 800", got)
	}
}
