package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/queen-go/queen/core/push"
)

type pushBody struct {
	Items *[]pushItem `json:"items"`
}

// pushItem keeps raw values: "absent" (empty) and "null" are told apart from "", and
// strings are checked for valid UTF-8 before encoding/json would replace bad bytes.
type pushItem struct {
	Queue         json.RawMessage `json:"queue"`
	Partition     json.RawMessage `json:"partition"`
	Payload       json.RawMessage `json:"payload"` // "null" when null, empty when absent
	TransactionID json.RawMessage `json:"transactionId"`
}

// stringField decodes an optional string field; ok is false when absent or null.
func stringField(raw json.RawMessage, item int, field string) (s string, ok bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	if raw[0] != '"' {
		// Queen's text ("Queue must be a string"), then where: docs/reliability.md bad input #6.
		return "", false, badRequestf("bad body: %s must be a string (item %d, field `%s`)", queenField(field), item, field)
	}
	if !utf8.Valid(raw) {
		return "", false, badRequestf("bad body: item %d: %s is not valid UTF-8", item, field)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, badRequestf("bad body: item %d: %s: %v", item, field, err)
	}
	return s, true, nil
}

// queenField is a field name as Queen's error texts spell it: capitalised.
func queenField(field string) string {
	return strings.ToUpper(field[:1]) + field[1:]
}

// readBody reads at most limit bytes of the body.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, &tooLarge{limit: limit}
	}
	var b []byte
	var err error
	if n := r.ContentLength; n >= 0 {
		// Known length: one exact allocation instead of io.ReadAll's doublings; a body
		// longer than announced is an error from the reader anyway.
		b = make([]byte, n)
		_, err = io.ReadFull(r.Body, b)
	} else {
		b, err = io.ReadAll(http.MaxBytesReader(nil, r.Body, limit))
	}
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) { // only here: &mbe escapes
			return nil, &tooLarge{limit: limit}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, errBodyTimedOut
		}
		return nil, badRequestf("bad body: %v", err)
	}
	return b, nil
}

// parseItem checks one item's fields and fills out.
func parseItem(it pushItem, i int, out *push.Item) error {
	queue, ok, err := stringField(it.Queue, i, "queue")
	if err != nil {
		return err
	}
	if !ok {
		return badRequestf("bad body: item %d: missing field `queue`", i)
	}
	if len(it.Payload) == 0 {
		return badRequestf("bad body: item %d: missing field `payload`", i)
	}
	*out = push.Item{Queue: queue, Payload: it.Payload}
	part, ok, err := stringField(it.Partition, i, "partition")
	if err != nil {
		return err
	}
	if ok {
		if part == "" {
			return badRequestf("bad body: item %d: partition must not be empty (omit it for %q)", i, push.DefaultPartition)
		}
		out.Partition = part
	}
	out.TransactionID, _, err = stringField(it.TransactionID, i, "transactionId")
	return err
}

// parsePush turns a push body into items, or a client error that says what is wrong.
// The common shape takes the fast path (fastPush); everything else, and every error,
// goes through the reflective parser.
func parsePush(body []byte) ([]push.Item, error) {
	items, ok := fastPush(body)
	if !ok {
		var err error
		if items, err = parseItems(body); err != nil {
			return nil, err
		}
	}
	if err := push.Validate(items); err != nil {
		return nil, err
	}
	return items, nil
}

// parseItems is the reflective parser: slower, but it accepts every valid shape and
// words every error.
func parseItems(body []byte) ([]push.Item, error) {
	var pb pushBody
	if err := json.Unmarshal(body, &pb); err != nil {
		return nil, pushBodyError(err)
	}
	if pb.Items == nil {
		return nil, badRequestf("bad body: %s (`items` is missing or null)", itemsRequired)
	}
	items := make([]push.Item, len(*pb.Items))
	for i, it := range *pb.Items {
		if err := parseItem(it, i, &items[i]); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// itemsRequired is Queen's text for a push body without an items array
// (docs/reliability.md bad input #3); "bad body: " before it is the Rust broker's
// prefix of data-route parse failures (docs/api.md §1).
const itemsRequired = "items array is required"

// pushBodyError words a push body encoding/json refused: a syntax error is invalid JSON
// (docs/reliability.md bad input #1); a body that is JSON but not an object, or whose
// items are not an array, lacks the items array (#2, #3); an item that is not an object
// is named as such.
func pushBodyError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Type == reflect.TypeFor[pushItem]() {
			return badRequestf("bad body: items must be objects (%s: got %s)", te.Field, te.Value)
		}
		if te.Field == "" {
			return badRequestf("bad body: %s (the body must be a JSON object, got %s)", itemsRequired, te.Value)
		}
		return badRequestf("bad body: %s (%s: got %s)", itemsRequired, te.Field, te.Value)
	}
	return badRequestf("bad body: invalid JSON: %v", err)
}

