package porttest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// HotlistStore runs the conformance suite of ports.HotlistStore; newFixture must return
// an isolated store whose Hotlist field shares the state of its Segments and Consume.
func HotlistStore(t *testing.T, newFixture func(t *testing.T) ConsumeFixture) {
	tests := []struct {
		name string
		run  func(k kit)
	}{
		{"what is pending for a group", testPendingCursor},
		{"keyset pages in ascending id", testPendingPages},
		{"the queue's deferral options and existence", testPendingQueue},
		{"per group", testPendingPerGroup},
		{"per tenant and queue", testPendingScope},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(newKit(t, newFixture(t)))
		})
	}
}

// pending reads one page for group.
func (k kit) pending(queue, group, after string, limit int) ports.PendingPage {
	k.t.Helper()
	return k.pendingOf(tenant, queue, group, after, limit)
}

func (k kit) pendingOf(tn, queue, group, after string, limit int) ports.PendingPage {
	k.t.Helper()
	p, err := k.f.Hotlist.Pending(context.Background(), tn, queue, group, after, limit)
	if err != nil {
		k.t.Fatalf("Pending(%s, %s, %s, %q, %d): %v", tn, queue, group, after, limit, err)
	}
	for i, pp := range p.Partitions {
		if pp.ID == "" || pp.Name == "" || (i > 0 && pp.ID <= p.Partitions[i-1].ID) || (after != "" && pp.ID <= after) {
			k.t.Fatalf("page after %q is not in ascending id after it: %v", after, p.Partitions)
		}
	}
	if len(p.Partitions) > max(limit, 0) {
		k.t.Fatalf("%d partitions in a page of %d", len(p.Partitions), limit)
	}
	return p
}

// wantPending fails unless the page names exactly these partitions (names, sorted).
func wantPending(t *testing.T, p ports.PendingPage, names ...string) {
	t.Helper()
	var got []string
	for _, pp := range p.Partitions {
		got = append(got, pp.Name)
	}
	slices.Sort(got)
	slices.Sort(names)
	if !slices.Equal(got, names) {
		t.Fatalf("pending %v, want %v", got, names)
	}
}

func testPendingCursor(k kit) {
	tests := []struct {
		name    string
		group   string
		arrange func(k kit, q string, p ports.SegmentResult)
		pending bool
	}{
		{"data and no cursor", ports.QueueModeGroup, func(kit, string, ports.SegmentResult) {}, true},
		{"data and no cursor of a named group", "g", func(kit, string, ports.SegmentResult) {}, true},
		{"a cursor before the last offset", ports.QueueModeGroup, func(k kit, q string, p ports.SegmentResult) {
			k.popOne(req(q, autoAck(), batch(1)))
		}, true},
		{"drained", ports.QueueModeGroup, func(k kit, q string, p ports.SegmentResult) {
			k.popOne(req(q, autoAck()))
		}, false},
		{"drained by a completed ack", "g", func(k kit, q string, p ports.SegmentResult) {
			r := req(q, group("g"))
			c := k.popOne(r)
			wantResults(k.t, k.ack(of(c, r, "m2", ports.AckCompleted)), ok(q, "p", true))
		}, false},
		{"under a live lease", ports.QueueModeGroup, func(k kit, q string, p ports.SegmentResult) {
			k.popOne(req(q, leaseSecs(30)))
		}, true},
		{"a new group's cursor after the backlog", "g", func(k kit, q string, p ports.SegmentResult) {
			k.popNone(req(q, group("g"), mode(ports.SubscribeNew, time.Time{})))
		}, false},
	}
	for i, tt := range tests {
		k.t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := k.with(t)
			q := fmt.Sprint("pending", i)
			p := k.push(q, "p", txns("m", 3)...)
			tt.arrange(k, q, p)
			page := k.pending(q, tt.group, "", 100)
			if tt.pending {
				wantPending(t, page, "p")
				if page.Partitions[0].ID != p.PartitionID {
					t.Fatalf("pending id %s, want %s", page.Partitions[0].ID, p.PartitionID)
				}
			} else {
				wantPending(t, page)
			}
		})
	}
	k.t.Run("a partition with nothing stored", func(t *testing.T) {
		t.Parallel()
		k := k.with(t)
		k.f.EmptyPartition(t, tenant, "bare", "p")
		wantPending(t, k.pending("bare", ports.QueueModeGroup, "", 100))
		wantPending(t, k.pending("bare", "g", "", 100))
	})
}

