package e2e

import (
	"net/url"
	"testing"

	"github.com/queen-go/queen/internal/netproxy"
)

// pgProxy relays TCP between a broker and its PostgreSQL, so that a test can make the
// database unreachable (cut, restore) or unresponsive (freeze, thaw) for that broker
// alone: the cluster is shared by every test of the process and must keep running.
type pgProxy struct{ *netproxy.Proxy }

// newPGProxy starts a proxy to dbURL's server and returns it with dbURL pointed at it. It
// needs a URL-form address (pgtest's own cluster gives one).
func newPGProxy(t testing.TB, dbURL string) (*pgProxy, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil || u.Host == "" {
		t.Fatalf("the database proxy needs a postgres:// URL, not %q (is QUEEN_TEST_PG_URL in keyword form?)", dbURL)
	}
	p, err := netproxy.Start(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	u.Host = p.Addr()
	return &pgProxy{p}, u.String()
}

func (p *pgProxy) cut()    { p.Cut() }
func (p *pgProxy) freeze() { p.Freeze() }
func (p *pgProxy) thaw()   { p.Thaw() }

// restore brings the database back on the same address.
func (p *pgProxy) restore(t testing.TB) {
	t.Helper()
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
}
