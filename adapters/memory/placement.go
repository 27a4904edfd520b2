package memory

import (
	"context"
	"sync"

	"github.com/queen-go/queen/ports"
)

// Placements is a ports.PlacementStore in memory. The zero value is ready.
type Placements struct {
	// Fault, when set, runs at the start of every call; an error fails it (a catalogue
	// that does not answer).
	Fault func() error

	mu    sync.Mutex
	order []ports.Placement          // in placement order
	byKey map[string]ports.Placement // tenant\x1fqueue
}

var _ ports.PlacementStore = (*Placements)(nil)

func (m *Placements) fault() error {
	if m.Fault != nil {
		return m.Fault()
	}
	return nil
}

// Place implements ports.PlacementStore.
func (m *Placements) Place(_ context.Context, p ports.Placement) (ports.Placement, error) {
	if err := m.fault(); err != nil {
		return ports.Placement{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	key := p.Tenant + "\x1f" + p.Queue
	if have, ok := m.byKey[key]; ok {
		return have, nil
	}
	if m.byKey == nil {
		m.byKey = map[string]ports.Placement{}
	}
	m.byKey[key] = p
	m.order = append(m.order, p)
	return p, nil
}

// Lookup implements ports.PlacementStore.
func (m *Placements) Lookup(_ context.Context, tenant, queue string) (ports.Placement, bool, error) {
	if err := m.fault(); err != nil {
		return ports.Placement{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.byKey[tenant+"\x1f"+queue]
	if !ok {
		return ports.Placement{Tenant: tenant, Queue: queue}, false, nil
	}
	return p, true, nil
}

// NamespaceShard implements ports.PlacementStore.
func (m *Placements) NamespaceShard(_ context.Context, tenant, ns string) (int, bool, error) {
	if err := m.fault(); err != nil {
		return 0, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.order {
		if ns != "" && p.Tenant == tenant && p.Namespace == ns {
			return p.Shard, true, nil
		}
	}
	return 0, false, nil
}

// Placements implements ports.PlacementStore.
func (m *Placements) Placements(context.Context) ([]ports.Placement, error) {
	if err := m.fault(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ports.Placement, len(m.order))
	copy(out, m.order)
	return out, nil
}
