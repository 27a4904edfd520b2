package memory

import (
	"context"
	"maps"
	"sync"

	"github.com/queen-go/queen/ports"
)

// SystemState is an in-memory ports.SystemState: the broker-wide flags one database
// would hold, shared by every component handed the same value. Like the PostgreSQL
// store, it keeps a flag turned off (as false) and answers an error, storing nothing,
// for a context that is already done.
type SystemState struct {
	mu    sync.Mutex
	flags map[string]bool
}

var _ ports.SystemState = (*SystemState)(nil)

// NewSystemState returns a state with no flag set.
func NewSystemState() *SystemState { return &SystemState{flags: map[string]bool{}} }

// Flags implements ports.SystemState: a copy of every stored flag.
func (s *SystemState) Flags(ctx context.Context) (map[string]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.flags), nil
}

// SetFlag implements ports.SystemState.
func (s *SystemState) SetFlag(ctx context.Context, key string, on bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flags[key] = on
	return nil
}
