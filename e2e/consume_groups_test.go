package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// Consumer groups: fan-out across named groups, competition inside queue mode, and where
// a named group starts (subscriptions).

func TestGroupsFanOutQueueModeCompetes(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	var all []string
	for i := range 4 {
		part := fmt.Sprintf("p%d", i)
		b.pushN(t, "fan", part, part, 2)
		all = append(all, txnRange(part, 0, 1)...)
	}

	t.Run("every named group receives every message", func(t *testing.T) {
		for _, g := range []string{"billing", "audit"} {
			p := b.popMust(t, "/api/v1/pop/queue/fan?partitions=10&batch=100&subscriptionMode=all&consumerGroup="+g)
			got := txnsOf(p)
			slices.Sort(got)
			if !slices.Equal(got, all) || p.ConsumerGroup != g {
				t.Fatalf("group %s (%s) got %v, want %v", g, p.ConsumerGroup, got, all)
			}
		}
	})

	t.Run("queue-mode consumers split the partitions", func(t *testing.T) {
		seen := map[string]bool{}
		var got []string
		for c := range 2 {
			p := b.popMust(t, "/api/v1/pop/queue/fan?partitions=2&batch=100")
			if p.PartitionsClaimed != 2 || p.ConsumerGroup != "__QUEUE_MODE__" {
				t.Fatalf("consumer %d claimed %d partitions as %s", c, p.PartitionsClaimed, p.ConsumerGroup)
			}
			for _, m := range p.Messages {
				if seen[m.TransactionID] {
					t.Fatalf("%s delivered to two queue-mode consumers", m.TransactionID)
				}
				seen[m.TransactionID] = true
				got = append(got, m.TransactionID)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, all) {
			t.Fatalf("queue mode delivered %v, want %v", got, all)
		}
		b.popEmpty(t, "/api/v1/pop/queue/fan?partitions=10")
	})
}

func TestSubscriptions(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil) // DEFAULT_SUBSCRIPTION_MODE is all

	// Where a named group starts on a backlog of b-0, b-1 pushed before its first pop;
	// after the first pop the test pushes n-0 and pops again.
	tests := []struct {
		name, query string
		first       []string // nil = 204
	}{
		{"default is all", "", []string{"b-0", "b-1"}},
		{"new skips the backlog", "&subscriptionMode=new", nil},
		{"new-only", "&subscriptionMode=new-only", nil},
		{"new_only", "&subscriptionMode=new_only", nil},
		{"newonly", "&subscriptionMode=newonly", nil},
		{"subscriptionFrom=now is new", "&subscriptionFrom=now&subscriptionMode=all", nil},
		{"all reads the backlog", "&subscriptionMode=all", []string{"b-0", "b-1"}},
		{"an unknown mode is all", "&subscriptionMode=NEW", []string{"b-0", "b-1"}},
		{"a timestamp before the backlog reads it", "&subscriptionFrom=2001-01-01T00:00:00Z", []string{"b-0", "b-1"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			queue := fmt.Sprintf("sub%d", i)
			b.pushN(t, queue, "p", "b", 2)
			path := "/api/v1/pop/queue/" + queue + "?batch=10&consumerGroup=g" + tt.query
			if tt.first == nil {
				b.popEmpty(t, path)
			} else {
				p := b.popMust(t, path)
				wantTxns(t, p, tt.first...)
				b.ackAll(t, p, "")
			}
			b.pushN(t, queue, "p", "n", 1)
			wantTxns(t, b.popMust(t, path), "n-0")
		})
	}

	t.Run("queue mode ignores subscriptionMode", func(t *testing.T) {
		t.Parallel()
		b.pushN(t, "sub-qm", "p", "b", 2)
		wantTxns(t, b.popMust(t, "/api/v1/pop/queue/sub-qm?subscriptionMode=new&subscriptionFrom=now"), "b-0", "b-1")
	})

	t.Run("subscriptionFrom=timestamp starts at the first message at or after it", func(t *testing.T) {
		t.Parallel()
		for k := range 3 {
			b.pushN(t, "sub-ts", "p", fmt.Sprintf("s%d", k), 2)
		}
		// The segments' commit times, as a group reading from the start sees them (the
		// createdAt of each segment's first message).
		seen := b.popMust(t, "/api/v1/pop/queue/sub-ts?batch=10&consumerGroup=observer&subscriptionMode=all")
		wantTxns(t, seen, "s0-0", "s0-1", "s1-0", "s1-1", "s2-0", "s2-1")
		at := []time.Time{seen.Messages[0].createdAt(t), seen.Messages[2].createdAt(t), seen.Messages[4].createdAt(t)}
		if !at[0].Before(at[1]) || !at[1].Before(at[2]) {
			t.Fatalf("segment times %v are not increasing", at)
		}
		cases := []struct {
			from time.Time
			want []string
		}{
			{at[1], []string{"s1-0", "s1-1", "s2-0", "s2-1"}},                       // exactly a segment's time: included
			{at[0].Add(time.Microsecond), []string{"s1-0", "s1-1", "s2-0", "s2-1"}}, // just after one: the next
			{at[2].In(time.FixedZone("", 2*3600)), []string{"s2-0", "s2-1"}},        // any offset
			{at[0], []string{"s0-0", "s0-1", "s1-0", "s1-1", "s2-0", "s2-1"}},
		}
		for i, c := range cases {
			from := url.QueryEscape(c.from.Format(time.RFC3339Nano))
			p := b.popMust(t, fmt.Sprintf("/api/v1/pop/queue/sub-ts?batch=10&consumerGroup=ts%d&subscriptionFrom=%s", i, from))
			wantTxns(t, p, c.want...)
		}
	})

	t.Run("new: partitions created after first contact are read from their start", func(t *testing.T) {
		t.Parallel()
		for _, route := range []string{"", "/partition/old"} {
			queue := "sub-later" + map[string]string{"": "-wild", "/partition/old": "-pinned"}[route]
			b.pushN(t, queue, "old", "old", 2)
			b.pushN(t, queue, "untouched", "untouched", 2)
			b.popEmpty(t, "/api/v1/pop/queue/"+queue+route+"?consumerGroup=g&subscriptionMode=new")
			// The backlog of a partition the group had not touched yet predates the
			// subscription too.
			b.popEmpty(t, "/api/v1/pop/queue/"+queue+"/partition/untouched?consumerGroup=g&subscriptionMode=new")
			b.pushN(t, queue, "later", "later", 2)
			p := b.popMust(t, "/api/v1/pop/queue/"+queue+"?partitions=5&batch=10&consumerGroup=g&subscriptionMode=new")
			wantTxns(t, p, "later-0", "later-1")
		}
	})

	t.Run("new: the first pop of an empty queue subscribes the group", func(t *testing.T) {
		t.Parallel()
		for _, queue := range []string{"sub-empty-wild", "sub-empty-pinned"} {
			path := "/api/v1/pop/queue/" + queue + "?consumerGroup=g&subscriptionMode=new"
			if strings.HasSuffix(queue, "pinned") {
				path = "/api/v1/pop/queue/" + queue + "/partition/p?consumerGroup=g&subscriptionMode=new"
			}
			b.popEmpty(t, path)
			b.pushN(t, queue, "p", "n", 2)
			wantTxns(t, b.popMust(t, path), "n-0", "n-1")
		}
	})

	t.Run("existing cursors are never re-seeded", func(t *testing.T) {
		t.Parallel()
		b.pushN(t, "sub-keep", "p", "b", 3)
		base := "/api/v1/pop/queue/sub-keep/partition/p?batch=1&consumerGroup="
		// Started at the backlog: asking for "new" later does not skip the rest.
		p := b.popMust(t, base+"from-all&subscriptionMode=all")
		wantTxns(t, p, "b-0")
		b.ackAll(t, p, "")
		wantTxns(t, b.popMust(t, base+"from-all&subscriptionMode=new&subscriptionFrom=now"), "b-1")
		// Started after the backlog: asking for "all" or an old timestamp later does not
		// rewind.
		b.popEmpty(t, base+"from-new&subscriptionMode=new")
		b.popEmpty(t, base+"from-new&subscriptionMode=all")
		b.popEmpty(t, base+"from-new&subscriptionFrom=2001-01-01T00:00:00Z")
	})
}

