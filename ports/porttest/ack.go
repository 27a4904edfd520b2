package porttest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// ackStep acks message msg (m<msg>) with a status.
type ackStep struct {
	msg int
	st  ports.AckStatus
}

func testAckSignals(k kit) {
	// Each case pops m0..m4 (one segment) from its own queue, acks them in one call, and
	// checks the answers and where the next pop starts: next (start, attempt) when the
	// lease was released, or, when kept, that the cursor is at kept (a retry of the
	// message after it redelivers from there).
	const none = -1
	tests := []struct {
		name    string
		acks    []ackStep
		release bool
		next    [2]int64 // start (none: nothing left) and attempt of the next pop
		kept    int64    // the cursor when the lease is kept
	}{
		{"acking the last message completes the batch", []ackStep{{4, ports.AckCompleted}}, true, [2]int64{none, 0}, 0},
		{"acking a prefix keeps the lease", []ackStep{{0, ports.AckCompleted}, {1, ports.AckCompleted}}, false, [2]int64{}, 1},
		{"the highest completed wins, order does not matter", []ackStep{{3, ports.AckCompleted}, {1, ports.AckCompleted}}, false, [2]int64{}, 3},
		{"failed below completed ones clamps the cursor", []ackStep{{0, ports.AckCompleted}, {1, ports.AckFailed},
			{2, ports.AckCompleted}, {3, ports.AckCompleted}}, true, [2]int64{1, 2}, 0},
		{"failed at the head redelivers the batch", []ackStep{{0, ports.AckFailed}}, true, [2]int64{0, 2}, 0},
		{"retry at the head redelivers the batch", []ackStep{{2, ports.AckCompleted}, {0, ports.AckRetry}}, true, [2]int64{0, 2}, 0},
		{"a signal beats a completed ack of the same message", []ackStep{{0, ports.AckCompleted}, {0, ports.AckFailed}}, true, [2]int64{0, 2}, 0},
		{"the lowest signal wins", []ackStep{{3, ports.AckFailed}, {2, ports.AckRetry}, {1, ports.AckCompleted}}, true, [2]int64{2, 2}, 0},
		{"dlq beats failed at the same offset", []ackStep{{1, ports.AckFailed}, {1, ports.AckDLQ}}, true, [2]int64{2, 2}, 0},
		{"dlq at the head moves past it", []ackStep{{0, ports.AckDLQ}, {2, ports.AckCompleted}}, true, [2]int64{1, 2}, 0},
	}
	for i, tt := range tests {
		k.t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := k.with(t)
			queue := fmt.Sprint("acks", i)
			k.push(queue, "p", txns("m", 5)...)
			r := req(queue)
			c := k.popOne(r)
			items := make([]ports.AckItem, len(tt.acks))
			for j, a := range tt.acks {
				items[j] = of(c, r, fmt.Sprint("m", a.msg), a.st)
				items[j].Error = "boom"
			}
			res := k.ack(items...)
			var dead []string
			for j, a := range tt.acks {
				want := ok(queue, "p", tt.release)
				// dlq marks the signals on the dead-lettered message.
				want.DLQ = a.st != ports.AckCompleted && slices.Contains(tt.acks, ackStep{a.msg, ports.AckDLQ})
				wantResults(t, res[j:j+1], want)
				if res[j].DLQ && (res[j].Queue != queue || res[j].Partition != "p") {
					t.Fatalf("dead-lettered item %d names %q/%q, want %s/p", j, res[j].Queue, res[j].Partition, queue)
				}
				if a.st == ports.AckDLQ {
					dead = append(dead, fmt.Sprint("m", a.msg))
				}
			}
			var got []string
			for _, d := range k.f.DeadLetters(t, c.PartitionID) {
				got = append(got, d.TransactionID)
			}
			if fmt.Sprint(got) != fmt.Sprint(dead) {
				t.Fatalf("dead letters %v, want %v", got, dead)
			}
			if !tt.release {
				// The lease holds; the cursor is at kept: that message is done, the next not.
				k.popNone(req(queue))
				wantResults(t, k.ack(of(c, r, fmt.Sprint("m", tt.kept), ports.AckRetry)), failed(queue, "p", errCommitted))
				wantResults(t, k.ack(of(c, r, fmt.Sprint("m", tt.kept+1), ports.AckRetry)), ok(queue, "p", true))
				tt.next = [2]int64{tt.kept + 1, 2} // delivered before, in the first span
			}
			if tt.next[0] == none {
				k.popNone(req(queue))
				return
			}
			wantSpan(t, k.popOne(req(queue)), tt.next[0], 4, int(tt.next[1]))
		})
	}
}

