package porttest

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/queen-go/queen/ports"
)

// SystemState runs the conformance suite of ports.SystemState; newState must return a
// store with no flag set, of its own on every call.
func SystemState(t *testing.T, newState func(t *testing.T) ports.SystemState) {
	tests := []struct {
		name string
		run  func(t *testing.T, s ports.SystemState)
	}{
		{"nothing stored reads as every flag off", testFlagsEmpty},
		{"each maintenance flag reads back alone", testFlagRoundTrip},
		{"a flag turns off", testFlagOff},
		{"flags are independent", testFlagsIndependent},
		{"repeated sets are idempotent", testFlagIdempotent},
		{"the returned map is the caller's", testFlagsCopy},
		{"concurrent sets of different flags all take effect", testFlagsConcurrent},
		{"a cancelled context fails and stores nothing", testFlagsCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newState(t))
		})
	}
}

func flags(t *testing.T, s ports.SystemState) map[string]bool {
	t.Helper()
	m, err := s.Flags(context.Background())
	if err != nil {
		t.Fatalf("Flags: %v", err)
	}
	return m
}

func setFlag(t *testing.T, s ports.SystemState, key string, on bool) {
	t.Helper()
	if err := s.SetFlag(context.Background(), key, on); err != nil {
		t.Fatalf("SetFlag(%q, %v): %v", key, on, err)
	}
}

// wantFlags fails unless the flags that are on are exactly on (absent flags are off).
func wantFlags(t *testing.T, s ports.SystemState, on ...string) {
	t.Helper()
	got := flags(t, s)
	want := map[string]bool{}
	for _, k := range on {
		want[k] = true
	}
	gotOn := map[string]bool{}
	for k, v := range got {
		if v {
			gotOn[k] = true
		}
	}
	if !maps.Equal(gotOn, want) {
		t.Fatalf("Flags = %v; want exactly %v on", got, on)
	}
}

func testFlagsEmpty(t *testing.T, s ports.SystemState) {
	wantFlags(t, s)
	got := flags(t, s)
	if got[ports.MaintenancePush] || got[ports.MaintenancePop] {
		t.Fatalf("Flags of an empty store = %v, want both maintenance flags off", got)
	}
}

func testFlagRoundTrip(t *testing.T, s ports.SystemState) {
	for _, tc := range []struct{ key, other string }{
		{ports.MaintenancePush, ports.MaintenancePop},
		{ports.MaintenancePop, ports.MaintenancePush},
	} {
		setFlag(t, s, tc.key, true)
		got := flags(t, s)
		if !got[tc.key] || got[tc.other] {
			t.Fatalf("after setting %s: Flags = %v, want it on and %s off", tc.key, got, tc.other)
		}
		setFlag(t, s, tc.key, false)
	}
	wantFlags(t, s)
}

func testFlagOff(t *testing.T, s ports.SystemState) {
	setFlag(t, s, ports.MaintenancePush, true)
	wantFlags(t, s, ports.MaintenancePush)
	setFlag(t, s, ports.MaintenancePush, false)
	wantFlags(t, s)
	// Off without ever having been on.
	setFlag(t, s, ports.MaintenancePop, false)
	wantFlags(t, s)
}

func testFlagsIndependent(t *testing.T, s ports.SystemState) {
	const custom = "some_future_flag" // Flags returns every stored flag, not only known ones
	setFlag(t, s, ports.MaintenancePush, true)
	setFlag(t, s, ports.MaintenancePop, true)
	setFlag(t, s, custom, true)
	wantFlags(t, s, ports.MaintenancePush, ports.MaintenancePop, custom)
	setFlag(t, s, ports.MaintenancePush, false)
	wantFlags(t, s, ports.MaintenancePop, custom)
	setFlag(t, s, custom, false)
	wantFlags(t, s, ports.MaintenancePop)
}

func testFlagIdempotent(t *testing.T, s ports.SystemState) {
	for range 3 {
		setFlag(t, s, ports.MaintenancePop, true)
	}
	wantFlags(t, s, ports.MaintenancePop)
	for range 2 {
		setFlag(t, s, ports.MaintenancePop, false)
	}
	wantFlags(t, s)
	setFlag(t, s, ports.MaintenancePop, true)
	wantFlags(t, s, ports.MaintenancePop)
}

func testFlagsCopy(t *testing.T, s ports.SystemState) {
	setFlag(t, s, ports.MaintenancePush, true)
	got := flags(t, s)
	got[ports.MaintenancePush] = false
	got[ports.MaintenancePop] = true
	wantFlags(t, s, ports.MaintenancePush)
}

func testFlagsConcurrent(t *testing.T, s ports.SystemState) {
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	keys := make([]string, n)
	for i := range n {
		keys[i] = fmt.Sprint("flag_", i)
		wg.Go(func() { errs[i] = s.SetFlag(context.Background(), keys[i], true) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("SetFlag(%q): %v", keys[i], err)
		}
	}
	wantFlags(t, s, keys...)
}

func testFlagsCancelled(t *testing.T, s ports.SystemState) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.SetFlag(ctx, ports.MaintenancePush, true); err == nil {
		t.Fatal("SetFlag with a cancelled context succeeded")
	}
	if got, err := s.Flags(ctx); err == nil {
		t.Fatalf("Flags with a cancelled context = %v, want an error", got)
	}
	wantFlags(t, s)
}
