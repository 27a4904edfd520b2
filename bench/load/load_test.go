package load

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestClientReadsEveryResponseFraming(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 20000) // written in pieces: chunked
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/len":
			w.Header().Set("Content-Length", "5")
			_, _ = w.Write([]byte("hello"))
		case "/chunked":
			for i := 0; i < len(big); i += 1000 {
				_, _ = w.Write([]byte(big[i : i+1000]))
				w.(http.Flusher).Flush()
			}
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/echo":
			b := make([]byte, r.ContentLength)
			_, _ = r.Body.Read(b)
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(b)
		}
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tests := []struct {
		name, method, path, body string
		code                     int
		want                     string
	}{
		{"content length", "GET", "/len", "", 200, "hello"},
		{"chunked", "GET", "/chunked", "", 200, big},
		{"no content", "GET", "/empty", "", 204, ""},
		{"request body", "POST", "/echo", `{"a":1}`, 201, `{"a":1}`},
		{"same connection again", "GET", "/len", "", 200, "hello"},
	}
	for _, tt := range tests { // sequential: one keep-alive connection
		var body []byte
		if tt.body != "" {
			body = []byte(tt.body)
		}
		code, got, err := c.Do(tt.method, tt.path, body)
		if err != nil || code != tt.code || string(got) != tt.want {
			t.Fatalf("%s: code %d err %v body %.40q", tt.name, code, err, got)
		}
	}
}

func TestClientAbortUnblocksALongPoll(t *testing.T) {
	t.Parallel()
	release, arrived := make(chan struct{}), make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	}))
	defer srv.Close()
	defer close(release)
	c, _ := NewClient(srv.URL, time.Minute)
	go func() {
		<-arrived // the request is parked on the server
		c.Abort()
	}()
	if _, _, err := c.Do("GET", "/", nil); err != ErrAborted {
		t.Fatalf("err %v, want ErrAborted", err)
	}
	if _, _, err := c.Do("GET", "/", nil); err != ErrAborted {
		t.Fatalf("after Abort: err %v, want ErrAborted", err)
	}
}

func TestHistQuantiles(t *testing.T) {
	t.Parallel()
	var h Hist
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	for _, tt := range []struct{ q, want float64 }{{0.5, 500}, {0.99, 990}, {1, 1000}} {
		if got := h.Quantile(tt.q); math.Abs(got-tt.want)/tt.want > 0.04 {
			t.Errorf("q%.2f = %.1f ms, want %.0f ± 4%%", tt.q, got, tt.want)
		}
	}
	var empty Hist
	if empty.Quantile(0.5) != 0 {
		t.Error("empty histogram has a median")
	}
}

func TestPaceOffersTheRate(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	n := 0
	for range Pace(ctx, 1000, 0) {
		n++
	}
	// 1000/s for 0.5 s: the pacer schedules from the start time, so only the tick
	// granularity (1 ms) and the deadline's precision are lost.
	if n < 450 || n > 510 {
		t.Fatalf("%d events in 0.5 s at 1000/s", n)
	}
}

func TestPopParamsPath(t *testing.T) {
	t.Parallel()
	got := PopParams{Queue: "a b", Partition: "p/1", Group: "g", Batch: 10, Partitions: 3, Wait: true, TimeoutMS: 500,
		SubscriptionMode: "all"}.Path()
	want := "/api/v1/pop/queue/a%20b/partition/p%2F1?batch=10&consumerGroup=g&partitions=3&subscriptionMode=all&timeout=500&wait=true"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
