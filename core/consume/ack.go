package consume

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/core/dedup"
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

// NormalizeStatus maps a wire status onto the four statuses (api.md §5.3): absent and
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

// Item converts an input into a store item, or reports why it cannot name a message.
func (in AckInput) Item() (ports.AckItem, string) {
	switch {
	case in.TransactionID == "":
		return ports.AckItem{}, "transactionId is required"
	case in.PartitionID == "":
		return ports.AckItem{}, "partitionId is required"
	case !IsUUID(in.PartitionID):
		return ports.AckItem{}, "partitionId is not a UUID"
	case in.LeaseID != "" && !IsUUID(in.LeaseID):
		return ports.AckItem{}, "invalid or expired lease"
	}
	group := in.Group
	if group == "" {
		group = ports.QueueModeGroup
	}
	return ports.AckItem{
		PartitionID: strings.ToLower(in.PartitionID), Group: group, Hash: dedup.Hash(in.TransactionID),
		TransactionID: in.TransactionID, Status: NormalizeStatus(in.Status), LeaseID: in.LeaseID, Error: in.Error,
	}, ""
}

// Ack applies acknowledgements and returns one result per input, in input order.
// Inputs that cannot name a message fail on their own; the rest go to the store in one
// call.
func (s *Service) Ack(ctx context.Context, inputs []AckInput) ([]ports.AckResult, error) {
	out := make([]ports.AckResult, len(inputs))
	items := make([]ports.AckItem, 0, len(inputs))
	pos := make([]int, 0, len(inputs))
	for i, in := range inputs {
		it, bad := in.Item()
		if bad != "" {
			out[i] = ports.AckResult{Error: bad}
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
		return nil, err
	}
	for k, r := range res {
		out[pos[k]] = r
	}
	return out, nil
}

// ExtendLease renews every live lease held by leaseID to at least now+d. An id that is
// not a UUID holds no lease: nothing is renewed.
func (s *Service) ExtendLease(ctx context.Context, leaseID string, d time.Duration) (int, time.Time, error) {
	if !IsUUID(leaseID) {
		return 0, time.Time{}, nil
	}
	return s.store.ExtendLease(ctx, leaseID, d)
}