func testPendingPages(k kit) {
	const n, limit = 7, 3
	var names []string
	ids := map[string]string{} // id -> name
	for i := range n {
		name := fmt.Sprint("p", i)
		names = append(names, name)
		ids[k.push("q", name, name+"-0").PartitionID] = name
	}
	// A drained partition in between takes no room in a page.
	k.push("q", "drained", "d0")
	k.popOne(req("q", pinned("drained"), autoAck()))
	var got []string
	after := ""
	for page := 0; ; page++ {
		p := k.pending("q", ports.QueueModeGroup, after, limit)
		if page > n {
			k.t.Fatalf("still paging after %d pages", page)
		}
		for _, pp := range p.Partitions {
			if ids[pp.ID] != pp.Name {
				k.t.Fatalf("partition %s is named %q, want %q", pp.ID, pp.Name, ids[pp.ID])
			}
			got = append(got, pp.Name)
		}
		if want := min(limit, n-page*limit); len(p.Partitions) != max(want, 0) {
			k.t.Fatalf("page %d has %d partitions, want %d", page, len(p.Partitions), want)
		}
		if len(p.Partitions) < limit {
			break
		}
		after = p.Partitions[len(p.Partitions)-1].ID
	}
	slices.Sort(got)
	if !slices.Equal(got, names) {
		k.t.Fatalf("pages listed %v, want %v", got, names)
	}
	if p := k.pending("q", ports.QueueModeGroup, "", 0); len(p.Partitions) != 0 || !p.QueueExists {
		k.t.Fatalf("limit 0: %+v, want an empty page of an existing queue", p)
	}
}

func testPendingQueue(k kit) {
	k.configure("deferred", func(c *ports.QueueConfig) { c.DelayedProcessing, c.WindowBuffer = 30, 10 })
	k.push("deferred", "p", "a0")
	p := k.pending("deferred", ports.QueueModeGroup, "", 10)
	if !p.QueueExists || p.DelayedProcessing != 30*time.Second || p.WindowBuffer != 10*time.Second {
		k.t.Fatalf("deferred queue: exists %v, delayed %v, window %v; want true, 30s, 10s", p.QueueExists,
			p.DelayedProcessing, p.WindowBuffer)
	}
	wantPending(k.t, p, "p")
	// A queue a pop created has no partition yet, and no deferral.
	k.popNone(req("popped"))
	if p := k.pending("popped", ports.QueueModeGroup, "", 10); !p.QueueExists || len(p.Partitions) != 0 ||
		p.DelayedProcessing != 0 || p.WindowBuffer != 0 {
		k.t.Fatalf("queue created by a pop: %+v", p)
	}
	// An unknown queue does not exist, and asking does not create it.
	for range 2 {
		if p := k.pending("unknown", ports.QueueModeGroup, "", 10); p.QueueExists || len(p.Partitions) != 0 {
			k.t.Fatalf("unknown queue: %+v", p)
		}
	}
}

func testPendingPerGroup(k kit) {
	k.push("q", "p1", txns("a", 2)...)
	k.push("q", "p2", txns("b", 2)...)
	k.popOne(req("q", pinned("p1"), group("a"), autoAck()))
	k.popOne(req("q", pinned("p2"), group("b"), autoAck(), batch(1)))
	wantPending(k.t, k.pending("q", "a", "", 10), "p2")
	wantPending(k.t, k.pending("q", "b", "", 10), "p1", "p2")
	wantPending(k.t, k.pending("q", "never", "", 10), "p1", "p2")
	wantPending(k.t, k.pending("q", ports.QueueModeGroup, "", 10), "p1", "p2")
}

func testPendingScope(k kit) {
	const other = "00000000-0000-0000-0000-000000000002" // tenants are UUIDs in SQL
	k.push("q", "mine", "a0")
	k.push("q2", "next-door", "b0")
	sg := seg("q", "elsewhere", "c0")
	sg.Tenant = other
	if r := push(k.t, k.f.Segments, sg)[0]; r.Status != ports.SegmentQueued {
		k.t.Fatalf("push for tenant %s: %+v", other, r)
	}
	wantPending(k.t, k.pending("q", ports.QueueModeGroup, "", 10), "mine")
	wantPending(k.t, k.pendingOf(other, "q", ports.QueueModeGroup, "", 10), "elsewhere")
	if p := k.pendingOf(other, "q2", ports.QueueModeGroup, "", 10); p.QueueExists {
		k.t.Fatalf("tenant %s sees another tenant's queue q2: %+v", other, p)
	}
}
