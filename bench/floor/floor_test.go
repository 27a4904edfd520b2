package floor

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/bench/load"
)

// TestFloorAnswersLikeTheBroker pushes through the floor with the load tool's client: a
// 201 with one queued item per message in the push answer's shape, after a cycle.
func TestFloorAnswersLikeTheBroker(t *testing.T) {
	t.Parallel()
	p := NewPusher(20 * time.Millisecond)
	p.Start()
	defer p.Stop()
	srv := httptest.NewServer(Handler(p, slog.New(slog.DiscardHandler)))
	defer srv.Close()
	c, err := load.NewClient(srv.URL, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"items":[{"queue":"q","partition":"p1","payload":{"a":1}},{"queue":"q","transactionId":"t-1","payload":2}]}`
	t0 := time.Now()
	code, resp, err := c.Do("POST", "/api/v1/push", []byte(body))
	if err != nil || code != 201 {
		t.Fatalf("push: %d %s %v", code, resp, err)
	}
	if waited := time.Since(t0); waited > 2*time.Second {
		t.Errorf("answered after %v, want about a cycle", waited)
	}
	var rs []map[string]any
	if err := json.Unmarshal(resp, &rs); err != nil {
		t.Fatalf("answer %s: %v", resp, err)
	}
	if len(rs) != 2 {
		t.Fatalf("answer %s: want 2 items", resp)
	}
	for i, r := range rs {
		keys := make([]string, 0, len(r))
		for k := range r {
			keys = append(keys, k)
		}
		if len(r) != 6 || r["index"] != float64(i) || r["status"] != "queued" || r["queueName"] != "q" {
			t.Errorf("item %d: %v (keys %v)", i, r, keys)
		}
		if id, _ := r["message_id"].(string); len(id) != 36 {
			t.Errorf("item %d: message_id %q", i, id)
		}
	}
	if rs[0]["transaction_id"] != rs[0]["message_id"] || rs[1]["transaction_id"] != "t-1" {
		t.Errorf("transaction ids: %v, %v", rs[0], rs[1])
	}
	// A body the real handler refuses is refused the same way.
	code, resp, err = c.Do("POST", "/api/v1/push", []byte(`{"items":[{"queue":"","payload":1}]}`))
	if err != nil || code != 400 || !strings.Contains(string(resp), "queue") {
		t.Fatalf("bad push: %d %s %v", code, resp, err)
	}
	if st := p.Stats(); st.Requests != 1 || st.Messages != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestStopReleasesWaiters: a push waiting for its round is answered when the floor stops.
func TestStopReleasesWaiters(t *testing.T) {
	t.Parallel()
	p := NewPusher(time.Hour)
	p.Start()
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Push(t.Context(), "", "", nil)
	}()
	time.Sleep(10 * time.Millisecond)
	p.Stop()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting push was not released")
	}
}