func (a *api) handlePush(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, err := readBody(r, a.opts.MaxBodyBytes)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	items, err := parsePush(body)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	if len(items) == 0 {
		writeRaw(w, http.StatusCreated, []byte("[]"))
		return
	}
	if len(items) > a.opts.MaxPushItems {
		writeError(w, a.opts.Logger, &tooManyItems{n: len(items), limit: a.opts.MaxPushItems})
		return
	}
	st := &a.opts.Stages.Push
	submitted := time.Now()
	st.Read.Observe(submitted.Sub(start))
	results := a.Push.Push(r.Context(), a.opts.Tenant, producerSub(r), items)
	defer st.Answer.Since(time.Now())
	code := http.StatusCreated
	if a.Maintenance != nil && a.Maintenance.Push() && slices.ContainsFunc(results, func(r push.Result) bool {
		return r.Status == push.StatusFailed && r.Err == nil
	}) {
		// Under push maintenance only the spool takes pushes: an item it could not take
		// is accepted nowhere, and the reference answers 500 (docs/api.md §5.1) so clients
		// retry. On the database-failure path failed items keep the 201, and so do items
		// refused for encryption (Err set): a retry would be refused again.
		code = http.StatusInternalServerError
	}
	bp := pushAnswers.Get().(*[]byte)
	b := renderPush((*bp)[:0], results)
	writeRaw(w, code, b) // net/http has copied or sent b when Write returns
	if cap(b) <= maxPooledPushAnswer {
		*bp = b[:0]
		pushAnswers.Put(bp)
	}
}

// pushAnswers recycles push answer buffers: a fresh one per request was garbage on the
// broker's most frequent route.
var pushAnswers = sync.Pool{New: func() any { b := make([]byte, 0, 1<<10); return &b }}

// maxPooledPushAnswer bounds the buffers kept: the answer of a rare huge push must not
// stay pinned in the pool.
const maxPooledPushAnswer = 64 << 10

// renderPush appends the push response to b by hand: it is on the hot path and its shape
// is fixed (docs/api.md §5.1).
func renderPush(b []byte, results []push.Result) []byte {
	b = slices.Grow(b, 160*len(results))
	b = append(b, '[')
	for i, r := range results {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(r.Index), 10)
		b = append(b, `,"message_id":"`...)
		b = appendUUID(b, r.MessageID)
		b = append(b, `","transaction_id":`...)
		b = appendString(b, r.TransactionID)
		b = append(b, `,"queueName":`...)
		b = appendString(b, r.Queue)
		b = append(b, `,"status":"`...)
		b = append(b, r.Status...)
		b = append(b, '"')
		if r.HasOffset {
			b = append(b, `,"offset":`...)
			b = strconv.AppendInt(b, r.Offset, 10)
		}
		if r.Err != nil {
			// Only an item refused for encryption has one (our addition to
			// docs/api.md §5.1, which has no per-item error text): failed says it was not
			// stored, error says why and whether a retry can help.
			b = append(b, `,"error":`...)
			b = appendString(b, r.Err.Error())
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendUUID appends id in its canonical text form (uuid.UUID.String's) without the
// string String allocates.
func appendUUID(b []byte, id [16]byte) []byte {
	const hexDigits = "0123456789abcdef"
	for i, c := range id {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hexDigits[c>>4], hexDigits[c&0x0f])
	}
	return b
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	simple := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			simple = false
			break
		}
	}
	if simple {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	enc, _ := json.Marshal(s) // a string always encodes
	return append(b, enc...)
}

// jsonContentType is the Content-Type header of every answer, shared: net/http never
// changes a header's values, and nothing here appends to them.
var jsonContentType = []string{"application/json"}

func writeRaw(w http.ResponseWriter, code int, b []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType // canonical key: what Set would store, without its allocation
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	if code == http.StatusServiceUnavailable && h.Get("Retry-After") == "" {
		// Every 503 is a "retry later" (the database away, a key set unreachable, a
		// spooled partition): say when, in seconds (RFC 9110 §10.2.3). One second is
		// about how long the pool takes to find a database that came back.
		h["Retry-After"] = retryAfter
	}
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// retryAfter is the Retry-After of a 503, seconds.
var retryAfter = []string{"1"}
