package browser

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHarnessCatchesPageErrors: the tab records a console.error call and an uncaught
// exception of its page (which would fail the test), and nothing on a clean page; visit
// waits for the data swap the dashboard's pages signal.
func TestHarnessCatchesPageErrors(t *testing.T) {
	pages := map[string]string{
		"/clean": `<main id="page" data-page="clean" data-loaded="false"></main>
<script>setTimeout(() => { document.getElementById("page").dataset.loaded = "true"; }, 50);</script>`,
		"/broken": `<main id="page" data-page="broken" data-loaded="false"></main>
<script>console.error("boom", 42);
setTimeout(() => { document.getElementById("page").dataset.loaded = "true"; throw new Error("kaboom"); }, 50);</script>`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<!doctype html><title>t</title>"+pages[r.URL.Path])
	}))
	t.Cleanup(srv.Close)
	tb := openTab(t)

	tb.visit(srv.URL + "/clean")
	if p := tb.takeProblems(); len(p) != 0 {
		t.Errorf("clean page: recorded %q", p)
	}

	tb.visit(srv.URL + "/broken")
	var got []string
	eventually(t, 5*time.Second, "the console error and the exception", func() bool {
		got = append(got, tb.takeProblems()...)
		return len(got) >= 2
	})
	for _, want := range []string{"console.error: boom 42", "Error: kaboom"} {
		if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("recorded %q, want one containing %q", got, want)
		}
	}
}
