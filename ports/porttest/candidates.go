package porttest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// The ConsumeStore cases of pops that name their candidates (the hot-list's): one
// verdict per candidate, in candidate order.

var verdictNames = map[ports.VerdictKind]string{ports.VerdictSkipped: "skipped", ports.VerdictTook: "took",
	ports.VerdictEmpty: "empty", ports.VerdictLeased: "leased", ports.VerdictBusy: "busy", ports.VerdictGone: "gone"}

func verdictList(vs []ports.Verdict) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "[%s %s drained=%v lease=%v notBefore=%v]", v.PartitionID, verdictNames[v.Kind], v.Drained,
			!v.LeaseExpires.IsZero(), !v.NotBefore.IsZero())
	}
	return b.String()
}

// wantVerdictShape checks what every pop's verdicts must look like: none for a pop
// without candidates; else one per candidate, naming it, in its order; a pinned pop
// evaluates none (skipped, or gone for an id that is not a UUID); the took verdicts are
// the claims, in claim order, with the claim's lease expiry; only a leased verdict
// carries an expiry otherwise, only an empty one a NotBefore, only a took one Drained.
func wantVerdictShape(t *testing.T, r ports.PopRequest, claims []ports.Claim, vs []ports.Verdict) {
	t.Helper()
	if r.Candidates == nil {
		if vs != nil {
			t.Fatalf("a pop without candidates answered verdicts %s", verdictList(vs))
		}
		return
	}
	if len(vs) != len(r.Candidates) {
		t.Fatalf("%d verdicts for %d candidates: %s", len(vs), len(r.Candidates), verdictList(vs))
	}
	took := 0
	for i, v := range vs {
		if v.PartitionID != r.Candidates[i] {
			t.Fatalf("verdict %d names %q, want the candidate %q", i, v.PartitionID, r.Candidates[i])
		}
		if r.Partition != "" && v.Kind != ports.VerdictSkipped && v.Kind != ports.VerdictGone {
			t.Fatalf("a pinned pop evaluated candidate %d: %s", i, verdictList(vs[i:i+1]))
		}
		switch {
		case v.Kind == ports.VerdictTook:
			if took >= len(claims) || !strings.EqualFold(claims[took].PartitionID, v.PartitionID) {
				t.Fatalf("took verdict %d (%s) is not claim %d of %s", i, v.PartitionID, took, spans(claims))
			}
			if !v.LeaseExpires.Equal(claims[took].LeaseExpires) || !v.NotBefore.IsZero() {
				t.Fatalf("took verdict %d: lease %v, notBefore %v; the claim's lease is %v", i, v.LeaseExpires,
					v.NotBefore, claims[took].LeaseExpires)
			}
			took++
			continue
		case v.Drained:
			t.Fatalf("verdict %d is %s and drained", i, verdictNames[v.Kind])
		case v.Kind == ports.VerdictLeased && v.LeaseExpires.IsZero():
			t.Fatalf("leased verdict %d has no expiry", i)
		case v.Kind != ports.VerdictLeased && !v.LeaseExpires.IsZero():
			t.Fatalf("%s verdict %d has a lease expiry %v", verdictNames[v.Kind], i, v.LeaseExpires)
		case v.Kind != ports.VerdictEmpty && !v.NotBefore.IsZero():
			t.Fatalf("%s verdict %d has a NotBefore %v", verdictNames[v.Kind], i, v.NotBefore)
		}
	}
	if r.Partition == "" && took != len(claims) {
		t.Fatalf("%d took verdicts for %d claims %s: %s", took, len(claims), spans(claims), verdictList(vs))
	}
}

// wantKinds fails unless the verdicts are of these kinds, in order.
func wantKinds(t *testing.T, vs []ports.Verdict, kinds ...ports.VerdictKind) {
	t.Helper()
	ok := len(vs) == len(kinds)
	for i := 0; ok && i < len(kinds); i++ {
		ok = vs[i].Kind == kinds[i]
	}
	if !ok {
		var want []string
		for _, k := range kinds {
			want = append(want, verdictNames[k])
		}
		t.Fatalf("verdicts %s, want %v", verdictList(vs), want)
	}
}

