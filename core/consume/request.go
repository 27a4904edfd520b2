package consume

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/core/names"
	"github.com/queen-go/queen/ports"
)

// InputError is a pop query or an acknowledgement the service refuses, and why. Msg is
// meant for the client as is.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

func inputErrorf(format string, args ...any) *InputError {
	return &InputError{Msg: fmt.Sprintf(format, args...)}
}

// ErrDiscoveryRequired refuses a pop that names neither a queue nor a namespace or task.
var ErrDiscoveryRequired = errors.New("namespace or task is required")

// MaxBatch caps a pop's batch: a larger one is served as MaxBatch (docs/reliability.md
// bad input #18, the clamp). A pop may always deliver fewer messages than its batch, so
// the clamp keeps Queen's wire contract (docs/design.md "Decisions") where a 400 would
// not, and it bounds what one pop decodes and holds in memory.
const MaxBatch = 10000

// TimeoutDefault in PopQuery.Timeout asks for the broker's default long-poll deadline.
const TimeoutDefault time.Duration = -1

// PopQuery is a pop as the client asked for it: names from the route, values from the
// query string, parsed but not resolved. The service checks the names and turns the
// query into the store's request (Request), applying the broker's defaults.
type PopQuery struct {
	Tenant           string // "" = ports.DefaultTenant
	Queue, Partition string // Queue "" = discovery by Namespace and Task
	Namespace, Task  string
	Group            string // "" = queue mode
	Batch            int    // messages across every claimed partition
	Partitions       int    // partitions a wildcard or discovery pop may claim
	LeaseSeconds     int    // 0 = the queue's leaseTime
	AutoAck          bool
	Wait             bool          // long poll
	Timeout          time.Duration // long-poll deadline; TimeoutDefault = Options.DefaultTimeout
	// SubscriptionMode and SubscriptionFrom are the wire values (docs/api.md §5.2): they
	// decide where a named group that never read the queue starts.
	SubscriptionMode, SubscriptionFrom string
	// HasSubscriptionMode reports that the query named a mode, even an empty one.
	HasSubscriptionMode bool
}

// Request resolves q into the store's request and the long-poll wait (0 = none). A
// leased pop gets a new lease id (UUIDv7). Candidates stay nil: the store scans for
// them (the hot-list will fill them here).
func (s *Service) Request(q PopQuery) (ports.PopRequest, time.Duration, error) {
	req := ports.PopRequest{Tenant: q.Tenant, Queue: q.Queue, Partition: q.Partition, Group: ports.QueueModeGroup,
		Batch: min(max(q.Batch, 1), MaxBatch), Partitions: max(q.Partitions, 1), LeaseSeconds: q.LeaseSeconds, AutoAck: q.AutoAck}
	if req.Tenant == "" {
		req.Tenant = ports.DefaultTenant
	}
	if q.Queue == "" {
		req.Namespace, req.Task = q.Namespace, q.Task
		if req.Namespace == "" && req.Task == "" {
			return req, 0, ErrDiscoveryRequired
		}
	} else if err := names.Check(q.Queue); err != nil {
		return req, 0, inputErrorf("queue name %s", err)
	}
	if q.Partition != "" {
		if err := names.Check(q.Partition); err != nil {
			return req, 0, inputErrorf("partition name %s", err)
		}
		req.Partitions = 1
	}
	if q.Group != "" {
		if err := names.Check(q.Group); err != nil {
			return req, 0, inputErrorf("query parameter consumerGroup %s", err)
		}
		req.Group = q.Group
	}
	if err := s.subscription(q, &req); err != nil {
		return req, 0, err
	}
	if !req.AutoAck {
		id, err := uuid.NewV7()
		if err != nil {
			return req, 0, fmt.Errorf("consume: lease id: %w", err)
		}
		req.LeaseID = id.String()
	}
	if !q.Wait {
		return req, 0, nil
	}
	if q.Timeout == TimeoutDefault {
		return req, s.opts.DefaultTimeout, nil
	}
	return req, max(q.Timeout, 0), nil
}

// subscription resolves where a named group starts on its first contact with a queue.
// Queue mode always starts at the oldest retained message; a bad subscriptionFrom is
// refused whatever the group.
func (s *Service) subscription(q PopQuery, req *ports.PopRequest) error {
	var from time.Time
	fromGiven := false
	switch q.SubscriptionFrom {
	case "", "now":
	default:
		t, err := time.Parse(time.RFC3339Nano, q.SubscriptionFrom)
		if err != nil {
			return inputErrorf("query parameter subscriptionFrom=%q: want now or an RFC 3339 timestamp", q.SubscriptionFrom)
		}
		from, fromGiven = t, true
	}
	req.SubscribeMode = ports.SubscribeAll
	if req.Group == ports.QueueModeGroup {
		return nil
	}
	switch {
	case !q.HasSubscriptionMode:
		req.SubscribeMode = s.opts.DefaultSubscription
	case isNewMode(q.SubscriptionMode):
		req.SubscribeMode = ports.SubscribeNew
	}
	switch {
	case fromGiven:
		req.SubscribeMode, req.SubscribeFrom = ports.SubscribeTimestamp, from
	case q.SubscriptionFrom == "now":
		req.SubscribeMode = ports.SubscribeNew
	}
	return nil
}

// isNewMode reports the spellings of subscriptionMode that mean new (docs/api.md §5.2);
// anything else means all.
func isNewMode(m string) bool {
	switch m {
	case "new", "new-only", "new_only", "newonly":
		return true
	}
	return false
}
