package rtt

import (
	"net"
	"strings"
	"testing"
)

func TestMeasureAgainstServe(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- Serve(ln, 4096) }()
	r, err := Measure(ln.Addr().String(), 200, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if r.RoundTrips != 200 || r.Wall <= 0 || r.CPU < 0 || !strings.Contains(r.String(), "200 round trips") {
		t.Fatalf("result %+v (%s)", r, r)
	}
	ln.Close()
	if err := <-served; err != nil {
		t.Fatalf("Serve after close: %v", err)
	}
}

func TestBadSizes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func() error
	}{
		{"serve zero bytes", func() error { return Serve(nil, 0) }},
		{"no round trips", func() error { _, err := Measure("127.0.0.1:1", 0, 10); return err }},
		{"empty requests", func() error { _, err := Measure("127.0.0.1:1", 10, 0); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.run(); err == nil || !strings.Contains(err.Error(), "want at least") {
				t.Fatalf("error %v", err)
			}
		})
	}
}