func TestSubscriptionDefaultNew(t *testing.T) {
	t.Parallel()
	b := startBroker(t, map[string]string{"DEFAULT_SUBSCRIPTION_MODE": "new"})
	b.pushN(t, "backlog", "p", "b", 2)
	b.popEmpty(t, "/api/v1/pop/queue/backlog?consumerGroup=g")
	b.pushN(t, "backlog", "p", "n", 1)
	wantTxns(t, b.popMust(t, "/api/v1/pop/queue/backlog?consumerGroup=g"), "n-0")
	// A pop's own subscriptionMode still wins over the operator's default.
	wantTxns(t, b.popMust(t, "/api/v1/pop/queue/backlog?batch=10&consumerGroup=h&subscriptionMode=all"), "b-0", "b-1", "n-0")
}

// TestNewGroupReadsTheBacklog: with the default subscription mode, a consumer group
// that first pops after the producer receives what was already there, whichever way it
// pops (Queen's clients and examples push first and consume second).
func TestNewGroupReadsTheBacklog(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	backlog := func(t *testing.T, queue string) {
		t.Helper()
		b.pushN(t, queue, "p", "b", 3)
	}
	tests := []struct {
		name, queue, path string
	}{
		{"wildcard", "bl-wild", "/api/v1/pop/queue/bl-wild?batch=10&consumerGroup=g"},
		{"partition", "bl-pinned", "/api/v1/pop/queue/bl-pinned/partition/p?batch=10&consumerGroup=g"},
		{"discovery", "blns.bltask.q", "/api/v1/pop?namespace=blns&task=bltask&batch=10&consumerGroup=g"},
		{"long poll", "bl-wait", "/api/v1/pop/queue/bl-wait?batch=10&consumerGroup=g&wait=true&timeout=30000"},
		{"long poll, partition", "bl-wait-p", "/api/v1/pop/queue/bl-wait-p/partition/p?batch=10&consumerGroup=g&wait=true&timeout=30000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			backlog(t, tt.queue)
			start := time.Now()
			p := b.popMust(t, tt.path)
			wantTxns(t, p, "b-0", "b-1", "b-2")
			// A long poll answers at once: the backlog is deliverable, nothing to wait for.
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("backlog delivered after %v", d)
			}
			b.ackAll(t, p, "")
			// Every group has its own cursor: a second new group reads the same backlog.
			p2 := b.popMust(t, strings.Replace(tt.path, "consumerGroup=g", "consumerGroup=g2", 1))
			wantTxns(t, p2, "b-0", "b-1", "b-2")
		})
	}

	t.Run("a transaction acks for a new group", func(t *testing.T) {
		t.Parallel()
		backlog(t, "bl-txn")
		p := b.popMust(t, "/api/v1/pop/queue/bl-txn?batch=10&consumerGroup=g")
		wantTxns(t, p, "b-0", "b-1", "b-2")
		last := p.Messages[len(p.Messages)-1]
		code, r := b.txn(t, map[string]any{"operations": []any{
			map[string]any{"type": "ack", "transactionId": last.TransactionID, "partitionId": last.PartitionID,
				"leaseId": last.LeaseID, "consumerGroup": "g"},
			map[string]any{"type": "push", "items": []any{map[string]any{"queue": "bl-txn-out", "payload": 1}}},
		}})
		if code != http.StatusOK || !r.Success || len(r.Results) != 2 || !r.Results[0].Success {
			t.Fatalf("transaction: %d %+v", code, r)
		}
		// The group's cursor moved past the whole backlog; queue mode still has it all.
		b.popEmpty(t, "/api/v1/pop/queue/bl-txn?batch=10&consumerGroup=g")
		wantTxns(t, b.popMust(t, "/api/v1/pop/queue/bl-txn?batch=10"), "b-0", "b-1", "b-2")
	})
}
