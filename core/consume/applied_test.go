package consume

import (
	"testing"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/ports"
)

// TestAppliedAnnouncesDeadLetters: committed acks that moved a message to the
// dead-letter queue announce it (parked pops of the partition wake) and count as acks,
// whichever route committed them (Ack, or the transaction route through Applied).
func TestAppliedAnnouncesDeadLetters(t *testing.T) {
	t.Parallel()
	commits := notify.NewCommits()
	var heard []notify.Commit
	commits.Subscribe(func(c notify.Commit) { heard = append(heard, c) })
	s := New(memory.NewStore(), nil, Options{Commits: commits})
	items := []ports.AckItem{{TransactionID: "a", PartitionID: "pa"}, {TransactionID: "b", PartitionID: "pb"}}
	res := []ports.AckResult{{OK: true, Queue: "q", Partition: "Default"}, {OK: true, DLQ: true, Queue: "q", Partition: "p2"}}
	s.Applied(ports.DefaultTenant, items, res)
	if len(heard) != 1 || heard[0].PartitionID != "pb" || heard[0].Partition != "p2" || heard[0].Source != notify.DeadLettered {
		t.Fatalf("announced %+v, want the dead-lettered message of pb", heard)
	}
	if got := s.Stats().AckMessages; got != 2 {
		t.Fatalf("%d acks counted, want 2", got)
	}
}
