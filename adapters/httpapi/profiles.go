package httpapi

import (
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// ServeProfiles serves Go's net/http/pprof under /debug/pprof/ on a listener of its own
// at addr (QUEEN_PPROF_ADDR), apart from the API: its routes, authentication and body
// limit never see it, and it has no authentication of its own (bind it to loopback).
// bench/floor's floor serves its profiles the same way. The returned function closes it.
func ServeProfiles(addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() }, nil
}