// verdictOf pops r (whose candidates name one partition) and returns its one verdict.
func (k kit) verdictOf(r ports.PopRequest) ([]ports.Claim, ports.Verdict) {
	k.t.Helper()
	claims, vs := k.popV(r)
	if len(vs) != 1 {
		k.t.Fatalf("%d verdicts for one candidate", len(vs))
	}
	return claims, vs[0]
}

// verdictCase is a named case of a verdict suite, run on its own queue.
type verdictCase struct {
	name string
	run  func(k kit, queue string)
}

// runVerdictCases runs each case in parallel on a queue of its own.
func runVerdictCases(k kit, prefix string, tests []verdictCase) {
	for i, tt := range tests {
		k.t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(k.with(t), fmt.Sprint(prefix, i))
		})
	}
}

func testVerdictTook(k kit) {
	runVerdictCases(k, "took", []verdictCase{
		{"drained: the span reached the last offset", func(k kit, q string) {
			p := k.push(q, "p", txns("m", 3)...)
			claims, v := k.verdictOf(req(q, cands(p.PartitionID)))
			wantKinds(k.t, []ports.Verdict{v}, ports.VerdictTook)
			wantSpan(k.t, claims[0], 0, 2, 1)
			if !v.Drained || v.LeaseExpires.IsZero() {
				k.t.Fatalf("verdict %s, want drained under a lease", verdictList([]ports.Verdict{v}))
			}
		}},
		{"not drained: the batch ended first", func(k kit, q string) {
			p := k.push(q, "p", txns("m", 3)...)
			claims, v := k.verdictOf(req(q, batch(2), cands(p.PartitionID)))
			wantSpan(k.t, claims[0], 0, 1, 1)
			if v.Kind != ports.VerdictTook || v.Drained {
				k.t.Fatalf("verdict %s, want took, not drained", verdictList([]ports.Verdict{v}))
			}
		}},
		{"not drained: delayedProcessing hides the rest", func(k kit, q string) {
			k.configure(q, func(c *ports.QueueConfig) { c.DelayedProcessing = 60 })
			a := k.push(q, "p", "a0", "a1")
			k.f.Age(k.t, a.PartitionID, 2*time.Minute)
			k.push(q, "p", "b0")
			claims, v := k.verdictOf(req(q, cands(a.PartitionID)))
			wantSpan(k.t, claims[0], 0, 1, 1)
			if v.Kind != ports.VerdictTook || v.Drained {
				k.t.Fatalf("verdict %s, want took, not drained", verdictList([]ports.Verdict{v}))
			}
		}},
		{"autoAck: no lease expiry", func(k kit, q string) {
			p := k.push(q, "p", txns("m", 2)...)
			claims, v := k.verdictOf(req(q, autoAck(), cands(p.PartitionID)))
			wantSpan(k.t, claims[0], 0, 1, 1)
			if v.Kind != ports.VerdictTook || !v.Drained || !v.LeaseExpires.IsZero() {
				k.t.Fatalf("verdict %s, want took, drained, no lease", verdictList([]ports.Verdict{v}))
			}
		}},
		{"a named group's first contact creates its cursor", func(k kit, q string) {
			p := k.push(q, "p", txns("m", 2)...)
			claims, v := k.verdictOf(req(q, group("g"), cands(p.PartitionID)))
			wantKinds(k.t, []ports.Verdict{v}, ports.VerdictTook)
			wantSpan(k.t, claims[0], 0, 1, 1)
		}},
	})
}

