package brokertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/queen-go/queen"
	"github.com/queen-go/queen/config"
)

// Broker is a broker started by Start.
type Broker struct {
	App *queen.App
	URL string // http://host:port

	cleanup func()
	once    sync.Once
	err     error
}

// Start parses vars as the broker's environment, builds the broker and starts it,
// within timeout; logs, when not nil, receives its log lines instead of stderr.
func Start(vars map[string]string, logs io.Writer, timeout time.Duration) (*Broker, error) {
	cfg, err := config.Parse(vars)
	if err != nil {
		return nil, fmt.Errorf("configuration %v: %w", vars, err)
	}
	if logs != nil {
		cfg = cfg.WithLogOutput(logs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	app, cleanup, err := queen.InitializeApp(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("build the broker: %w", err)
	}
	if err := app.Start(ctx); err != nil {
		cleanup()
		return nil, fmt.Errorf("start the broker: %w", err)
	}
	return &Broker{App: app, URL: "http://" + app.Addr().String(), cleanup: cleanup}, nil
}

// Stop shuts the broker down gracefully within timeout (App.Stop: stop accepting, answer
// the parked long polls, let in-flight requests finish), then releases what its
// construction holds. It returns the same error on every call.
func (b *Broker) Stop(timeout time.Duration) error {
	b.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		err := b.App.Stop(ctx)
		select {
		case failed := <-b.App.Failed(): // HTTP serving ended on its own before the stop
			err = errors.Join(failed, err)
		default:
		}
		b.cleanup()
		b.err = err
	})
	return b.err
}
