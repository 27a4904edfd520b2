package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/core/auth"
	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/core/encryption"
	"github.com/queen-go/queen/core/loglimit"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/core/shard"
	"github.com/queen-go/queen/core/streams"
	"github.com/queen-go/queen/ports"
)

// badRequest is a client error found while parsing a request.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func badRequestf(format string, args ...any) error {
	return &badRequest{msg: fmt.Sprintf(format, args...)}
}

// tooLarge is a body above the configured limit.
type tooLarge struct{ limit int64 }

func (e *tooLarge) Error() string {
	return fmt.Sprintf("request body exceeds the %d-byte limit (QUEEN_MAX_BODY_BYTES)", e.limit)
}

// errBodyTimedOut is a request whose body had not arrived when the server's ReadTimeout
// (QUEEN_READ_TIMEOUT_MS) ran out (docs/reliability.md bad input #28).
var errBodyTimedOut = errors.New("request body not received within the read timeout (QUEEN_READ_TIMEOUT_MS)")

// tooManyItems is a push of more items than the configured limit (docs/reliability.md
// bad input #8).
type tooManyItems struct{ n, limit int }

func (e *tooManyItems) Error() string {
	return fmt.Sprintf("a push of %d items exceeds the %d-item limit (QUEEN_MAX_PUSH_ITEMS)", e.n, e.limit)
}

// statusOf is the one table from errors to HTTP status codes.
func statusOf(err error) int {
	var (
		br *badRequest
		tl *tooLarge
		tm *tooManyItems
		ie *push.InputError
		qe *queues.InputError
		ce *consume.InputError
		ae *admin.InputError
		se *streams.InputError
		mm *streams.Mismatch
		ue *shard.UnreachableError
	)
	switch {
	case auth.IsUnauthorized(err):
		return http.StatusUnauthorized
	case errors.Is(err, auth.ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, auth.ErrKeysUnavailable):
		return http.StatusServiceUnavailable // the key set cannot be fetched: retry later
	case errors.Is(err, auth.ErrNoSecret):
		return http.StatusInternalServerError // an HS token and no JWT_SECRET (docs/api.md §3)
	case errors.As(err, &br), errors.As(err, &ie), errors.As(err, &qe), errors.As(err, &ce), errors.As(err, &ae),
		errors.As(err, &se):
		return http.StatusBadRequest
	case errors.As(err, &mm):
		return http.StatusConflict // a query's config_hash changed without reset
	case errors.Is(err, shard.ErrPlacedElsewhere):
		return http.StatusConflict // moving a queue is its own operation (docs/design.md)
	case errors.Is(err, admin.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, encryption.ErrFlagUnknown):
		return http.StatusServiceUnavailable // the queue's flag could not be read: retry later
	case errors.Is(err, encryption.ErrNoKey), errors.Is(err, encryption.ErrSeal):
		return http.StatusInternalServerError // an encrypted queue this broker cannot seal for: its configuration
	case errors.As(err, &tl), errors.As(err, &tm):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errBodyTimedOut):
		return http.StatusRequestTimeout
	case errors.Is(err, ports.ErrUnavailable), errors.Is(err, ports.ErrTimeout), errors.Is(err, ports.ErrConflict),
		errors.As(err, &ue):
		return http.StatusServiceUnavailable // a shard did not answer: never a partial answer
	default:
		return http.StatusInternalServerError
	}
}

// writeError answers {"error": ...} with the status of err. Server-side errors are
// logged in full and answered without internals.
func writeError(w http.ResponseWriter, log *slog.Logger, err error) {
	code := statusOf(err)
	body := map[string]string{"error": err.Error()}
	var (
		ie *push.InputError
		qe *queues.InputError
		ue *shard.UnreachableError
	)
	switch {
	case errors.As(err, &ie):
		body["error"] = "bad body: " + ie.Error()
	case errors.As(err, &qe) && qe.Invalid:
		body["invalid"] = qe.Option // docs/api.md §5.6: rejected sink options are named
	case errors.As(err, &ue):
		// Which database is away is what an operator needs; its error stays in the log.
		log.Log(context.Background(), failureLevel(nil, err), "request failed", loglimit.Cause("request failed: a shard"), "status", code, "err", err)
		body["error"] = fmt.Sprintf("%s: shard %d did not answer", http.StatusText(code), ue.Shard)
	case code >= 500:
		log.Log(context.Background(), failureLevel(nil, err), "request failed", loglimit.Cause("request failed "+strconv.Itoa(code)), "status", code, "err", err)
		body["error"] = http.StatusText(code)
	case code == http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", "Bearer") // RFC 6750 §3
	case code == http.StatusRequestEntityTooLarge, code == http.StatusRequestTimeout:
		// What the client has not sent is not waited for: without this, net/http reads
		// up to 256 KiB more of an unfinished (chunked) body before it sends the answer,
		// and a client that stops sending never gets it (docs/reliability.md bad input #7, #28). It is
		// what http.MaxBytesReader does when given the ResponseWriter.
		w.Header().Set("Connection", "close")
	}
	writeJSON(w, code, body)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(encodingFailed)
	}
	writeRaw(w, code, b) // with its length: an answer over 2 KB would otherwise go out chunked
}

// encodingFailed is the answer when an answer cannot be encoded.
const encodingFailed = `{"error":"response encoding failed"}`
