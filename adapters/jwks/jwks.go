package jwks

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/httprc/v3"
	"github.com/lestrrat-go/httprc/v3/errsink"
	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/queen-go/queen/core/auth"
)

// The defaults of Options that server variables share (config's tests check that they
// agree).
const (
	DefaultRefresh = time.Hour       // JWT_JWKS_REFRESH_INTERVAL
	DefaultTimeout = 5 * time.Second // JWT_JWKS_TIMEOUT_MS
)

// Options configures a Client; zero values take the defaults in brackets.
type Options struct {
	Refresh      time.Duration // [1 h] JWT_JWKS_REFRESH_INTERVAL: period of the re-fetch
	Timeout      time.Duration // [5 s] JWT_JWKS_TIMEOUT_MS: bound of one fetch
	MissInterval time.Duration // [5 s] least time between two re-fetches caused by unknown kids
	Logger       *slog.Logger
	Now          func() time.Time // [time.Now] the clock of MissInterval
}

// Client is a JWKS client: a cached key set with refresh. Key is safe for concurrent use.
type Client struct {
	url       string
	opts      Options
	transport *http.Transport
	http      *http.Client
	fetches   atomic.Int64

	mu       sync.Mutex
	cache    *jwk.Cache                    // set by Start, cleared by Stop
	res      *httprc.ResourceBase[jwk.Set] // the registered set; Resource() is nil until fetched
	lastMiss time.Time                     // start of the last re-fetch for an unknown kid
	inflight chan struct{}                 // closed when the running re-fetch ends; nil when none
}

// New returns a client of the key set at rawURL (http or https); it starts nothing.
func New(rawURL string, opts Options) (*Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("jwks: url %q: want an http:// or https:// URL", rawURL)
	}
	if opts.Refresh <= 0 {
		opts.Refresh = DefaultRefresh
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MissInterval <= 0 {
		opts.MissInterval = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	// A transport of our own, so Stop can close its idle connections.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	c := &Client{url: rawURL, opts: opts, transport: tr}
	// jwk's defaults refuse redirects from https to http; the timeout bounds a fetch.
	c.http = jwk.WrapHTTPClientDefaults(&http.Client{Timeout: opts.Timeout, Transport: countingTransport{tr, &c.fetches}})
	return c, nil
}

// countingTransport counts the requests sent to the key set's server (Fetches).
type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.rt.RoundTrip(r)
}

// Fetches is the number of requests sent to the key set's server so far.
func (c *Client) Fetches() int64 { return c.fetches.Load() }

// Start starts the cache's goroutines and registers the set, waiting up to Timeout for
// its first fetch. A first fetch that fails is logged, not returned: tokens are answered
// 503 until a later fetch (periodic, or for a token's kid) succeeds. ctx bounds Start
// only; the client runs until Stop.
func (c *Client) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cache != nil {
		return errors.New("jwks: already started")
	}
	client := httprc.NewClient(httprc.WithWorkers(1), httprc.WithErrorSink(errsink.NewSlog(c.opts.Logger.With("target", "jwks"))))
	cache, err := jwk.NewCache(context.WithoutCancel(ctx), client)
	if err != nil {
		return fmt.Errorf("jwks: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	err = cache.Register(rctx, c.url, jwk.WithHTTPClient(c.http), jwk.WithConstantInterval(c.opts.Refresh),
		// After a failed connection the cache retries at this interval (its default is 15 min).
		jwk.WithMinInterval(min(c.opts.Refresh, time.Minute)))
	if err != nil && !errors.Is(err, httprc.ErrNotReady()) {
		c.shutdown(cache)
		return fmt.Errorf("jwks: register %s: %w", c.url, err)
	}
	if err != nil {
		c.opts.Logger.Warn("jwks: first fetch failed; tokens are refused until the key set is fetched",
			"url", c.url, "err", err)
	}
	res, err := cache.LookupResource(ctx, c.url)
	if err != nil {
		c.shutdown(cache)
		return fmt.Errorf("jwks: %w", err)
	}
	c.cache, c.res = cache, res
	return nil
}