func testVerdictEmpty(k kit) {
	runVerdictCases(k, "empty", []verdictCase{
		{"nothing after the cursor", func(k kit, q string) {
			p := k.push(q, "p", txns("m", 2)...)
			k.popOne(req(q, autoAck(), cands(p.PartitionID)))
			_, v := k.verdictOf(req(q, cands(p.PartitionID)))
			wantKinds(k.t, []ports.Verdict{v}, ports.VerdictEmpty)
		}},
		{"nothing stored", func(k kit, q string) {
			pid := k.f.EmptyPartition(k.t, tenant, q, "p")
			_, v := k.verdictOf(req(q, cands(pid)))
			wantKinds(k.t, []ports.Verdict{v}, ports.VerdictEmpty)
		}},
		{"a new group starts after the backlog", func(k kit, q string) {
			p := k.push(q, "p", txns("m", 2)...)
			_, v := k.verdictOf(req(q, group("g"), mode(ports.SubscribeNew, time.Time{}), cands(p.PartitionID)))
			wantKinds(k.t, []ports.Verdict{v}, ports.VerdictEmpty)
		}},
		{"windowBuffer: not before the last write + the window", func(k kit, q string) {
			k.configure(q, func(c *ports.QueueConfig) { c.WindowBuffer = 60 })
			k.push(q, "p", "a0")
			b := k.push(q, "p", "b0")
			_, v := k.verdictOf(req(q, cands(b.PartitionID)))
			wantKinds(k.t, []ports.Verdict{v}, ports.VerdictEmpty)
			if want := b.CreatedAt.Add(time.Minute); !v.NotBefore.Equal(want) {
				k.t.Fatalf("NotBefore %v, want the last segment's %v + 60 s = %v", v.NotBefore, b.CreatedAt, want)
			}
		}},
		{"delayedProcessing: not before the first hidden segment + the delay", func(k kit, q string) {
			k.configure(q, func(c *ports.QueueConfig) { c.DelayedProcessing = 60 })
			a := k.push(q, "p", "a0")
			k.push(q, "p", "b0")
			_, v := k.verdictOf(req(q, cands(a.PartitionID)))
			wantKinds(k.t, []ports.Verdict{v}, ports.VerdictEmpty)
			if want := a.CreatedAt.Add(time.Minute); !v.NotBefore.Equal(want) {
				k.t.Fatalf("NotBefore %v, want the first segment's %v + 60 s = %v", v.NotBefore, a.CreatedAt, want)
			}
		}},
		{"delayedProcessing: the first hidden segment is after the cursor", func(k kit, q string) {
			k.configure(q, func(c *ports.QueueConfig) { c.DelayedProcessing = 60 })
			a := k.push(q, "p", "a0")
			k.f.Age(k.t, a.PartitionID, 2*time.Minute)
			b := k.push(q, "p", "b0")
			wantSpan(k.t, k.popOne(req(q, autoAck(), cands(a.PartitionID))), 0, 0, 1)
			_, v := k.verdictOf(req(q, cands(a.PartitionID)))
			wantKinds(k.t, []ports.Verdict{v}, ports.VerdictEmpty)
			if want := b.CreatedAt.Add(time.Minute); !v.NotBefore.Equal(want) {
				k.t.Fatalf("NotBefore %v, want the hidden segment's %v + 60 s = %v", v.NotBefore, b.CreatedAt, want)
			}
		}},
		{"a deferral queue with nothing after the cursor has no NotBefore", func(k kit, q string) {
			k.configure(q, func(c *ports.QueueConfig) { c.WindowBuffer, c.DelayedProcessing = 60, 60 })
			p := k.push(q, "p", "a0")
			k.f.Age(k.t, p.PartitionID, 2*time.Minute)
			k.popOne(req(q, autoAck(), cands(p.PartitionID)))
			_, v := k.verdictOf(req(q, cands(p.PartitionID)))
			wantKinds(k.t, []ports.Verdict{v}, ports.VerdictEmpty)
			if !v.NotBefore.IsZero() {
				k.t.Fatalf("NotBefore %v with nothing hidden", v.NotBefore)
			}
		}},
	})
}

