package consume

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/core/names"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/ports"
)

// AckInput is one acknowledgement as the client sent it.
type AckInput struct {
	TransactionID string
	PartitionID   string
	Status        string // "" = completed
	Group         string // "" = the queue-mode group
	LeaseID       string
	Error         string
}

// NormalizeStatus maps a wire status onto the four statuses (docs/api.md §5.3): absent and
// completed/success/acked/ok are completed; retry and dlq are themselves; anything else,
// including another letter case, is failed.
func NormalizeStatus(s string) ports.AckStatus {
	switch s {
	case "", "completed", "success", "acked", "ok":
		return ports.AckCompleted
	case "retry":
		return ports.AckRetry
	case "dlq":
		return ports.AckDLQ
	}
	return ports.AckFailed
}

// IsUUID reports whether s is a UUID in its canonical 36-character text form.
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
}

// Item converts an input into a store item, or says (an *InputError) why it cannot name
// a message.
func (in AckInput) Item() (ports.AckItem, error) {
	// A transactionId no push accepts names no message; a NUL byte or invalid UTF-8
	// would fail the whole batch in the database instead of this item.
	if err := names.CheckTransactionID(in.TransactionID); err != nil {
		return ports.AckItem{}, &InputError{Msg: "transactionId " + err.Error()}
	}
	if !utf8.ValidString(in.Error) || strings.IndexByte(in.Error, 0) >= 0 {
		return ports.AckItem{}, &InputError{Msg: "error must be UTF-8 text without NUL bytes"}
	}
	if in.Group != "" {
		if err := names.Check(in.Group); err != nil {
			return ports.AckItem{}, &InputError{Msg: "consumerGroup " + err.Error()}
		}
	}
	switch {
	case in.TransactionID == "":
		return ports.AckItem{}, &InputError{Msg: "transactionId is required"}
	case in.PartitionID == "":
		return ports.AckItem{}, &InputError{Msg: "partitionId is required"}
	case !IsUUID(in.PartitionID):
		return ports.AckItem{}, &InputError{Msg: "partitionId is not a UUID"}
	case in.LeaseID != "" && !IsUUID(in.LeaseID):
		return ports.AckItem{}, &InputError{Msg: "invalid or expired lease"}
	}
	group := in.Group
	if group == "" {
		group = ports.QueueModeGroup
	}
	return ports.AckItem{
		PartitionID: strings.ToLower(in.PartitionID), Group: group, Hash: dedup.Hash(in.TransactionID),
		TransactionID: in.TransactionID, Status: NormalizeStatus(in.Status), LeaseID: in.LeaseID, Error: in.Error,
	}, nil
}

// NotApplied is the error of an item the store did not take (docs/api.md §5.3): its lease
// expires and what it covered is delivered again.
const NotApplied = "ack flush failed; lease will expire and redeliver"

// Ack applies tenant's acknowledgements and returns one result per input, in input order.
// Inputs that cannot name a message fail on their own; the rest go to the store in one
// call. When the store fails, the error is returned with results all the same: those
// items fail with NotApplied. Every message moved to the dead-letter queue is announced
// as a commit of its partition (its next messages can be claimed now).
func (s *Service) Ack(ctx context.Context, tenant string, inputs []AckInput) ([]ports.AckResult, error) {
	s.acks.Add(1)
	out := make([]ports.AckResult, len(inputs))
	items := make([]ports.AckItem, 0, len(inputs))
	pos := make([]int, 0, len(inputs))
	for i, in := range inputs {
		it, err := in.Item()
		if err != nil {
			out[i] = ports.AckResult{Error: err.Error()}
			continue
		}
		items = append(items, it)
		pos = append(pos, i)
	}
	if len(items) == 0 {
		return out, nil
	}
	res, err := s.store.Ack(ctx, items)
	if err != nil {
		for _, p := range pos {
			out[p].Error = NotApplied
		}
		return out, fmt.Errorf("consume: ack %d items: %w", len(items), err)
	}
	for k, r := range res {
		out[pos[k]] = r
	}
	s.Applied(tenant, items, res)
	return out, nil
}

// Applied makes what committed acks changed known: the messages they moved to the
// dead-letter queue (parked pops of the partition wake), the leases they released (the
// hot-list), the ack count and Options.Activity. Ack calls it; so does the transaction route for the
// acks it committed (core/push), which do not pass through Ack.
func (s *Service) Applied(tenant string, items []ports.AckItem, res []ports.AckResult) {
	var applied uint64
	for k, r := range res {
		if r.OK {
			applied++
		}
		if r.DLQ {
			s.opts.Commits.Announce(notify.Commit{Tenant: tenant, Queue: r.Queue, Partition: r.Partition,
				PartitionID: items[k].PartitionID, Source: notify.DeadLettered})
		}
	}
	s.acked.Add(applied)
	s.released(tenant, items, res)
	if s.opts.Activity != nil {
		s.countAcks(tenant, items, res)
	}
}

// released tells the hot-list about every (partition, group) whose lease the acks
// released, and whether all its acked messages were completed (a drained partition may
// then leave the ring).
func (s *Service) released(tenant string, items []ports.AckItem, res []ports.AckResult) {
	if s.opts.Hot == nil || !s.opts.Hot.Enabled() {
		return
	}
	type key struct{ pid, group string }
	type state struct {
		first     int // index of the key's first item
		completed bool
	}
	keys := make(map[key]*state)
	var order []key
	for k, it := range items {
		if !res[k].LeaseReleased {
			continue
		}
		c := key{it.PartitionID, it.Group}
		st := keys[c]
		if st == nil {
			st = &state{first: k, completed: true}
			keys[c] = st
			order = append(order, c)
		}
		st.completed = st.completed && it.Status == ports.AckCompleted && !res[k].DLQ
	}
	for _, c := range order {
		st := keys[c]
		s.opts.Hot.Acked(tenant, res[st.first].Queue, c.group, c.pid, st.completed)
	}
}

// ExtendLease renews every live lease held by leaseID to at least now+d. An id that is
// not a UUID holds no lease: nothing is renewed.
func (s *Service) ExtendLease(ctx context.Context, leaseID string, d time.Duration) (int, time.Time, error) {
	if !IsUUID(leaseID) {
		return 0, time.Time{}, nil
	}
	return s.store.ExtendLease(ctx, leaseID, d)
}
