package httpapi

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/mux"
)

// Observed is one served request as the access log and the request metrics see it.
type Observed struct {
	Method   string
	Route    string // the matched route's pattern, e.g. "/api/v1/ack"; "" when none matched (404)
	Status   int
	Duration time.Duration // from the handler's start to its return
	Bytes    int64         // response body bytes written
	Remote   string        // the connection's remote address (no forwarding headers)
}

// Observer hears of every answered request (the request metrics: metrics.Requests
// satisfies it). The fields are passed flat so an observer needs no import of this
// package.
type Observer interface {
	Observe(method, route string, status int, d time.Duration, bytes int64)
}

// recorder is the ResponseWriter the observed handlers write through: it keeps the
// status, the body size and the route the router matched. Pooled: one per request on
// the push path would be an allocation per message.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	route  string
}

var recorders = sync.Pool{New: func() any { return new(recorder) }}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// markRoute is the router's middleware that tells the recorder which route matched.
// It runs only for matched routes; a sub-router's own middleware overwrites the prefix
// route's pattern with the full one.
func markRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rec, ok := w.(*recorder); ok {
			if route := mux.CurrentRoute(r); route != nil {
				if tpl, err := route.GetPathTemplate(); err == nil {
					rec.route = tpl
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// observe wraps h so that every request is reported to the observers and, with
// accessLog, logged at info level: method, route pattern, status, duration, bytes and
// remote address; never the Authorization header, the query string or the body (names
// in paths can be sensitive: the pattern is logged, not the path). Without observers
// and access log it is h.
func observe(h http.Handler, router *mux.Router, log *slog.Logger, accessLog bool, observers []Observer) http.Handler {
	if !accessLog && len(observers) == 0 {
		return h
	}
	router.Use(markRoute) // the sub-routers (pop, groups) mark theirs themselves
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := recorders.Get().(*recorder)
		*rec = recorder{ResponseWriter: w}
		start := time.Now()
		h.ServeHTTP(rec, r)
		o := Observed{Method: r.Method, Route: rec.route, Status: rec.status, Duration: time.Since(start),
			Bytes: rec.bytes, Remote: r.RemoteAddr}
		*rec = recorder{}
		recorders.Put(rec)
		if o.Status == 0 {
			o.Status = http.StatusOK // nothing written: net/http answers 200
		}
		if o.Route == "" && o.Status != http.StatusNotFound {
			o.Route = matchedPattern(router, r) // answered before routing (authentication)
		}
		for _, ob := range observers {
			ob.Observe(o.Method, o.Route, o.Status, o.Duration, o.Bytes)
		}
		if accessLog {
			log.LogAttrs(r.Context(), slog.LevelInfo, "http request",
				slog.String("method", o.Method), slog.String("route", o.Route), slog.Int("status", o.Status),
				slog.Float64("duration_ms", float64(o.Duration.Microseconds())/1000), slog.Int64("bytes", o.Bytes),
				slog.String("remote", o.Remote))
		}
	})
}

// matchedPattern is the pattern of the route router would take r with, following
// mounted sub-routers; "" when none.
func matchedPattern(router *mux.Router, r *http.Request) string {
	var m mux.RouteMatch
	if !router.Match(r, &m) || m.MatchErr != nil || m.Route == nil {
		return ""
	}
	if sub, ok := m.Route.GetHandler().(*mux.Router); ok { // m.Handler is wrapped in middleware
		if p := matchedPattern(sub, r); p != "" {
			return p
		}
	}
	tpl, err := m.Route.GetPathTemplate()
	if err != nil {
		return ""
	}
	return tpl
}