func testAckBudget(k kit) {
	// Each case configures its queue, pushes m0, m1, and per step pops m0 (batch 1) and
	// acks it with the step's status and error ("expire": lets the lease expire instead);
	// then m1 must be next, and m0 dead-lettered as dead says (nil: nothing).
	type step struct {
		st  ports.AckStatus
		err string
		dlq bool
	}
	type dead struct {
		reason  string
		retries int
	}
	const expire ports.AckStatus = "expire"
	tests := []struct {
		name  string
		set   func(*ports.QueueConfig)
		steps []step
		dead  *dead
	}{
		{"failed retryLimit times, then dead-lettered with the ack's error",
			func(c *ports.QueueConfig) { c.RetryLimit = 2 },
			[]step{{ports.AckFailed, "boom", false}, {ports.AckFailed, "boom", false}, {ports.AckFailed, "boom", true}},
			&dead{"boom", 2}},
		{"no error given: Retries exhausted", func(c *ports.QueueConfig) { c.RetryLimit = 1 },
			[]step{{ports.AckFailed, "", false}, {ports.AckFailed, "", true}}, &dead{"Retries exhausted", 1}},
		{"retryLimit 0 dead-letters the first failure", func(c *ports.QueueConfig) { c.RetryLimit = 0 },
			[]step{{ports.AckFailed, "bad", true}}, &dead{"bad", 0}},
		{"retry does not charge the budget", func(c *ports.QueueConfig) { c.RetryLimit = 1 },
			[]step{{ports.AckRetry, "", false}, {ports.AckRetry, "", false}, {ports.AckFailed, "x", false}, {ports.AckFailed, "y", true}},
			&dead{"y", 1}},
		{"lease expiry does not charge the budget", func(c *ports.QueueConfig) { c.RetryLimit = 1 },
			[]step{{expire, "", false}, {ports.AckFailed, "x", false}, {expire, "", false}, {ports.AckFailed, "y", true}},
			&dead{"y", 1}},
		{"dlq dead-letters at once", func(c *ports.QueueConfig) { c.RetryLimit = 5 },
			[]step{{ports.AckFailed, "x", false}, {ports.AckDLQ, "poison", true}}, &dead{"poison", 1}},
		{"dlqAfterMaxRetries alone still dead-letters", func(c *ports.QueueConfig) { c.RetryLimit, c.DeadLetterQueue = 0, false },
			[]step{{ports.AckFailed, "z", true}}, &dead{"z", 0}},
		{"deadLetterQueue alone still dead-letters", func(c *ports.QueueConfig) { c.RetryLimit, c.DLQAfterMaxRetries = 0, false },
			[]step{{ports.AckFailed, "z", true}}, &dead{"z", 0}},
		{"DLQ off drops the message", func(c *ports.QueueConfig) {
			c.RetryLimit, c.DeadLetterQueue, c.DLQAfterMaxRetries = 1, false, false
		}, []step{{ports.AckFailed, "a", false}, {ports.AckFailed, "b", false}}, nil},
		{"DLQ off still dead-letters a dlq ack", func(c *ports.QueueConfig) { c.DeadLetterQueue, c.DLQAfterMaxRetries = false, false },
			[]step{{ports.AckDLQ, "", true}}, &dead{"Retries exhausted", 0}},
	}
	for i, tt := range tests {
		k.t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := k.with(t)
			queue := fmt.Sprint("budget", i)
			k.configure(queue, tt.set)
			pushed := k.push(queue, "p", "m0", "m1")
			for j, s := range tt.steps {
				r := req(queue, batch(1))
				c := k.popOne(r)
				wantSpan(t, c, 0, 0, j+1)
				if s.st == expire {
					k.f.ExpireLease(t, c.PartitionID, ports.QueueModeGroup)
					continue
				}
				it := of(c, r, "m0", s.st)
				it.Error = s.err
				want := ok(queue, "p", true)
				want.DLQ = s.dlq
				wantResults(t, k.ack(it), want)
			}
			wantSpan(t, k.popOne(req(queue)), 1, 1, 1)
			got := k.f.DeadLetters(t, pushed.PartitionID)
			if tt.dead == nil {
				if len(got) != 0 {
					t.Fatalf("dead letters %+v, want none", got)
				}
				return
			}
			blob, _ := k.pushed.Load(fmt.Sprint(pushed.PartitionID, "/0"))
			if len(got) != 1 {
				t.Fatalf("%d dead letters, want 1", len(got))
			}
			d := got[0]
			if d.TransactionID != "m0" || d.ConsumerGroup != ports.QueueModeGroup || d.PartitionID != pushed.PartitionID ||
				d.Queue != queue || d.Partition != "p" || d.ErrorMessage == nil || *d.ErrorMessage != tt.dead.reason ||
				d.RetryCount != tt.dead.retries || d.Offset != 0 || d.FrameIndex != 0 || string(d.Blob) != blob {
				t.Fatalf("dead letter %+v (error %v), want m0 with %+v", d.DeadLetterInfo, d.ErrorMessage, *tt.dead)
			}
		})
	}
}

