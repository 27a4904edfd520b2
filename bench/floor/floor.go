package floor

import (
	"context"
	"encoding/binary"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/adapters/httpapi"
	"github.com/queen-go/queen/adapters/metrics"
	"github.com/queen-go/queen/core/push"
)

// DefaultCycle is the simulated commit cycle: see the package documentation.
const DefaultCycle = 3 * time.Millisecond

// Pusher is the floor's push use case: every item queued, answered at the next tick of a
// shared ticker. Start it before serving; Stop releases the waiting requests and stops
// the ticker.
type Pusher struct {
	cycle time.Duration

	mu    sync.Mutex
	round chan struct{} // closed at the next tick: every request waiting on it is answered
	stop  chan struct{}
	done  chan struct{}

	ids                atomic.Uint64
	requests, messages atomic.Uint64
}

var _ httpapi.Pusher = (*Pusher)(nil)

// NewPusher returns a Pusher whose waits end every cycle (<= 0: DefaultCycle).
func NewPusher(cycle time.Duration) *Pusher {
	if cycle <= 0 {
		cycle = DefaultCycle
	}
	return &Pusher{cycle: cycle, round: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
}

// Start starts the ticker.
func (p *Pusher) Start() {
	go func() {
		defer close(p.done)
		t := time.NewTicker(p.cycle)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				p.mu.Lock()
				close(p.round) // and left closed: a later push is answered at once
				p.mu.Unlock()
				return
			case <-t.C:
				p.release()
			}
		}
	}()
}

// Stop stops the ticker, answering the requests waiting for it; later pushes are
// answered at once.
func (p *Pusher) Stop() {
	close(p.stop)
	<-p.done
}

// release ends the current round: its waiting requests are answered together.
func (p *Pusher) release() {
	p.mu.Lock()
	r := p.round
	p.round = make(chan struct{})
	p.mu.Unlock()
	close(r)
}

// Push answers every item queued once the current round ends (or ctx does).
func (p *Pusher) Push(ctx context.Context, _, _ string, items []push.Item) []push.Result {
	p.requests.Add(1)
	p.messages.Add(uint64(len(items)))
	results := make([]push.Result, len(items))
	for i, it := range items {
		n := p.ids.Add(1)
		var id [16]byte
		binary.BigEndian.PutUint64(id[8:], n)
		txn := it.TransactionID
		if txn == "" {
			txn = uuid.UUID(id).String()
		}
		part := it.Partition
		if part == "" {
			part = push.DefaultPartition
		}
		results[i] = push.Result{Index: i, MessageID: id, TransactionID: txn, Queue: it.Queue, Partition: part,
			Status: push.StatusQueued, Offset: int64(n), HasOffset: true}
	}
	p.mu.Lock()
	r := p.round
	p.mu.Unlock()
	select {
	case <-r:
	case <-ctx.Done():
	}
	return results
}

// Transaction is not served: without a consume service the floor has no transaction
// route.
func (p *Pusher) Transaction(context.Context, string, string, []push.TxnOp, string) ([]push.TxnResult, error) {
	return nil, push.ErrNoTransactions
}

// Stats are the request and message counts (GET /metrics).
func (p *Pusher) Stats() push.Stats {
	return push.Stats{Requests: p.requests.Load(), Messages: p.messages.Load()}
}

// pinger is the floor's database: always up (GET /health answers 200).
type pinger struct{}

func (pinger) Ping(context.Context) error { return nil }

// Handler is the broker's HTTP handler with p behind the push route, built with the
// options queen-server gives it by default (authentication off, the default body limit)
// and the same middleware: every request observed into the request metrics, as
// ProvideHandler does (the floor must pay for what the broker pays for on every request).
func Handler(p *Pusher, log *slog.Logger) http.Handler {
	return httpapi.New(httpapi.Services{Push: p, DB: pinger{}},
		httpapi.Options{Logger: log, Observers: []httpapi.Observer{metrics.NewRequests()}})
}

// Server is Handler served as queen-server serves its handler, at addr.
func Server(addr string, p *Pusher, log *slog.Logger) *http.Server {
	return httpapi.NewServer(addr, Handler(p, log))
}
