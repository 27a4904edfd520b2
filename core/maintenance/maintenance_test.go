package maintenance

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queen-go/queen/ports"
)

// fakeState is an in-memory ports.SystemState that can be made unreadable.
type fakeState struct {
	mu        sync.Mutex
	flags     map[string]bool
	down      bool
	afterRead func() // runs once a read has taken its copy, before it returns
}

func (s *fakeState) Flags(context.Context) (map[string]bool, error) {
	s.mu.Lock()
	if s.down {
		s.mu.Unlock()
		return nil, errors.New("database down")
	}
	out := make(map[string]bool)
	for k, v := range s.flags {
		out[k] = v
	}
	hook := s.afterRead
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	return out, nil
}

func (s *fakeState) SetFlag(_ context.Context, k string, on bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errors.New("database down")
	}
	s.flags[k] = on
	return nil
}

func (s *fakeState) set(k string, on, down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flags[k], s.down = on, down
}

func TestFlags(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := &fakeState{flags: map[string]bool{ports.MaintenancePop: true}}
		var changes []string
		f := New(st, Options{Refresh: time.Second, Changed: func(k string, on bool) {
			if on {
				changes = append(changes, k+"=on")
			} else {
				changes = append(changes, k+"=off")
			}
		}})
		f.Start(context.Background())
		defer f.Stop()
		if f.Push() || !f.Pop() {
			t.Fatalf("initial flags push=%v pop=%v", f.Push(), f.Pop())
		}
		// Set applies at once on this broker.
		if err := f.Set(context.Background(), ports.MaintenancePush, true); err != nil || !f.Push() {
			t.Fatalf("Set: %v, push=%v", err, f.Push())
		}
		// Another broker turns pop maintenance off: seen within one refresh.
		st.set(ports.MaintenancePop, false, false)
		time.Sleep(1500 * time.Millisecond)
		if f.Pop() {
			t.Fatal("pop maintenance still on after a refresh")
		}
		// The database goes away: the last known flags stay in force.
		st.set(ports.MaintenancePop, false, true)
		time.Sleep(3 * time.Second)
		if !f.Push() {
			t.Fatal("push maintenance lost while the database is unreadable")
		}
		if err := f.Set(context.Background(), ports.MaintenancePush, false); err == nil || !f.Push() {
			t.Fatalf("Set with the database down: err %v, push=%v (want an error and no change)", err, f.Push())
		}
		if err := f.Set(context.Background(), "bogus", true); err == nil {
			t.Fatal("unknown flag accepted")
		}
		// The first read is a change too (from off), so a flag on at start is announced.
		want := []string{"pop_maintenance_mode=on", "maintenance_mode=on", "pop_maintenance_mode=off"}
		if len(changes) != len(want) || changes[0] != want[0] || changes[1] != want[1] || changes[2] != want[2] {
			t.Fatalf("changes %v, want %v", changes, want)
		}
	})
}

// A refresh whose read overlapped a Set must not apply what it read: the read may
// predate the Set's write, and applying it would undo the Set on this broker until the
// next refresh.
func TestRefreshDoesNotUndoAConcurrentSet(t *testing.T) {
	t.Parallel()
	st := &fakeState{flags: map[string]bool{}}
	f := New(st, Options{})
	st.afterRead = func() {
		st.afterRead = nil
		if err := f.Set(context.Background(), ports.MaintenancePush, true); err != nil {
			t.Error(err)
		}
	}
	if err := f.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !f.Push() {
		t.Fatal("push maintenance off after a refresh that read the flags before they were set on")
	}
	if err := f.Refresh(context.Background()); err != nil || !f.Push() {
		t.Fatalf("next refresh: %v, push=%v", err, f.Push())
	}
}
