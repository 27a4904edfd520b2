package memory

import (
	"context"
	"slices"
	"sync"

	"github.com/queen-go/queen/ports"
)

// HintNet is an in-process stand-in for the brokers of one database exchanging hints
// (the PostgreSQL adapter's LISTEN/NOTIFY): each Bus is one broker's endpoint, and a batch
// published on one reaches every other endpoint that is listening at that moment, whole
// and in publish order (each hint with its kind), never the publisher's own. As with
// NOTIFY, an endpoint that is not listening misses what is published meanwhile, and a
// slow listener never slows a publisher (its queue grows instead).
type HintNet struct {
	mu        sync.Mutex
	listeners map[*hintListener]struct{}
}

// NewHintNet returns a network with no endpoint.
func NewHintNet() *HintNet { return &HintNet{listeners: make(map[*hintListener]struct{})} }

// Bus returns a new endpoint of the network.
func (n *HintNet) Bus() *HintBus { return &HintBus{net: n} }

// HintBus is one endpoint of a HintNet: a ports.HintBus.
type HintBus struct {
	net *HintNet
}

var _ ports.HintBus = (*HintBus)(nil)

// hintListener is one Listen call's queue of batches.
type hintListener struct {
	from    *HintBus
	mu      sync.Mutex
	batches [][]ports.Hint
	ready   chan struct{} // holds a token while batches is not empty
}

// Publish implements ports.HintBus: the batch (a copy) is queued for every listener of
// the other endpoints.
func (b *HintBus) Publish(ctx context.Context, hints []ports.Hint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(hints) == 0 {
		return nil
	}
	b.net.mu.Lock()
	defer b.net.mu.Unlock()
	for l := range b.net.listeners {
		if l.from == b {
			continue
		}
		l.mu.Lock()
		l.batches = append(l.batches, slices.Clone(hints))
		l.mu.Unlock()
		select {
		case l.ready <- struct{}{}:
		default: // a token is already there
		}
	}
	return nil
}

// Listen implements ports.HintBus: it delivers the other endpoints' batches, one call
// each, until ctx ends, and returns ctx's error.
func (b *HintBus) Listen(ctx context.Context, deliver func([]ports.Hint)) error {
	l := &hintListener{from: b, ready: make(chan struct{}, 1)}
	b.net.mu.Lock()
	b.net.listeners[l] = struct{}{}
	b.net.mu.Unlock()
	defer func() {
		b.net.mu.Lock()
		delete(b.net.listeners, l)
		b.net.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.ready:
		}
		l.mu.Lock()
		batches := l.batches
		l.batches = nil
		l.mu.Unlock()
		for _, h := range batches {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			deliver(h)
		}
	}
}