func testVerdictLeased(k kit) {
	runVerdictCases(k, "leased", []verdictCase{
		{"a live lease of the group, with its expiry", func(k kit, q string) {
			p := k.push(q, "p", txns("m", 3)...)
			first := k.popOne(req(q, batch(1), leaseSecs(30), cands(p.PartitionID)))
			_, v := k.verdictOf(req(q, cands(p.PartitionID)))
			wantKinds(k.t, []ports.Verdict{v}, ports.VerdictLeased)
			if !v.LeaseExpires.Equal(first.LeaseExpires) {
				k.t.Fatalf("leased until %v, want the holder's %v", v.LeaseExpires, first.LeaseExpires)
			}
		}},
		{"another group is not fenced", func(k kit, q string) {
			p := k.push(q, "p", txns("m", 3)...)
			k.popOne(req(q, cands(p.PartitionID)))
			_, v := k.verdictOf(req(q, group("other"), cands(p.PartitionID)))
			wantKinds(k.t, []ports.Verdict{v}, ports.VerdictTook)
		}},
		{"an expired lease is taken again", func(k kit, q string) {
			p := k.push(q, "p", txns("m", 3)...)
			k.popOne(req(q, cands(p.PartitionID)))
			k.f.ExpireLease(k.t, p.PartitionID, ports.QueueModeGroup)
			claims, v := k.verdictOf(req(q, cands(p.PartitionID)))
			wantKinds(k.t, []ports.Verdict{v}, ports.VerdictTook)
			wantSpan(k.t, claims[0], 0, 2, 2)
		}},
	})
}

func testVerdictBusy(k kit) {
	runVerdictCases(k, "busy", []verdictCase{
		{"another transaction holds the cursor row", func(k kit, q string) {
			p := k.push(q, "p", txns("m", 3)...)
			wantSpan(k.t, k.popOne(req(q, autoAck(), batch(1), cands(p.PartitionID))), 0, 0, 1)
			release := k.f.HoldCursor(k.t, p.PartitionID, ports.QueueModeGroup)
			_, v := k.verdictOf(req(q, cands(p.PartitionID)))
			wantKinds(k.t, []ports.Verdict{v}, ports.VerdictBusy)
			k.popNone(req(q)) // the scan skips it too
			release()
			claims, v := k.verdictOf(req(q, cands(p.PartitionID)))
			wantKinds(k.t, []ports.Verdict{v}, ports.VerdictTook)
			wantSpan(k.t, claims[0], 1, 2, 1)
		}},
		{"another transaction is creating the cursor", func(k kit, q string) {
			p := k.push(q, "p", txns("m", 3)...)
			release := k.f.HoldCursor(k.t, p.PartitionID, "g")
			_, v := k.verdictOf(req(q, group("g"), cands(p.PartitionID)))
			wantKinds(k.t, []ports.Verdict{v}, ports.VerdictBusy)
			release()
			claims, v := k.verdictOf(req(q, group("g"), cands(p.PartitionID)))
			wantKinds(k.t, []ports.Verdict{v}, ports.VerdictTook)
			wantSpan(k.t, claims[0], 0, 2, 1)
		}},
		{"another group's held cursor does not matter", func(k kit, q string) {
			p := k.push(q, "p", txns("m", 3)...)
			defer k.f.HoldCursor(k.t, p.PartitionID, "g")()
			_, v := k.verdictOf(req(q, cands(p.PartitionID)))
			wantKinds(k.t, []ports.Verdict{v}, ports.VerdictTook)
		}},
	})
}

func testVerdictGone(k kit) {
	elsewhere := k.push("other", "p", "x")
	k.push("q", "p", "a")
	tests := []struct {
		name, id string
	}{
		{"an unknown partition id", unknownID},
		{"a partition of another queue", elsewhere.PartitionID},
		{"an id that is not a UUID", "not-a-partition-id"},
	}
	for _, tt := range tests {
		k.t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := k.with(t)
			claims, v := k.verdictOf(req("q", group(tt.name), cands(tt.id)))
			wantKinds(t, []ports.Verdict{v}, ports.VerdictGone)
			if len(claims) != 0 {
				t.Fatalf("claimed %s", spans(claims))
			}
		})
	}
}

