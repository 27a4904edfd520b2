package encryption

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/core/envelope"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

const tenant = ports.DefaultTenant

// settings answers the encryption flags of on; queue "broken" cannot be read.
type settings struct {
	mu    sync.Mutex
	on    map[string]bool
	calls atomic.Int32
}

func (s *settings) EncryptionEnabled(_ context.Context, _, queue string) (bool, error) {
	s.calls.Add(1)
	if queue == "broken" {
		return false, errors.New("database down")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.on[queue], nil
}

func (s *settings) set(queue string, on bool) {
	s.mu.Lock()
	s.on[queue] = on
	s.mu.Unlock()
}

// failingSealer cannot seal.
type failingSealer struct{}

func (failingSealer) Seal([]byte) ([]byte, error) { return nil, errors.New("no entropy") }

func testSealer(t *testing.T) *envelope.Sealer {
	t.Helper()
	s, err := envelope.New(bytes.Repeat([]byte{3}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSeal(t *testing.T) {
	t.Parallel()
	sealer := testSealer(t)
	const payload = `{"card":"4111"}`
	for _, tt := range []struct {
		name    string
		sealer  Sealer
		queue   string
		read    bool
		sealed  bool  // f arrives already sealed
		wantEnc bool  // f leaves sealed
		wantErr error // nil: f may be written
	}{
		{name: "plain queue, key", sealer: sealer, queue: "plain", read: true},
		{name: "plain queue, no key", queue: "plain", read: true},
		{name: "encrypted queue, key", sealer: sealer, queue: "secret", read: true, wantEnc: true},
		{name: "encrypted queue, no key: refused", queue: "secret", read: true, wantErr: ErrNoKey},
		{name: "encrypted queue, seal fails: refused", sealer: failingSealer{}, queue: "secret", read: true, wantErr: ErrSeal},
		{name: "unreadable flag, key: sealed anyway", sealer: sealer, queue: "broken", read: true, wantEnc: true},
		{name: "unreadable flag, no key: refused", queue: "broken", read: true, wantErr: ErrFlagUnknown},
		{name: "flag not read, key: sealed anyway", sealer: sealer, queue: "secret", wantEnc: true},
		{name: "flag not read, no key: refused", queue: "plain", wantErr: ErrFlagUnknown},
		{name: "already sealed, no key: written as it is", queue: "secret", read: true, sealed: true, wantEnc: true},
		{name: "nil sealer pointer is no key", sealer: (*envelope.Sealer)(nil), queue: "secret", read: true, wantErr: ErrNoKey},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := New(tt.sealer, &settings{on: map[string]bool{"secret": true}}, Options{})
			f := segment.Frame{Payload: []byte(payload), Encrypted: tt.sealed}
			err := p.Memo(t.Context(), tt.read).Seal(tenant, tt.queue, &f)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Seal = %v, want %v", err, tt.wantErr)
			}
			if f.Encrypted != tt.wantEnc {
				t.Fatalf("frame encrypted = %v, want %v", f.Encrypted, tt.wantEnc)
			}
			switch {
			case tt.sealed || err != nil || !tt.wantEnc:
				if string(f.Payload) != payload {
					t.Fatalf("payload changed to %s", f.Payload)
				}
			default:
				if pt, err := sealer.Open(f.Payload); err != nil || string(pt) != payload {
					t.Fatalf("the envelope opens to %q, %v", pt, err)
				}
			}
		})
	}
}

// TestFlagReads: one read per queue per memo, none while the cached flag is fresh, one
// after Forget or expiry; an unreadable flag is never cached; a memo that may not read
// uses the last value however old.
func TestFlagReads(t *testing.T) {
	t.Parallel()
	seal := func(m *Memo, queues ...string) {
		for k := range 1000 {
			q := queues[k%len(queues)]
			f := segment.Frame{Payload: []byte(`1`)}
			_ = m.Seal(tenant, q, &f)
		}
	}
	for _, tt := range []struct {
		name  string
		ttl   time.Duration
		steps func(t *testing.T, p *Policy, s *settings)
		want  int32
	}{
		{"1000 frames over three queues read three flags", time.Hour, func(t *testing.T, p *Policy, _ *settings) {
			seal(p.Memo(t.Context(), true), "secret", "plain", "broken")
		}, 3},
		{"a second memo reads only the uncacheable flag", time.Hour, func(t *testing.T, p *Policy, _ *settings) {
			seal(p.Memo(t.Context(), true), "secret", "plain", "broken")
			seal(p.Memo(t.Context(), true), "secret", "plain", "broken")
		}, 4},
		{"an expired flag is read again", time.Nanosecond, func(t *testing.T, p *Policy, _ *settings) {
			seal(p.Memo(t.Context(), true), "secret")
			seal(p.Memo(t.Context(), true), "secret")
		}, 2},
		{"Forget drops the cached flag", time.Hour, func(t *testing.T, p *Policy, _ *settings) {
			seal(p.Memo(t.Context(), true), "secret")
			p.Forget(tenant, "secret")
			seal(p.Memo(t.Context(), true), "secret")
		}, 2},
		{"a memo that may not read uses an expired flag", time.Nanosecond, func(t *testing.T, p *Policy, s *settings) {
			seal(p.Memo(t.Context(), true), "secret")
			s.set("secret", false) // configured elsewhere: the stale "on" is still used
			f := segment.Frame{Payload: []byte(`1`)}
			if err := p.Memo(t.Context(), false).Seal(tenant, "secret", &f); err != nil || !f.Encrypted {
				t.Fatalf("Seal = %v, encrypted %v: want the last flag read (on)", err, f.Encrypted)
			}
		}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &settings{on: map[string]bool{"secret": true}}
			p := New(testSealer(t), s, Options{CacheTTL: tt.ttl})
			tt.steps(t, p, s)
			if n := s.calls.Load(); n != tt.want {
				t.Fatalf("%d flag reads, want %d", n, tt.want)
			}
		})
	}
}

// gatedSettings answers the encryption flag; its first read waits for release, so a
// test can change the flag (and call Forget) while that read is in flight.
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

func TestForgetDuringReadIsNotUndone(t *testing.T) {
	t.Parallel()
	settings := &gatedSettings{entered: make(chan struct{}), release: make(chan struct{})}
	p := New(testSealer(t), settings, Options{CacheTTL: time.Hour})
	encrypted := func() bool {
		f := segment.Frame{Payload: []byte(`1`)}
		if err := p.Memo(t.Context(), true).Seal(tenant, "q", &f); err != nil {
			panic(fmt.Sprintf("Seal: %v", err))
		}
		return f.Encrypted
	}
	stale := make(chan bool)
	go func() { stale <- encrypted() }()
	<-settings.entered
	// The queue is reconfigured while the read is in flight.
	settings.on.Store(true)
	p.Forget(tenant, "q")
	close(settings.release)
	if <-stale {
		t.Fatal("the in-flight read saw the new flag: the test does not exercise the race")
	}
	if !encrypted() {
		t.Fatal("the read that overlapped Forget was cached: the old flag is back")
	}
	if n := settings.calls.Load(); n != 2 {
		t.Fatalf("%d reads, want 2", n)
	}
}

func TestNilPolicyEncryptsNothing(t *testing.T) {
	t.Parallel()
	var p *Policy
	f := segment.Frame{Payload: []byte(`1`)}
	if err := p.Memo(t.Context(), true).Seal(tenant, "q", &f); err != nil || f.Encrypted || p.HasKey() {
		t.Fatalf("Seal = %v, encrypted %v", err, f.Encrypted)
	}
}
