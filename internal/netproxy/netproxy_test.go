package netproxy

import (
	"bufio"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echo starts a line echo server and returns its address.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

// roundTrip sends a line through c and reads the echo, waiting at most d.
func roundTrip(c net.Conn, r *bufio.Reader, d time.Duration) (string, error) {
	if err := c.SetDeadline(time.Now().Add(d)); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return "", err
	}
	return r.ReadString('\n')
}

func TestProxyFaults(t *testing.T) {
	p, err := Start(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got, err := roundTrip(c, r, 5*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("relayed round trip: %q, %v", got, err)
	}

	// Frozen: the bytes are held (the read times out), then delivered after the thaw.
	p.Freeze()
	if _, err := roundTrip(c, r, 200*time.Millisecond); err == nil {
		t.Fatal("a round trip went through a frozen proxy")
	}
	p.Thaw()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "ping\n" {
		t.Fatalf("the held line after the thaw: %q, %v", got, err)
	}

	// Cut: the open connection ends and a new one is refused; restored: relayed again.
	p.Cut()
	if _, err := roundTrip(c, r, 5*time.Second); err == nil {
		t.Fatal("a connection survived the cut")
	}
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		c2.Close()
		t.Fatal("a new connection was accepted while cut")
	}
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if got, err := roundTrip(c3, bufio.NewReader(c3), 5*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("round trip after the restore: %q, %v", got, err)
	}
}