func testAckBudgetReset(k kit) {
	k.configure("q", func(c *ports.QueueConfig) { c.RetryLimit = 1 })
	k.push("q", "p", "m0", "m1")
	step := func(txn string, st ports.AckStatus, dlq bool) {
		k.t.Helper()
		r := req("q", batch(1))
		c := k.popOne(r)
		want := ok("q", "p", true)
		want.DLQ = dlq
		wantResults(k.t, k.ack(of(c, r, txn, st)), want)
	}
	step("m0", ports.AckFailed, false)
	step("m0", ports.AckCompleted, false)
	// One failure was charged to m0's batch; completing it cleared the counter.
	step("m1", ports.AckFailed, false)
	step("m1", ports.AckFailed, true)
}

func testAckFencing(k kit) {
	k.t.Run("another lease id fails, no lease id is not checked", func(t *testing.T) {
		t.Parallel()
		k := k.with(t)
		k.push("fence", "p", txns("m", 3)...)
		r := req("fence")
		c := k.popOne(r)
		wrong := of(c, r, "m2", ports.AckCompleted)
		wrong.LeaseID = unknownID
		wantResults(t, k.ack(wrong), failed("fence", "p", errLease))
		// Lease-less: the cursor moves under the live lease, which stays.
		wantResults(t, k.ack(item(c.PartitionID, "", "m0", ports.AckCompleted)), ok("fence", "p", false))
		k.popNone(req("fence"))
		wantResults(t, k.ack(of(c, r, "m2", ports.AckCompleted)), ok("fence", "p", true))
		k.popNone(req("fence"))
	})
	k.t.Run("no lease id after the lease expired", func(t *testing.T) {
		t.Parallel()
		k := k.with(t)
		k.push("expired", "p", txns("m", 3)...)
		c := k.popOne(req("expired", batch(2)))
		k.f.ExpireLease(t, c.PartitionID, ports.QueueModeGroup)
		wantResults(t, k.ack(item(c.PartitionID, "", "m1", ports.AckCompleted)), ok("expired", "p", true))
		wantSpan(t, k.popOne(req("expired")), 2, 2, 1)
	})
}

func testAckBelowCursor(k kit) {
	k.push("q", "p", txns("m", 3)...)
	r := req("q")
	c := k.popOne(r)
	wantResults(k.t, k.ack(of(c, r, "m2", ports.AckCompleted)), ok("q", "p", true))
	noop := ok("q", "p", false)
	noop.Noop = true
	for _, tt := range []struct {
		st   ports.AckStatus
		want ports.AckResult
	}{
		{ports.AckCompleted, noop},
		{ports.AckFailed, failed("q", "p", errCommitted)},
		{ports.AckRetry, failed("q", "p", errCommitted)},
		{ports.AckDLQ, failed("q", "p", errCommitted)},
	} {
		wantResults(k.t, k.ack(item(c.PartitionID, "", "m1", tt.st)), tt.want)
	}
	if d := k.f.DeadLetters(k.t, c.PartitionID); len(d) != 0 {
		k.t.Fatalf("dead letters %+v", d)
	}
	k.popNone(req("q"))
	// Below the cursor, ids resolve inside the resolution window only (here the dedup
	// window, 3600 s).
	k.f.Age(k.t, c.PartitionID, 2*time.Hour)
	wantResults(k.t, k.ack(item(c.PartitionID, "", "m1", ports.AckCompleted)), failed("q", "p", errNotFound))
}

func testAckUnplaced(k kit) {
	k.push("q", "p", txns("m", 5)...)
	r := req("q", batch(2))
	c := k.popOne(r)
	never := of(c, r, "m0", ports.AckCompleted)
	never.Group = "never-popped"
	res := k.ack(of(c, r, "gone", ports.AckCompleted), of(c, r, "m4", ports.AckCompleted),
		item(unknownID, "", "m0", ports.AckCompleted), never, of(c, r, "m3", ports.AckFailed))
	wantResults(k.t, res, failed("q", "p", errNotFound), failed("q", "p", errBeyond),
		ports.AckResult{Error: errNoConsumer}, ports.AckResult{Error: errNoConsumer}, failed("q", "p", errBeyond))
	// Nothing changed: the span is still leased and whole.
	wantResults(k.t, k.ack(of(c, r, "m1", ports.AckCompleted)), ok("q", "p", true))
	// Nothing is delivered: no batch to ack into.
	wantResults(k.t, k.ack(item(c.PartitionID, "", "m3", ports.AckCompleted)), failed("q", "p", errNoBatch))
	wantSpan(k.t, k.popOne(req("q")), 2, 4, 1)
}

