package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
)

// The consume path's answers (a pop of 100 messages is about 40 KB, an ack of 100 items
// about 12 KB) are written by hand instead of by json.Marshal, which costs reflection,
// a validating compaction pass over every payload and a fresh buffer per answer (issue
// 18). They decode to exactly what json.Marshal's answer decodes to (a differential
// test and a fuzz test hold them to it), and are the same bytes but for the HTML
// escapes json.Marshal adds (<, > and & in strings stay as they are, as in the push
// answer: appendString).

// compactSafe marks the bytes that cannot be insignificant whitespace: a valid JSON value
// made only of them is already compact.
var compactSafe = func() (t [256]bool) {
	for c := range t {
		t[c] = true
	}
	for _, c := range []byte(" \t\r\n") {
		t[c] = false
	}
	return t
}()

// appendRaw appends a raw JSON value compacted, as json.Marshal encodes a
// json.RawMessage (without its HTML escapes); nil is null. It fails, like json.Marshal,
// on anything but one JSON value (an empty one included).
func appendRaw(dst []byte, raw json.RawMessage) ([]byte, error) {
	if raw == nil {
		return append(dst, "null"...), nil
	}
	for _, c := range raw {
		if !compactSafe[c] {
			var b bytes.Buffer
			if err := json.Compact(&b, raw); err != nil {
				return dst, fmt.Errorf("httpapi: stored value: %w", err)
			}
			return append(dst, b.Bytes()...), nil
		}
	}
	if !json.Valid(raw) {
		return dst, errInvalidRaw
	}
	return append(dst, raw...), nil
}

var errInvalidRaw = errors.New("httpapi: stored value is not valid JSON")

// bodyPool recycles answer buffers: a pop answer's 40 KB would otherwise be a new
// allocation (and garbage to collect) per request.
var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// maxPooledBody bounds the buffers kept for reuse (bytes): a rare huge answer (a pop of
// 10,000 messages) must not stay pinned in the pool.
const maxPooledBody = 1 << 20

// writeEncoded encodes an answer with enc into a pooled buffer and writes it; when enc
// fails the answer is writeJSON's for a value json.Marshal refuses.
func writeEncoded(w http.ResponseWriter, code int, enc func(dst []byte) ([]byte, error)) {
	p := bodyPool.Get().(*[]byte)
	b, err := enc((*p)[:0])
	if err != nil {
		writeRaw(w, http.StatusInternalServerError, []byte(encodingFailed))
	} else {
		writeRaw(w, code, b) // net/http has copied or sent b when Write returns
	}
	if cap(b) <= maxPooledBody {
		*p = b[:0]
		bodyPool.Put(p)
	}
}