func testVerdictSkipped(k kit) {
	runVerdictCases(k, "skipped", []verdictCase{
		{"the batch filled up", func(k kit, q string) {
			p1 := k.push(q, "p1", txns("a", 5)...)
			p2 := k.push(q, "p2", "b0")
			p3 := k.push(q, "p3", "c0")
			claims, vs := k.popV(req(q, parts(3), batch(2), cands(p1.PartitionID, p2.PartitionID, p3.PartitionID)))
			wantKinds(k.t, vs, ports.VerdictTook, ports.VerdictSkipped, ports.VerdictSkipped)
			wantSpan(k.t, claims[0], 0, 1, 1)
			// Not evaluated, so still there for the next pop.
			_, v := k.verdictOf(req(q, cands(p3.PartitionID)))
			wantKinds(k.t, []ports.Verdict{v}, ports.VerdictTook)
		}},
		{"the partition limit was reached", func(k kit, q string) {
			p1 := k.push(q, "p1", "a0")
			p2 := k.push(q, "p2", "b0")
			claims, vs := k.popV(req(q, parts(1), cands(p1.PartitionID, p2.PartitionID)))
			wantKinds(k.t, vs, ports.VerdictTook, ports.VerdictSkipped)
			if claims[0].PartitionID != p1.PartitionID {
				k.t.Fatalf("claimed %s, want p1", spans(claims))
			}
		}},
		{"a repeated candidate is tried once", func(k kit, q string) {
			// Tried again, it would find the lease its first turn took.
			p := k.push(q, "p", txns("m", 3)...)
			claims, vs := k.popV(req(q, parts(2), cands(p.PartitionID, p.PartitionID)))
			wantKinds(k.t, vs, ports.VerdictTook, ports.VerdictSkipped)
			wantSpan(k.t, claims[0], 0, 2, 1)
		}},
		{"a pinned pop evaluates no candidate", func(k kit, q string) {
			k.push(q, "p1", "a0")
			p2 := k.push(q, "p2", "b0")
			claims, vs := k.popV(req(q, pinned("p1"), cands(p2.PartitionID, "not-a-partition-id")))
			wantKinds(k.t, vs, ports.VerdictSkipped, ports.VerdictGone)
			if len(claims) != 1 || claims[0].Partition != "p1" {
				k.t.Fatalf("claimed %s, want p1", spans(claims))
			}
		}},
	})
}

func testVerdictOrder(k kit) {
	runVerdictCases(k, "order", []verdictCase{
		{"claims follow the candidates", func(k kit, q string) {
			var ids []string
			for _, name := range []string{"p1", "p2", "p3"} {
				ids = append(ids, k.push(q, name, name+"-0").PartitionID)
			}
			claims, vs := k.popV(req(q, parts(3), cands(ids[2], ids[0], ids[1])))
			wantKinds(k.t, vs, ports.VerdictTook, ports.VerdictTook, ports.VerdictTook)
			if claims[0].Partition != "p3" || claims[1].Partition != "p1" || claims[2].Partition != "p2" {
				k.t.Fatalf("claimed %s, want p3, p1, p2", spans(claims))
			}
		}},
		{"every verdict in its place", func(k kit, q string) {
			took1 := k.push(q, "took1", "t1")
			leased := k.push(q, "leased", "l0", "l1")
			k.popOne(req(q, cands(leased.PartitionID)))
			empty := k.push(q, "empty", "e0")
			k.popOne(req(q, autoAck(), cands(empty.PartitionID)))
			took2 := k.push(q, "took2", "t2")
			rest := k.push(q, "rest", "r0")
			claims, vs := k.popV(req(q, parts(2), cands(took2.PartitionID, unknownID, leased.PartitionID,
				empty.PartitionID, took1.PartitionID, rest.PartitionID)))
			wantKinds(k.t, vs, ports.VerdictTook, ports.VerdictGone, ports.VerdictLeased, ports.VerdictEmpty,
				ports.VerdictTook, ports.VerdictSkipped)
			if claims[0].Partition != "took2" || claims[1].Partition != "took1" {
				k.t.Fatalf("claimed %s, want took2 then took1", spans(claims))
			}
		}},
	})
}

func testCandidatesNone(k kit) {
	p := k.push("q", "p", "a0")
	claims, vs := k.popV(req("q", cands()))
	if len(claims) != 0 || len(vs) != 0 {
		k.t.Fatalf("an empty candidate list claimed %s with verdicts %s", spans(claims), verdictList(vs))
	}
	// It took no lease: the partition is still there.
	_, v := k.verdictOf(req("q", cands(p.PartitionID)))
	wantKinds(k.t, []ports.Verdict{v}, ports.VerdictTook)
}
