package admin

import (
	"context"
	"fmt"

	"github.com/queen-go/queen/ports"
)

// Refreshed is what a statistics refresh did.
type Refreshed struct {
	Queues int64 // the tenant's queues: what the next reads count afresh
}

// Refresh is the statistics refresh Queen's POST /api/v1/stats/refresh asks for
// (docs/api.md §5.12). Queen recomputes its stored per-queue statistics there; here
// every count is watermark arithmetic at the read (see Resources), so there are none to
// recompute. What a read can be served from memory is dropped instead: the shared
// listings (ShareWindow; every tenant's, they are one cache) and the storage totals
// behind the size estimates (EstimateTTL). The next read of each computes afresh, which
// is what a caller of the refresh wants to see.
func (s *Resources) Refresh(ctx context.Context, tenant string) (Refreshed, error) {
	s.Forget()
	s.mu.Lock()
	s.storageSet = false
	s.mu.Unlock()
	_, queues, err := s.store.ListQueues(ctx, tenant, ports.ResourceFilter{}, ports.ResourcePage{Limit: 0})
	if err != nil {
		return Refreshed{}, fmt.Errorf("stats refresh: count the queues: %w", err)
	}
	return Refreshed{Queues: queues}, nil
}