func testAckRepeated(k kit) {
	// x, y, x in three segments of one partition with dedup off: x names two messages.
	setup := func(t *testing.T, k kit, queue string) (ports.Claim, ports.PopRequest) {
		k.configure(queue, func(c *ports.QueueConfig) { c.DedupWindowSeconds = 0 })
		for _, x := range []string{"x", "y", "x"} {
			k.push(queue, "p", x)
		}
		r := req(queue)
		c := k.popOne(r)
		wantSpan(t, c, 0, 2, 1)
		return c, r
	}
	k.t.Run("failing the first copy redelivers it", func(t *testing.T) {
		t.Parallel()
		k := k.with(t)
		c, r := setup(t, k, "rep-failed")
		wantResults(t, k.ack(of(c, r, "x", ports.AckFailed)), ok("rep-failed", "p", true))
		wantSpan(t, k.popOne(req("rep-failed")), 0, 2, 2)
	})
	k.t.Run("completing the first copy acks only the prefix", func(t *testing.T) {
		t.Parallel()
		k := k.with(t)
		c, r := setup(t, k, "rep-completed")
		wantResults(t, k.ack(of(c, r, "x", ports.AckCompleted)), ok("rep-completed", "p", false))
		wantResults(t, k.ack(of(c, r, "y", ports.AckFailed)), ok("rep-completed", "p", true))
		r = req("rep-completed")
		c = k.popOne(r)
		wantSpan(t, c, 1, 2, 2)
		wantResults(t, k.ack(of(c, r, "y", ports.AckCompleted), of(c, r, "x", ports.AckCompleted)),
			ok("rep-completed", "p", true), ok("rep-completed", "p", true))
		k.popNone(req("rep-completed"))
	})
	k.t.Run("one call naming both copies acks both", func(t *testing.T) {
		t.Parallel()
		k := k.with(t)
		c, r := setup(t, k, "rep-both")
		wantResults(t, k.ack(of(c, r, "x", ports.AckCompleted), of(c, r, "x", ports.AckFailed)),
			ok("rep-both", "p", true), ok("rep-both", "p", true))
		wantSpan(t, k.popOne(req("rep-both")), 2, 2, 2)
	})
}

func testAckOrder(k kit) {
	k.push("q", "pa", "a0", "a1")
	k.push("q", "pb", "b0", "b1")
	k.push("r", "pc", "c0")
	claim := func(queue, p, g string) (ports.Claim, ports.PopRequest) {
		r := req(queue, pinned(p), group(g))
		return k.popOne(r), r
	}
	aq, raq := claim("q", "pa", ports.QueueModeGroup)
	ag, rag := claim("q", "pa", "g")
	bq, rbq := claim("q", "pb", ports.QueueModeGroup)
	bg, rbg := claim("q", "pb", "g")
	cq, rcq := claim("r", "pc", ports.QueueModeGroup)
	never := of(aq, raq, "a0", ports.AckCompleted)
	never.Group = "never-popped"
	res := k.ack(of(bg, rbg, "b0", ports.AckCompleted), of(aq, raq, "a1", ports.AckCompleted),
		of(ag, rag, "gone", ports.AckCompleted), of(bq, rbq, "b0", ports.AckFailed), never,
		of(cq, rcq, "c0", ports.AckCompleted), of(bg, rbg, "b1", ports.AckCompleted), of(ag, rag, "a0", ports.AckRetry))
	wantResults(k.t, res, ok("q", "pb", true), ok("q", "pa", true), failed("q", "pa", errNotFound), ok("q", "pb", true),
		ports.AckResult{Error: errNoConsumer}, ok("r", "pc", true), ok("q", "pb", true), ok("q", "pa", true))
	// Names come with the first released item of each (partition, group) only.
	names := [][2]string{{"q", "pb"}, {"q", "pa"}, {}, {"q", "pb"}, {}, {"r", "pc"}, {}, {"q", "pa"}}
	for i, want := range names {
		if got := [2]string{res[i].Queue, res[i].Partition}; got != want {
			k.t.Errorf("result %d names %v, want %v", i, got, want)
		}
	}
	k.popNone(req("q", pinned("pa")))
	k.popNone(req("q", pinned("pb"), group("g")))
	k.popNone(req("r"))
	wantSpan(k.t, k.popOne(req("q", pinned("pa"), group("g"))), 0, 1, 2)
	wantSpan(k.t, k.popOne(req("q", pinned("pb"))), 0, 1, 2)
}
