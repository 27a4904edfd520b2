package jwks

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"go.uber.org/goleak"

	"github.com/queen-go/queen/core/auth"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var rsaKeys = sync.OnceValue(func() [2]*rsa.PrivateKey {
	var ks [2]*rsa.PrivateKey
	for i := range ks {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		ks[i] = k
	}
	return ks
})

// server is a JWKS endpoint whose keys and status the test changes, counting its hits.
type server struct {
	*httptest.Server
	hits   atomic.Int64
	mu     sync.Mutex
	body   []byte
	status int
}

func newServer(t *testing.T, keys map[string]any) *server {
	t.Helper()
	s := &server{status: http.StatusOK}
	s.set(t, keys)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		body, status := s.body, s.status
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

// set makes the server answer a set of keys (raw keys by kid).
func (s *server) set(t *testing.T, keys map[string]any) {
	t.Helper()
	set := jwk.NewSet()
	for kid, raw := range keys {
		k, err := jwk.Import(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := k.Set(jwk.KeyIDKey, kid); err != nil {
			t.Fatal(err)
		}
		if err := set.AddKey(k); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.body = b
	s.mu.Unlock()
}

func (s *server) setStatus(code int) {
	s.mu.Lock()
	s.status = code
	s.mu.Unlock()
}

// clock is a settable clock for MissInterval.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Unix(1_800_000_000, 0).UnixNano())
	return c
}
func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// start starts a client of s; the test's cleanup stops it.
func start(t *testing.T, s *server, opts Options) *Client {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	c, err := New(s.URL, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

func TestKeysByKid(t *testing.T) {
	t.Parallel()
	rk := rsaKeys()[0]
	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	s := newServer(t, map[string]any{"r1": &rk.PublicKey, "e1": edPriv.Public(), "priv": rsaKeys()[1], "oct": []byte("an hmac secret, never handed out")})
	c := start(t, s, Options{})
	if n := s.hits.Load(); n != 1 {
		t.Fatalf("%d fetches after Start, want 1", n)
	}
	tests := []struct {
		name, kid string
		check     func(any) bool
		err       error
	}{
		{name: "rsa", kid: "r1", check: func(k any) bool { p, ok := k.(*rsa.PublicKey); return ok && p.Equal(&rk.PublicKey) }},
		{name: "ed25519", kid: "e1", check: func(k any) bool { p, ok := k.(ed25519.PublicKey); return ok && p.Equal(edPriv.Public()) }},
		{name: "private key published: its public part", kid: "priv", check: func(k any) bool {
			p, ok := k.(*rsa.PublicKey)
			return ok && p.Equal(&rsaKeys()[1].PublicKey)
		}},
		{name: "symmetric key refused", kid: "oct", err: auth.ErrUnknownKID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := c.Key(context.Background(), tt.kid)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Key(%q): %v, want %v", tt.kid, err, tt.err)
				}
				return
			}
			if err != nil || !tt.check(k) {
				t.Fatalf("Key(%q) = %T, %v", tt.kid, k, err)
			}
		})
	}
	if n := s.hits.Load(); n != 1 {
		t.Fatalf("%d fetches for known kids, want 1", n)
	}
}

// TestUnknownKidIsRateLimited: a thousand lookups of an invented kid cost one re-fetch;
// the next one is allowed MissInterval later.
func TestUnknownKidIsRateLimited(t *testing.T) {
	t.Parallel()
	s := newServer(t, map[string]any{"r1": &rsaKeys()[0].PublicKey})
	clk := newClock()
	c := start(t, s, Options{Now: clk.now})
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for range 1000 {
		wg.Go(func() {
			if _, err := c.Key(context.Background(), "invented"); !errors.Is(err, auth.ErrUnknownKID) {
				wrong.Add(1)
			}
		})
	}
	wg.Wait()
	if wrong.Load() != 0 {
		t.Fatalf("%d lookups did not answer ErrUnknownKID", wrong.Load())
	}
	if n := s.hits.Load(); n != 2 {
		t.Fatalf("%d fetches for 1000 unknown kids, want 2 (the first, one re-fetch)", n)
	}
	clk.advance(4 * time.Second)
	_, _ = c.Key(context.Background(), "invented")
	if n := s.hits.Load(); n != 2 {
		t.Fatalf("%d fetches 4 s later, want still 2", n)
	}
	clk.advance(time.Second)
	_, _ = c.Key(context.Background(), "invented")
	if n := s.hits.Load(); n != 3 || c.Fetches() != 3 {
		t.Fatalf("%d fetches (client counted %d) 5 s later, want 3", n, c.Fetches())
	}
}

// TestRotation: a kid that appears in the set is found by the re-fetch its first token
// causes.
func TestRotation(t *testing.T) {
	t.Parallel()
	ks := rsaKeys()
	s := newServer(t, map[string]any{"old": &ks[0].PublicKey})
	c := start(t, s, Options{})
	s.set(t, map[string]any{"new": &ks[1].PublicKey})
	k, err := c.Key(context.Background(), "new")
	if err != nil || !k.(*rsa.PublicKey).Equal(&ks[1].PublicKey) {
		t.Fatalf("Key(new) = %v, %v", k, err)
	}
	if _, err := c.Key(context.Background(), "old"); !errors.Is(err, auth.ErrUnknownKID) {
		t.Fatalf("Key(old) after rotation: %v", err)
	}
}

// TestPeriodicRefresh: the set is re-fetched every Refresh without any lookup.
func TestPeriodicRefresh(t *testing.T) {
	t.Parallel()
	s := newServer(t, map[string]any{"r1": &rsaKeys()[0].PublicKey})
	start(t, s, Options{Refresh: time.Second})
	deadline := time.Now().Add(15 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for s.hits.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d fetches in 15 s with a 1 s refresh", s.hits.Load())
		}
		<-tick.C
	}
}

