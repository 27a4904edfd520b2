package notify

import (
	"slices"
	"testing"
)

func TestCommitsReachEverySubscriberInOrder(t *testing.T) {
	t.Parallel()
	c := NewCommits()
	var got []string
	c.Subscribe(func(e Commit) { got = append(got, "a:"+e.Queue+"/"+e.Partition) })
	c.Subscribe(func(e Commit) { got = append(got, "b:"+e.Queue+"/"+e.Partition) })
	c.Announce(Commit{Tenant: "t", Queue: "q", Partition: "p", Source: Pushed})
	c.Announce(Commit{Tenant: "t", Queue: "q", Partition: "r", Source: DeadLettered})
	if want := []string{"a:q/p", "b:q/p", "a:q/r", "b:q/r"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestQueueChanges(t *testing.T) {
	t.Parallel()
	q := NewQueueChanges()
	var got []QueueChange
	q.Subscribe(func(e QueueChange) { got = append(got, e) })
	q.Announce(QueueChange{Tenant: "t", Queue: "q"})
	if len(got) != 1 || got[0] != (QueueChange{Tenant: "t", Queue: "q"}) {
		t.Fatalf("got %v", got)
	}
}

func TestNilTopicsAnnounceToNobody(t *testing.T) {
	t.Parallel()
	var c *Commits
	var q *QueueChanges
	c.Announce(Commit{Queue: "q"})
	q.Announce(QueueChange{Queue: "q"})
}
