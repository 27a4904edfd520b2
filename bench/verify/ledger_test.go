package verify

import (
	"strings"
	"testing"
)

func TestCheckLedger(t *testing.T) {
	t.Parallel()
	type push struct {
		p      string
		seq    int64
		status string
	}
	d := func(p string, seq int64, id string, count int) Delivery {
		return Delivery{Partition: p, Seq: seq, MessageID: id, DeliveryCount: count}
	}
	queued := func(p string, n int64) []push {
		var out []push
		for i := range n {
			out = append(out, push{p, i, StatusQueued})
		}
		return out
	}
	tests := []struct {
		name       string
		pushes     []push
		deliveries []Delivery
		ackFailed  []string
		pass       bool
		check      func(c FaultCounts) bool
	}{
		{name: "all delivered in order", pushes: queued("a", 3),
			deliveries: []Delivery{d("a", 0, "m0", 1), d("a", 1, "m1", 1), d("a", 2, "m2", 1)},
			pass:       true, check: func(c FaultCounts) bool { return c.Acknowledged == 3 && c.Unique == 3 }},
		{name: "a redelivery with the same id is allowed", pushes: queued("a", 2),
			deliveries: []Delivery{d("a", 0, "m0", 1), d("a", 1, "m1", 1), d("a", 1, "m1", 2)},
			pass:       true, check: func(c FaultCounts) bool { return c.Redeliveries == 1 }},
		{name: "a second copy on first delivery is fatal", pushes: queued("a", 2),
			deliveries: []Delivery{d("a", 0, "m0", 1), d("a", 1, "m1", 1), d("a", 1, "m1", 1)},
			check:      func(c FaultCounts) bool { return c.StoredDuplicates == 1 }},
		{name: "a second copy under another message id is fatal", pushes: queued("a", 1),
			deliveries: []Delivery{d("a", 0, "m0", 1), d("a", 0, "other", 2)},
			check:      func(c FaultCounts) bool { return c.StoredDuplicates == 1 }},
		{name: "an accepted item never delivered is lost", pushes: append(queued("a", 2), push{"a", 2, StatusBuffered}),
			deliveries: []Delivery{d("a", 0, "m0", 1), d("a", 1, "m1", 1)},
			check:      func(c FaultCounts) bool { return c.Lost == 1 && c.InFlight == 1 }},
		{name: "a duplicate answer is a promise too", pushes: []push{{"a", 0, StatusDuplicate}},
			check: func(c FaultCounts) bool { return c.Lost == 1 }},
		{name: "a failed push need not be delivered", pushes: append(queued("a", 1), push{"a", 1, "failed"}),
			deliveries: []Delivery{d("a", 0, "m0", 1)}, pass: true},
		{name: "a failed push that was stored anyway is fine", pushes: []push{{"a", 0, "failed"}},
			deliveries: []Delivery{d("a", 0, "m0", 1)}, pass: true},
		{name: "a later acceptance wins over an earlier failure", pushes: []push{{"a", 0, "failed"}, {"a", 0, StatusQueued}, {"a", 0, "failed"}},
			check: func(c FaultCounts) bool { return c.Lost == 1 }},
		{name: "out of order first occurrence is fatal", pushes: queued("a", 3),
			deliveries: []Delivery{d("a", 0, "m0", 1), d("a", 2, "m2", 1), d("a", 1, "m1", 1)},
			check:      func(c FaultCounts) bool { return c.Violations == 1 }},
		{name: "out of order after a failed ack is reported only", pushes: queued("a", 3), ackFailed: []string{"a"},
			deliveries: []Delivery{d("a", 0, "m0", 1), d("a", 2, "m2", 1), d("a", 1, "m1", 1)},
			pass:       true, check: func(c FaultCounts) bool { return c.RelaxedViolations == 1 }},
		{name: "a gap below the frontier is fatal", pushes: []push{{"a", 0, StatusQueued}, {"a", 1, "failed"}, {"a", 2, StatusQueued}},
			deliveries: []Delivery{d("a", 0, "m0", 1), d("a", 2, "m2", 1)},
			check:      func(c FaultCounts) bool { return c.Gaps == 1 }},
		{name: "a delivery nobody pushed is fatal", pushes: queued("a", 1),
			deliveries: []Delivery{d("a", 0, "m0", 1), d("b", 0, "x", 1)},
			check:      func(c FaultCounts) bool { return c.Unproduced == 1 }},
		{name: "a partition never delivered is all in flight", pushes: queued("a", 4),
			check: func(c FaultCounts) bool { return c.InFlight == 4 && c.Lost == 4 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := NewLedger()
			for _, p := range tc.pushes {
				l.Record(p.p, p.seq, p.status)
			}
			g := NewGroupLog("g")
			g.Add(tc.deliveries...)
			for _, p := range tc.ackFailed {
				g.AckFailed(p)
			}
			r := CheckLedger(l, g)
			if r.Pass != tc.pass || len(r.Groups) != 1 {
				t.Fatalf("pass = %v, want %v\n%s", r.Pass, tc.pass, r)
			}
			if tc.check != nil && !tc.check(r.Groups[0].FaultCounts) {
				t.Fatalf("counts %+v\n%s", r.Groups[0].FaultCounts, r)
			}
			if !tc.pass && len(r.Details) == 0 && r.Groups[0].InFlight == 0 {
				t.Errorf("a failing report says nothing about why:\n%s", r)
			}
			if !strings.Contains(r.String(), "| g |") {
				t.Errorf("the table lacks the group's row:\n%s", r)
			}
		})
	}
}
