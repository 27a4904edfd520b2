package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Client is one keep-alive HTTP/1.1 connection to the broker. It is deliberately
// minimal: on a small machine the load generator shares the CPU with the system under
// test, and net/http's client costs more per request than a broker's push path. It
// understands Content-Length and chunked responses, and bodiless 204s. Not safe for
// concurrent use: each worker owns one.
type Client struct {
	addr    string
	host    string
	others  []endpoint // failover targets, tried in turn when a dial fails
	timeout time.Duration
	conn    net.Conn
	live    atomic.Pointer[net.Conn] // conn, for Abort from another goroutine
	aborted atomic.Bool
	br      *bufio.Reader
	buf     []byte
	body    []byte
}

// endpoint is a broker's dial address and Host header.
type endpoint struct{ addr, host string }

func parseBase(base string) (endpoint, error) {
	u, err := url.Parse(base)
	if err != nil {
		return endpoint{}, fmt.Errorf("load: broker URL %q: %w", base, err)
	}
	if u.Scheme != "http" {
		return endpoint{}, fmt.Errorf("load: broker URL %q: only http:// is supported", base)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return endpoint{addr: addr, host: u.Host}, nil
}

// NewClient returns a client for base ("http://host:port"). timeout bounds each
// request (0 = none); long polls need more than their own timeout. With failover, a
// dial that fails moves the client to the next of those brokers (then round): brokers
// sharing a database serve the same queues, so a consumer outlives its broker.
func NewClient(base string, timeout time.Duration, failover ...string) (*Client, error) {
	e, err := parseBase(base)
	if err != nil {
		return nil, err
	}
	c := &Client{addr: e.addr, host: e.host, timeout: timeout}
	for _, b := range failover {
		o, err := parseBase(b)
		if err != nil {
			return nil, err
		}
		c.others = append(c.others, o)
	}
	return c, nil
}

// rotate moves the client to its next failover broker, if it has any.
func (c *Client) rotate() {
	if len(c.others) == 0 {
		return
	}
	next := c.others[0]
	c.others = append(c.others[1:], endpoint{addr: c.addr, host: c.host})
	c.addr, c.host = next.addr, next.host
}

// Close drops the connection.
func (c *Client) Close() {
	if c.conn != nil {
		c.live.Store(nil)
		c.conn.Close()
		c.conn = nil
	}
}

// ErrAborted is returned by requests of an aborted client.
var ErrAborted = errors.New("load: client aborted")

// Abort makes the request in progress (a parked long poll, say) and every later one
// fail at once. Safe to call from any goroutine.
func (c *Client) Abort() {
	c.aborted.Store(true)
	if cp := c.live.Load(); cp != nil {
		_ = (*cp).Close() // net.Conn methods may be called concurrently: this ends a blocked read
	}
}

// Do sends one request and returns the status and the body. The body slice is reused
// by the next call. A transport error closes the connection; the next call redials.
func (c *Client) Do(method, path string, body []byte) (int, []byte, error) {
	if c.aborted.Load() {
		return 0, nil, ErrAborted
	}
	if c.conn == nil {
		conn, err := net.Dial("tcp", c.addr)
		if err != nil {
			c.rotate()
			return 0, nil, err
		}
		c.conn, c.br = conn, bufio.NewReaderSize(conn, 64<<10)
		c.live.Store(&c.conn)
		if c.aborted.Load() { // Abort ran between the check and the Store
			c.Close()
			return 0, nil, ErrAborted
		}
	}
	if c.timeout > 0 {
		_ = c.conn.SetDeadline(time.Now().Add(c.timeout))
	}
	c.buf = fmt.Appendf(c.buf[:0], "%s %s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\n", method, path, c.host)
	if body != nil {
		c.buf = fmt.Appendf(c.buf, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	c.buf = append(c.buf, "\r\n"...)
	c.buf = append(c.buf, body...)
	code, resp, err := c.roundTrip(method)
	if err != nil {
		c.Close()
		if c.aborted.Load() {
			err = ErrAborted
		}
	}
	return code, resp, err
}

func (c *Client) roundTrip(method string) (int, []byte, error) {
	if _, err := c.conn.Write(c.buf); err != nil {
		return 0, nil, err
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	code, err := statusCode(line)
	if err != nil {
		return 0, nil, err
	}
	length, chunked, closeAfter := -1, false, false
	for {
		h, err := c.br.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		if len(h) <= 2 {
			break
		}
		k, v, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			length, err = strconv.Atoi(string(v))
			if err != nil {
				return 0, nil, fmt.Errorf("bad Content-Length %q", v)
			}
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(v, []byte("chunked"))
		case bytes.EqualFold(k, []byte("Connection")):
			closeAfter = bytes.EqualFold(v, []byte("close"))
		}
	}
	c.body = c.body[:0]
	switch {
	case method == "HEAD" || code == 204 || code == 304 || (code >= 100 && code < 200):
	case chunked:
		if err := c.readChunked(); err != nil {
			return 0, nil, err
		}
	case length >= 0:
		c.body = grow(c.body, length)
		if _, err := io.ReadFull(c.br, c.body); err != nil {
			return 0, nil, err
		}
	default:
		return 0, nil, errors.New("response without Content-Length or chunked encoding")
	}
	if closeAfter {
		c.Close()
	}
	return code, c.body, nil
}

func (c *Client) readChunked() error {
	for {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		sz, _, _ := strings.Cut(strings.TrimSpace(string(line)), ";")
		n, err := strconv.ParseInt(sz, 16, 32)
		if err != nil || n < 0 {
			return fmt.Errorf("bad chunk size %q", line)
		}
		if n == 0 {
			for { // trailers, then the final CRLF
				t, err := c.br.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(t) <= 2 {
					return nil
				}
			}
		}
		start := len(c.body)
		c.body = grow(c.body, start+int(n))
		if _, err := io.ReadFull(c.br, c.body[start:]); err != nil {
			return err
		}
		if _, err := c.br.Discard(2); err != nil {
			return err
		}
	}
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		nb := make([]byte, n, n+n/4)
		copy(nb, b)
		return nb
	}
	return b[:n]
}

func statusCode(line []byte) (int, error) {
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	code, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	return code, nil
}

// WaitReady polls GET /health until the broker answers 200 or timeout passes.
func WaitReady(ctx context.Context, base string, timeout time.Duration) error {
	c, err := NewClient(base, 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(timeout)
	for {
		code, _, err := c.Do("GET", "/health", nil)
		if err == nil && code == 200 {
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("status %d", code)
			}
			return fmt.Errorf("load: broker at %s not ready after %s: %w", base, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
