package push

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"

	"github.com/queen-go/queen/core/envelope"
)

// gatedSettings answers the encryption flag; its first lookup waits for release, so a
// test can change the flag (and call Forget) while that lookup is in flight.
type gatedSettings struct {
	on      atomic.Bool
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (g *gatedSettings) EncryptionEnabled(_ context.Context, _, _ string) (bool, error) {
	on := g.on.Load() // read before the change: the stale answer the gate delays
	if g.calls.Add(1) == 1 {
		close(g.entered)
		<-g.release
	}
	return on, nil
}

func TestForgetDuringLookupIsNotUndone(t *testing.T) {
	t.Parallel()
	sealer, err := envelope.New(bytes.Repeat([]byte{1}, 32))
	if err != nil {
		t.Fatal(err)
	}
	settings := &gatedSettings{entered: make(chan struct{}), release: make(chan struct{})}
	svc := New(nil, Options{Sealer: sealer, Settings: settings})
	stale := make(chan bool)
	go func() { stale <- svc.encryptionEnabled(t.Context(), tenant, "q") }()
	<-settings.entered
	// The queue is reconfigured while the lookup is in flight.
	settings.on.Store(true)
	svc.Forget(tenant, "q")
	close(settings.release)
	if <-stale {
		t.Fatal("the in-flight lookup saw the new flag: the test does not exercise the race")
	}
	if !svc.encryptionEnabled(t.Context(), tenant, "q") {
		t.Fatal("the lookup that overlapped Forget was cached: the old flag is back")
	}
	if n := settings.calls.Load(); n != 2 {
		t.Fatalf("%d lookups, want 2", n)
	}
}