// Stop ends the cache's goroutines and closes the client's connections. A client not
// started, or already stopped, is left as it is.
func (c *Client) Stop() {
	c.mu.Lock()
	cache := c.cache
	c.cache, c.res = nil, nil
	c.mu.Unlock()
	if cache != nil {
		c.shutdown(cache)
	}
}

func (c *Client) shutdown(cache *jwk.Cache) {
	// A fetch in flight is cancelled by the shutdown; 10 s only bounds a stuck one.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cache.Shutdown(ctx); err != nil {
		c.opts.Logger.Warn("jwks: stop", "err", err)
	}
	c.transport.CloseIdleConnections()
}

// Key returns the public key with id kid: an *rsa.PublicKey or an ed25519.PublicKey.
func (c *Client) Key(ctx context.Context, kid string) (crypto.PublicKey, error) {
	c.mu.Lock()
	res := c.res
	c.mu.Unlock()
	if res == nil {
		return nil, fmt.Errorf("jwks: not started: %w", auth.ErrKeysUnavailable)
	}
	if k, found, err := lookup(res.Resource(), kid); found {
		return k, err
	}
	if c.refreshForMiss(ctx) {
		if k, found, err := lookup(res.Resource(), kid); found {
			return k, err
		}
	}
	if res.Resource() == nil {
		return nil, fmt.Errorf("jwks: %s not fetched yet: %w", c.url, auth.ErrKeysUnavailable)
	}
	return nil, fmt.Errorf("jwks: no key %q in %s: %w", kid, c.url, auth.ErrUnknownKID)
}

// refreshForMiss re-fetches the set for a kid it did not hold, unless another re-fetch
// runs (then it waits for that one) or the last one started less than MissInterval ago.
// It reports whether a re-fetch ended successfully meanwhile.
func (c *Client) refreshForMiss(ctx context.Context) bool {
	c.mu.Lock()
	if ch := c.inflight; ch != nil {
		c.mu.Unlock()
		select {
		case <-ch:
			return true // the caller looks again, whatever that re-fetch found
		case <-ctx.Done():
			return false
		}
	}
	now := c.opts.Now()
	if !c.lastMiss.IsZero() && now.Sub(c.lastMiss) < c.opts.MissInterval {
		c.mu.Unlock()
		return false
	}
	c.lastMiss = now
	ch := make(chan struct{})
	c.inflight = ch
	cache := c.cache
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.inflight = nil
		c.mu.Unlock()
		close(ch)
	}()
	if cache == nil {
		return false
	}
	// Others wait for this fetch: the first caller going away must not cancel it.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.Timeout)
	defer cancel()
	if _, err := cache.Refresh(rctx, c.url); err != nil {
		c.opts.Logger.Warn("jwks: re-fetch for an unknown key id failed", "url", c.url, "err", err)
		return false
	}
	return true
}

// lookup finds kid in set; found is false when set is nil or holds no such kid.
func lookup(set jwk.Set, kid string) (k crypto.PublicKey, found bool, err error) {
	if set == nil {
		return nil, false, nil
	}
	key, ok := set.LookupKeyID(kid)
	if !ok {
		return nil, false, nil
	}
	pub, err := jwk.PublicKeyOf(key)
	if err != nil {
		return nil, true, fmt.Errorf("jwks: key %q has no public key (%v): %w", kid, err, auth.ErrUnknownKID)
	}
	var raw any
	if err := jwk.Export(pub, &raw); err != nil {
		return nil, true, fmt.Errorf("jwks: key %q: %v: %w", kid, err, auth.ErrUnknownKID)
	}
	switch r := raw.(type) {
	case *rsa.PublicKey:
		return r, true, nil
	case ed25519.PublicKey:
		return r, true, nil
	case *ed25519.PublicKey:
		return *r, true, nil
	}
	return nil, true, fmt.Errorf("jwks: key %q is a %T, not an RSA or Ed25519 public key: %w", kid, raw, auth.ErrUnknownKID)
}
