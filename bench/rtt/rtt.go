package rtt

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/queen-go/queen/bench/load"
)

// answerBytes is the size of the server's answer to each request.
const answerBytes = 64

// Serve answers every connection ln accepts, size bytes in, answerBytes out, until ln
// is closed; it returns nil then.
func Serve(ln net.Listener, size int) error {
	if size < 1 {
		return fmt.Errorf("rtt: request size %d, want at least 1 byte", size)
	}
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("rtt: accept: %w", err)
		}
		go echo(c, size)
	}
}

func echo(c net.Conn, size int) {
	defer c.Close()
	in, out := make([]byte, size), make([]byte, answerBytes)
	for {
		if _, err := io.ReadFull(c, in); err != nil {
			return // the client is done
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// Result is a measured run of round trips.
type Result struct {
	RoundTrips int
	CPU        time.Duration // this process's user and system CPU per round trip
	Wall       time.Duration // per round trip
}

func (r Result) String() string {
	return fmt.Sprintf("%d round trips: client CPU %.1f µs, wall %.1f µs per round trip",
		r.RoundTrips, float64(r.CPU)/1e3, float64(r.Wall)/1e3)
}

// Measure makes n round trips of size bytes to the server at addr, on one connection,
// and reports this process's CPU and the wall time per round trip.
func Measure(addr string, n, size int) (Result, error) {
	if n < 1 || size < 1 {
		return Result{}, fmt.Errorf("rtt: %d round trips of %d bytes, want at least 1 of at least 1", n, size)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return Result{}, fmt.Errorf("rtt: %w", err)
	}
	defer c.Close()
	req, ans := make([]byte, size), make([]byte, answerBytes)
	cpu0, err := load.ProcessCPU(os.Getpid())
	if err != nil {
		return Result{}, err
	}
	t0 := time.Now()
	for i := range n {
		if _, err := c.Write(req); err != nil {
			return Result{}, fmt.Errorf("rtt: round trip %d: %w", i, err)
		}
		if _, err := io.ReadFull(c, ans); err != nil {
			return Result{}, fmt.Errorf("rtt: round trip %d: %w", i, err)
		}
	}
	wall := time.Since(t0)
	cpu1, err := load.ProcessCPU(os.Getpid())
	if err != nil {
		return Result{}, err
	}
	return Result{RoundTrips: n, CPU: (cpu1 - cpu0) / time.Duration(n), Wall: wall / time.Duration(n)}, nil
}
