package httpapi

import (
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/queen-go/queen/core/names"
)

// Every value a request carries to the database as text is checked at this edge, with
// the same three functions wherever it comes from: checkParams checks the path variables
// and the query string of every route before its handler runs, and the handlers check
// their body fields with checkName and checkText. PostgreSQL refuses a NUL byte or
// invalid UTF-8 in text, so such a value must never get past this point: it would
// come back as a database error, a 500 (docs/reliability.md bad input #11).

// nameParams are the parameters, in paths and query strings alike, whose values are
// names (docs/design.md "Decisions", core/names): queues, partitions, consumer groups,
// namespaces, tasks and trace names. Any other parameter is free text.
var nameParams = map[string]bool{
	"queue": true, "partition": true, "consumerGroup": true, "group": true,
	"namespace": true, "ns": true, "task": true, "traceName": true,
}

// checkName refuses a name (where says where it came from: "query parameter",
// "path parameter", "" for a body field) that breaks the naming rule: 400 naming it.
// The empty string is let through: absent, for the optional ones, and the routes that
// require a value say so themselves.
func checkName(where, param, v string) error {
	if v == "" {
		return nil
	}
	if err := names.Check(v); err != nil {
		return badRequestf("%s %v", paramLabel(where, param), err)
	}
	return nil
}

// checkText refuses free text that PostgreSQL cannot hold: invalid UTF-8 or a NUL
// byte. Other control characters are text like any other.
func checkText(where, param, v string) error {
	if !utf8.ValidString(v) {
		return badRequestf("%s is not valid UTF-8", paramLabel(where, param))
	}
	if i := strings.IndexByte(v, 0); i >= 0 {
		return badRequestf("%s contains a NUL byte at byte %d", paramLabel(where, param), i)
	}
	return nil
}

// ownParams are the parameters whose routes answer any value themselves: a lease id
// that is not a UUID renews nothing, in a 200 (docs/api.md §5.5), and never reaches the
// database.
var ownParams = map[string]bool{"leaseId": true}

// checkParam is checkName for the parameters of nameParams, checkText for the others.
func checkParam(where, param, v string) error {
	if ownParams[param] {
		return nil
	}
	if nameParams[param] {
		return checkName(where, param, v)
	}
	return checkText(where, param, v)
}

func paramLabel(where, param string) string {
	if !utf8.ValidString(param) || strings.IndexFunc(param, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		param = url.QueryEscape(param) // a parameter's own name printed as sent
	}
	if where == "" {
		return param
	}
	return where + " " + param
}

// checkParams is the middleware of every router: it refuses a request whose path
// variables or query string hold a value checkParam refuses, before the route's
// handler runs. escaped says the router matches the path as sent (its variables are
// still %-escaped).
func (a *api) checkParams(escaped bool) mux.MiddlewareFunc {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := requestParams(r, escaped); err != nil {
				writeError(w, a.opts.Logger, err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// requestParams checks r's path variables and every value of its query string.
func requestParams(r *http.Request, escaped bool) error {
	for name, v := range mux.Vars(r) {
		if escaped {
			u, err := url.PathUnescape(v)
			if err != nil {
				return badRequestf("%s in the path: %v", name, err) // as groupVars says it
			}
			v = u
		}
		if err := checkParam("path parameter", name, v); err != nil {
			return err
		}
	}
	for name, vs := range r.URL.Query() {
		if err := checkText("query parameter name", name, name); err != nil {
			return err
		}
		for _, v := range vs {
			if err := checkParam("query parameter", name, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// The range of the timestamps a request may give: the years RFC 3339 can write, but for
// year 0, which PostgreSQL's calendar does not have (1 BC is followed by AD 1) and whose
// text form it refuses. PostgreSQL's own range (4713 BC to AD 294276) holds all of it.
var (
	minTime = time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, time.December, 31, 23, 59, 59, 999999999, time.UTC)
)

// checkTime refuses a timestamp of parameter param (where as for checkName) outside the
// range the database can take: 400 naming the parameter and the range. An offset is
// applied first: 0001-01-01T00:30:00+01:00 is in year 0.
func checkTime(where, param string, t time.Time) error {
	if t.Before(minTime) || t.After(maxTime) {
		return badRequestf("%s must be between %s and %s, got %s", paramLabel(where, param),
			minTime.Format(time.RFC3339), maxTime.Format(time.RFC3339), t.Format(time.RFC3339Nano))
	}
	return nil
}
