package e2e

import (
	"net"
	"net/url"
	"sync"
	"testing"
)

// pgProxy relays TCP between a broker and its PostgreSQL, so that a test can make the
// database unreachable or unresponsive for that broker alone: the cluster is shared by
// every test of the process and must keep running.
//
//   - cut: the listener closes and every relayed connection is torn down, as when the
//     database host goes away (new connections are refused);
//   - restore: the listener comes back on the same address;
//   - freeze: bytes still flow in but are held, as when the database stops answering:
//     statements in flight stay in flight; thaw lets them through.
type pgProxy struct {
	target string // host:port of PostgreSQL
	addr   string // host:port the broker connects to

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
	thawed chan struct{} // closed while bytes flow
	closed bool
	wg     sync.WaitGroup
}

// newPGProxy starts a proxy to dbURL's server and returns it with dbURL pointed at it. It
// needs a URL-form address (pgtest's own cluster gives one).
func newPGProxy(t testing.TB, dbURL string) (*pgProxy, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil || u.Host == "" {
		t.Fatalf("the database proxy needs a postgres:// URL, not %q (is QUEEN_TEST_PG_URL in keyword form?)", dbURL)
	}
	p := &pgProxy{target: u.Host, conns: map[net.Conn]struct{}{}, thawed: make(chan struct{})}
	close(p.thawed)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.close)
	u.Host = p.addr
	return p, u.String()
}

func (p *pgProxy) serve(ln net.Listener) {
	p.ln = ln
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // cut or closed
			}
			p.relay(ln, c)
		}
	})
}

// relay connects c, accepted on ln, to PostgreSQL and copies both ways until either side
// ends.
func (p *pgProxy) relay(ln net.Listener, c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.closed || p.ln != ln { // cut while dialing: this connection is gone too
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				p.mu.Lock()
				gate := p.thawed
				p.mu.Unlock()
				<-gate
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	p.wg.Go(func() { pipe(up, c) })
	p.wg.Go(func() { pipe(c, up) })
	p.wg.Go(func() {
		<-done // one direction ended: end the other
		p.mu.Lock()
		delete(p.conns, c)
		delete(p.conns, up)
		p.mu.Unlock()
		c.Close()
		up.Close()
		<-done
	})
}

// cut takes the database away: no new connection, every open one torn down.
func (p *pgProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
}

// restore brings the database back on the same address.
func (p *pgProxy) restore(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("proxy: listen again on %s: %v", p.addr, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.serve(ln)
}

// freeze holds every byte relayed from now on until thaw.
func (p *pgProxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
		p.thawed = make(chan struct{})
	default: // already frozen
	}
}

// thaw lets the held bytes through.
func (p *pgProxy) thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
	default:
		close(p.thawed)
	}
}

// close ends everything the proxy runs and waits for its goroutines.
func (p *pgProxy) close() {
	p.thaw()
	p.cut()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.wg.Wait()
}
