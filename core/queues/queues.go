package queues

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/queen-go/queen/core/envelope"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

// Options configures a Service; zero values take the defaults in brackets.
type Options struct {
	Sealer *envelope.Sealer // [nil] encrypted dead letters are listed without data
	Codec  *segment.Codec   // [a new codec] decodes dead-letter blobs
	// Changes, when set, hears of every queue this service reconfigured or deleted, once
	// the change committed: subscribers drop what they cache about the queue.
	Changes *notify.QueueChanges
	Logger  *slog.Logger
	// Shards is how many shards a queue may be placed on explicitly (configure's shard
	// option) [1].
	Shards int
}

// Service is the queue administration use case.
type Service struct {
	store ports.QueueAdmin
	opts  Options
}

// New returns a Service over store.
func New(store ports.QueueAdmin, opts Options) *Service {
	if opts.Codec == nil {
		// Decoding does not depend on the compression level.
		c, err := segment.NewCodec(1)
		if err != nil {
			panic(fmt.Sprintf("queues: segment codec: %v", err)) // fixed, valid options
		}
		opts.Codec = c
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Shards < 1 {
		opts.Shards = 1
	}
	return &Service{store: store, opts: opts}
}

// InputError is a request the service refuses, and why.
type InputError struct {
	// Option is the option at fault ("" when the request as a whole is).
	Option string
	// Invalid asks for the option to be named in the answer's "invalid" key (the
	// retention sink options, docs/api.md §5.6).
	Invalid bool
	Msg     string
}

func (e *InputError) Error() string { return e.Msg }

func inputErrorf(option string, format string, args ...any) *InputError {
	return &InputError{Option: option, Msg: fmt.Sprintf(format, args...)}
}

// DeleteQueue deletes the queue and everything in it (ports.QueueAdmin.DeleteQueue) and
// reports whether it existed.
func (s *Service) DeleteQueue(ctx context.Context, tenant, queue string) (bool, error) {
	existed, err := s.store.DeleteQueue(ctx, tenant, queue)
	if err != nil {
		return false, fmt.Errorf("delete queue: %w", err)
	}
	// Also when it did not exist here: another broker may have deleted it while this one
	// still caches it.
	s.opts.Changes.Announce(notify.QueueChange{Tenant: tenant, Queue: queue, Deleted: true})
	return existed, nil
}
