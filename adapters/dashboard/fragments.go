package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/core/auth"
	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/ports"
)

// fragment renders one page's data: the template to execute and its data, or an
// error (an *inputError or an admin or queues input error is a 400, admin.ErrNotFound
// a 404, anything else a 500).
type fragment func(ctx context.Context, rq *request) (tpl string, data any, err error)

// permissions are the actions the caller's role may take: a fragment renders only
// those (the API checks them again when the browser calls it).
type permissions struct {
	Write bool // READ_WRITE: seeks, replays, retries, dead-letter deletions
	Admin bool // ADMIN: queue and group deletions, maintenance switches
}

// permissionsOf reads the request's principal (core/auth, put there by the HTTP API's
// authentication); without one, authentication is off and every action is allowed.
func permissionsOf(r *http.Request) permissions {
	p, ok := auth.FromContext(r.Context())
	if !ok {
		return permissions{Write: true, Admin: true}
	}
	return permissions{Write: p.May(auth.ReadWrite), Admin: p.May(auth.Admin)}
}

// inputError is a query parameter the dashboard refuses.
type inputError struct{ param, msg string }

func (e *inputError) Error() string { return e.msg }

// request is a fragment request's parameters, read with checks: the first bad one is
// kept in err and answered 400.
type request struct {
	q    url.Values
	may  permissions
	size int // rows of a table page
	err  error
}

// maxParamBytes bounds a text parameter: names are at most 255 bytes; this leaves room
// for transaction ids and trace names without accepting a megabyte.
const maxParamBytes = 1024

func (rq *request) fail(param, format string, args ...any) {
	if rq.err == nil {
		rq.err = &inputError{param: param, msg: fmt.Sprintf(format, args...)}
	}
}

// str is text parameter name ("" when absent).
func (rq *request) str(name string) string {
	v := rq.q.Get(name)
	switch {
	case len(v) > maxParamBytes:
		rq.fail(name, "%s is longer than %d bytes", name, maxParamBytes)
		return ""
	case !utf8.ValidString(v):
		rq.fail(name, "%s is not valid UTF-8", name)
		return ""
	case strings.IndexByte(v, 0) >= 0:
		// PostgreSQL holds no NUL in text: refused here, not as a database error.
		rq.fail(name, "%s contains a NUL byte", name)
		return ""
	}
	return v
}

// offset is the offset parameter: 0 when absent, at most maxOffset.
func (rq *request) offset(maxOffset int) int {
	v := rq.q.Get("offset")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > maxOffset {
		rq.fail("offset", "offset must be a whole number between 0 and %d, got %q", maxOffset, v)
		return 0
	}
	return n
}

// oneOf is parameter name, def when absent, refused unless one of allowed.
func (rq *request) oneOf(name, def string, allowed ...string) string {
	v := rq.q.Get(name)
	if v == "" {
		return def
	}
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	rq.fail(name, "%s must be one of %v, got %q", name, allowed, v)
	return def
}

// fragment answers /ui/fragments/{page}: never cached, since it carries data and
// depends on the caller's token.
func (h *Handler) fragment(w http.ResponseWriter, r *http.Request, page string) {
	f, ok := h.fragments[page]
	if !ok {
		notFound(w)
		return
	}
	rq := &request{q: r.URL.Query(), may: permissionsOf(r), size: h.opts.PageSize}
	name, data, err := f(r.Context(), rq)
	if err == nil {
		err = rq.err
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	w.Header().Set("Vary", "Authorization")
	h.render(w, http.StatusOK, name, data, "no-store")
}

// fail answers err as the API does: {"error": ...} with its status; server-side
// failures are logged and answered without internals.
func (h *Handler) fail(w http.ResponseWriter, err error) {
	var (
		ie *inputError
		ae *admin.InputError
		qe *queues.InputError
	)
	w.Header().Set("Cache-Control", "no-store")
	switch {
	case errors.As(err, &ie), errors.As(err, &ae), errors.As(err, &qe):
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
	case errors.Is(err, admin.ErrNotFound):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
	case errors.Is(err, ports.ErrUnavailable), errors.Is(err, ports.ErrTimeout), errors.Is(err, ports.ErrConflict):
		h.opts.Logger.Warn("dashboard: fragment failed", "err", err)
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": http.StatusText(http.StatusServiceUnavailable)})
	default:
		h.opts.Logger.Error("dashboard: fragment failed", "err", err)
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": http.StatusText(http.StatusInternalServerError)})
	}
}

// unavailable is the data of a page whose service this broker does not run.
type unavailable struct{ What string }

// pager is the paging of one table: where it is and the links to its neighbours.
type pager struct {
	Offset, Shown int
	Total         int64 // -1: not known
	Prev, Next    string
}

// First and Last are the 1-based rows shown.
func (p pager) First() int { return min(p.Offset+1, p.Offset+p.Shown) }
func (p pager) Last() int  { return p.Offset + p.Shown }

// newPager pages a table shown at path with query q: shown rows from offset, more
// after them when more is set; total when known (-1 otherwise).
func newPager(path string, q url.Values, offset, size, shown int, more bool, total int64) pager {
	p := pager{Offset: offset, Shown: shown, Total: total}
	if offset > 0 {
		p.Prev = link(path, q, "offset", strconv.Itoa(max(offset-size, 0)))
	}
	if more {
		p.Next = link(path, q, "offset", strconv.Itoa(offset+shown))
	}
	return p
}

// link is path with q, its pairs set as given (an empty value removes the parameter).
func link(path string, q url.Values, set ...string) string {
	v := url.Values{}
	for k, vs := range q {
		v[k] = append([]string(nil), vs...)
	}
	for i := 0; i+1 < len(set); i += 2 {
		if set[i+1] == "" {
			v.Del(set[i])
		} else {
			v.Set(set[i], set[i+1])
		}
	}
	for _, k := range []string{"offset", "poffset"} {
		if v.Get(k) == "0" {
			v.Del(k)
		}
	}
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}

// queuePath is the page of queue name.
func queuePath(name string) string { return "/ui/queues/" + url.PathEscape(name) }

func itoa(n int) string { return strconv.Itoa(n) }