// TestUnreachableAtStart: Start succeeds, lookups answer ErrKeysUnavailable until a fetch
// succeeds.
func TestUnreachableAtStart(t *testing.T) {
	t.Parallel()
	s := newServer(t, map[string]any{"r1": &rsaKeys()[0].PublicKey})
	s.setStatus(http.StatusServiceUnavailable)
	clk := newClock()
	c := start(t, s, Options{Now: clk.now, Timeout: time.Second})
	if _, err := c.Key(context.Background(), "r1"); !errors.Is(err, auth.ErrKeysUnavailable) {
		t.Fatalf("Key with no set: %v", err)
	}
	s.setStatus(http.StatusOK)
	if _, err := c.Key(context.Background(), "r1"); !errors.Is(err, auth.ErrKeysUnavailable) {
		t.Fatalf("Key inside the miss interval: %v", err)
	}
	clk.advance(5 * time.Second)
	if _, err := c.Key(context.Background(), "r1"); err != nil {
		t.Fatalf("Key once the server answers: %v", err)
	}
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	if _, err := New("ftp://example.com/keys", Options{}); err == nil {
		t.Fatal("New accepted an ftp URL")
	}
	s := newServer(t, map[string]any{"r1": &rsaKeys()[0].PublicKey})
	c, err := New(s.URL, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Key(context.Background(), "r1"); !errors.Is(err, auth.ErrKeysUnavailable) {
		t.Fatalf("Key before Start: %v", err)
	}
	if s.hits.Load() != 0 {
		t.Fatal("New fetched the set")
	}
	c.Stop() // not started: nothing to do
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err == nil {
		t.Fatal("a second Start succeeded")
	}
	c.Stop()
	c.Stop()
	if _, err := c.Key(context.Background(), "r1"); !errors.Is(err, auth.ErrKeysUnavailable) {
		t.Fatalf("Key after Stop: %v", err)
	}
}
