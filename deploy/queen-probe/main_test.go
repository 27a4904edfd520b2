package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ready":
			w.WriteHeader(http.StatusOK)
		case "/slow":
			<-r.Context().Done()
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"status":"not ready","reason":"shutting down"}`))
		}
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close() // nothing listens there any more

	cases := []struct {
		name       string
		args       []string
		env        map[string]string
		want       int
		wantStderr string
	}{
		{name: "ready on PORT", env: map[string]string{"PORT": port}, want: 0},
		{name: "explicit URL answering 200", args: []string{srv.URL + "/ready"}, want: 0},
		{name: "503 fails and says why", args: []string{srv.URL + "/down"}, want: 1, wantStderr: "shutting down"},
		{name: "nothing listening", args: []string{closedURL + "/ready"}, want: 1, wantStderr: "GET"},
		{name: "timeout", args: []string{srv.URL + "/slow"}, env: map[string]string{"QUEEN_PROBE_TIMEOUT_MS": "50"}, want: 1, wantStderr: "deadline"},
		{name: "bad PORT", env: map[string]string{"PORT": "http"}, want: 2, wantStderr: "PORT"},
		{name: "bad timeout", args: []string{srv.URL + "/ready"}, env: map[string]string{"QUEEN_PROBE_TIMEOUT_MS": "soon"}, want: 2, wantStderr: "QUEEN_PROBE_TIMEOUT_MS"},
		{name: "two URLs", args: []string{srv.URL, srv.URL}, want: 2, wantStderr: "usage"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stderr bytes.Buffer
			got := run(tc.args, func(k string) string { return tc.env[k] }, &stderr)
			if got != tc.want {
				t.Fatalf("exit %d, want %d (stderr: %s)", got, tc.want, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr %q does not mention %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}

func TestDefaultTarget(t *testing.T) {
	t.Parallel()
	got, _, err := target(nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if want := "http://127.0.0.1:6632/ready"; got != want {
		t.Errorf("default target %q, want %q", got, want)
	}
}
