package httpapi

import (
	"strings"
	"testing"
)

// FuzzParsePush holds the push decoder to docs/reliability.md bad input #30: whatever
// the body, it never panics, and every refusal is a client error (a 4xx) that says
// something.
func FuzzParsePush(f *testing.F) {
	for _, s := range pushSamples {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		``, `{items:`, `null`, `"x"`, `{"items":[{"queue":"q","payload":"a` + "\xff" + `b"}]}`,
		`{"items":[{"queue":"q","payload":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}]}`,
		`{"items":[{"queue":"q\u0000","payload":1}]}`, `{"items":[{"queue":"..","partition":"a/b","payload":{}}]}`,
		`{"items":[{"queue":"` + strings.Repeat("é", 128) + `","payload":1}]}`, `{"items":[{"queue":5,"payload":1}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		items, err := parsePush(body)
		if err == nil {
			if items == nil {
				t.Fatalf("%q: no error and no items", body)
			}
			return
		}
		if code := statusOf(err); code < 400 || code > 499 || err.Error() == "" {
			t.Fatalf("%q: refused with %d %q, want a 4xx that says why", body, code, err)
		}
	})
}
