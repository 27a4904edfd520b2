package browser

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestDeadLetterReplayedFromPage: a dead letter replayed with its row's button on the DLQ
// page goes back into its partition, and a consumer pops it.
func TestDeadLetterReplayedFromPage(t *testing.T) {
	b := startBroker(t, nil)
	const q = "replayed"
	b.configure(t, q, map[string]any{"retryLimit": 0, "deadLetterQueue": true})
	b.push(t, q, "p1", map[string]any{"order": 7})
	p := b.pop(t, q, "", 1)
	if p == nil {
		t.Fatal("nothing to pop")
	}
	if a := b.ackAll(t, p, "failed"); !a[0].DLQ {
		t.Fatalf("the failed ack (retryLimit 0) did not dead-letter: %+v", a)
	}
	if p := b.pop(t, q, "", 1); p != nil {
		t.Fatalf("a pop after the dead-lettering got %+v, want nothing", p)
	}

	tb := openTab(t)
	tb.visit(b.URL + "/ui/dlq")
	row := fmt.Sprintf(`tr[data-dlq-id][data-queue=%q]`, q)
	tb.act(row + ` [data-action="replay"]`)

	var got *popAnswer
	eventually(t, 10*time.Second, "the replayed message to be popped", func() bool {
		got = b.pop(t, q, "", 1)
		return got != nil
	})
	if m := payloadOf(t, got.Messages[0].Data); m["order"] != float64(7) {
		t.Errorf("popped %s, want the dead letter's payload {\"order\":7}", got.Messages[0].Data)
	}
}

// TestSeekFromPage: a seek of a consumer group from the groups page changes what the
// group pops next: to the end skips the backlog, to an early time replays from the first
// message.
func TestSeekFromPage(t *testing.T) {
	b := startBroker(t, nil)
	cases := []struct {
		name    string
		action  string
		time    string // the seek-time input's value (datetime-local), "" for none
		lag     int    // the group's offset lag once the seek is applied
		nextPop int    // the message the group's next pop starts with (-1: nothing)
	}{
		{name: "end", action: "seek-end", lag: 0, nextPop: -1},
		{name: "early time", action: "seek-time", time: "2000-01-01T00:00", lag: 3, nextPop: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := "seek-" + c.action
			b.push(t, q, "p", map[string]any{"n": 0}, map[string]any{"n": 1}, map[string]any{"n": 2})
			p := b.pop(t, q, "g", 1)
			if p == nil {
				t.Fatal("nothing to pop")
			}
			b.ackAll(t, p, "completed")
			if lag := groupLag(t, b, "g", q); lag != 2 {
				t.Fatalf("group g on %s: offset lag %d after consuming 1 of 3, want 2", q, lag)
			}

			tb := openTab(t)
			tb.visit(b.URL + "/ui/groups")
			row := fmt.Sprintf(`tr[data-group="g"][data-queue=%q]`, q)
			if c.time != "" {
				input := row + ` input[data-role="seek-time"]`
				tb.setValue(input, c.time)
			}
			tb.act(row + fmt.Sprintf(` [data-action=%q]`, c.action))
			// Wait on the group's position, not on pops: a pop before the seek lands
			// would lease what the test is about.
			eventually(t, 10*time.Second, fmt.Sprintf("group g's offset lag on %s to be %d", q, c.lag), func() bool {
				return groupLag(t, b, "g", q) == c.lag
			})

			next := b.pop(t, q, "g", 1)
			switch {
			case c.nextPop < 0 && next != nil:
				t.Errorf("after %s the group popped %s, want nothing", c.action, next.Messages[0].Data)
			case c.nextPop >= 0 && next == nil:
				t.Errorf("after %s the group popped nothing, want message %d", c.action, c.nextPop)
			case c.nextPop >= 0 && payloadOf(t, next.Messages[0].Data)["n"] != float64(c.nextPop):
				t.Errorf("after %s the group popped %s, want message %d", c.action, next.Messages[0].Data, c.nextPop)
			}
		})
	}
}

// groupLag is the offset lag of group on queue, summed over its partitions
// (GET /api/v1/consumer-groups/{group}, docs/api.md §5.9).
func groupLag(t *testing.T, b *broker, group, queue string) int {
	t.Helper()
	raw := b.must(t, http.StatusOK, http.MethodGet, "/api/v1/consumer-groups/"+group, nil)
	var byQueue map[string]struct {
		Partitions []struct {
			OffsetLag int `json:"offsetLag"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal(raw, &byQueue); err != nil {
		t.Fatalf("consumer group %s: %v: %s", group, err, raw)
	}
	lag := 0
	for _, p := range byQueue[queue].Partitions {
		lag += p.OffsetLag
	}
	return lag
}

// TestDeleteNeedsConfirmation: the queue page's delete opens #confirm and does nothing
// when cancelled; confirmed, the queue is gone.
func TestDeleteNeedsConfirmation(t *testing.T) {
	b := startBroker(t, nil)
	const q = "doomed"
	b.push(t, q, "p", map[string]any{"n": 1})
	path := "/api/v1/resources/queues/" + q

	tb := openTab(t)
	tb.visit(b.URL + "/ui/queues/" + q)
	tb.click(`[data-action="delete-queue"]`)
	tb.waitVisible(`#confirm[open]`)
	tb.screenshot("confirm")
	tb.click("#confirm-cancel")
	tb.until("#confirm to close on cancel", func() bool { return !eval[bool](tb, `document.querySelector("#confirm").open`) })
	if code, raw := b.call(t, http.MethodGet, path, ""); code != http.StatusOK {
		t.Fatalf("after cancel: GET %s: status %d, want 200 (the queue kept): %s", path, code, raw)
	}

	tb.click(`[data-action="delete-queue"]`)
	tb.waitVisible(`#confirm[open]`)
	tb.click("#confirm-ok")
	eventually(t, 10*time.Second, "the queue to be gone", func() bool {
		code, _ := b.call(t, http.MethodGet, path, "")
		return code == http.StatusNotFound
	})
}
