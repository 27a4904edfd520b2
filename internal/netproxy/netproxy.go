package netproxy

import (
	"fmt"
	"net"
	"sync"
)

// Proxy relays TCP from Addr to its target (see the package doc for its faults).
type Proxy struct {
	target string // host:port relayed to
	addr   string // host:port clients connect to
	port   int    // addr's port

	mu     sync.Mutex
	ln     net.Listener // nil while cut
	conns  map[net.Conn]struct{}
	thawed chan struct{} // closed while bytes flow
	closed bool
	wg     sync.WaitGroup
}

// Start listens on a free loopback port and relays every connection to target
// (host:port).
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("netproxy: listen for %s: %w", target, err)
	}
	p := &Proxy{target: target, addr: ln.Addr().String(), port: ln.Addr().(*net.TCPAddr).Port, conns: map[net.Conn]struct{}{}, thawed: make(chan struct{})}
	close(p.thawed)
	p.serve(ln)
	return p, nil
}

// Addr is the host:port clients connect to.
func (p *Proxy) Addr() string { return p.addr }

// Port is Addr's port.
func (p *Proxy) Port() int { return p.port }

func (p *Proxy) serve(ln net.Listener) {
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

// relay connects c, accepted on ln, to the target and copies both ways until either side
// ends. The dial runs beside the accept loop, so that a target that does not answer
// holds up no other connection.
func (p *Proxy) relay(ln net.Listener, c net.Conn) {
	p.wg.Go(func() {
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
		p.wg.Go(func() { p.pipe(up, c, done) })
		p.wg.Go(func() { p.pipe(c, up, done) })
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

// pipe copies src to dst, holding each chunk while the proxy is frozen.
func (p *Proxy) pipe(dst, src net.Conn, done chan<- struct{}) {
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

// Cut takes the target away: no new connection, every open one torn down.
func (p *Proxy) Cut() {
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

// Restore brings the target back on the same address.
func (p *Proxy) Restore() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil || p.closed {
		return nil
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return fmt.Errorf("netproxy: listen again on %s: %w", p.addr, err)
	}
	p.serve(ln)
	return nil
}

// Freeze holds every byte relayed from now on until Thaw.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
		p.thawed = make(chan struct{})
	default: // already frozen
	}
}

// Thaw lets the held bytes through.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
	default:
		close(p.thawed)
	}
}

// Close ends everything the proxy runs and waits for its goroutines.
func (p *Proxy) Close() {
	p.Thaw()
	p.Cut()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.wg.Wait()
}
