package queen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/queen-go/queen/adapters/postgres"
	"github.com/queen-go/queen/config"
	"github.com/queen-go/queen/core/drain"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/core/vegas"
)

// App is the long-running broker.
type App struct {
	Config  config.Config
	Logger  *slog.Logger
	Store   *postgres.Store
	Batcher *fusion.Batcher
	Push    *push.Service
	Limiter *vegas.Limiter
	Spool   *spool.Spool
	Drainer *drain.Drainer
	HTTP    *http.Server
}

// Serve answers HTTP on ln until ctx ends, then stops gracefully: it stops accepting,
// lets in-flight requests (and so their pushes' commits) finish within
// QUEEN_SHUTDOWN_TIMEOUT_MS, and returns. The injector's cleanup then closes fusion, the
// pool and the embedded database, in that order.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- a.HTTP.Serve(ln) }()
	a.Logger.Info("queen-go listening", "addr", ln.Addr().String(), "version", Version)
	select {
	case err := <-errc:
		return fmt.Errorf("http: %w", err)
	case <-ctx.Done():
	}
	a.Logger.Info("shutting down: draining in-flight requests", "timeout", a.Config.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), a.Config.ShutdownTimeout)
	defer cancel()
	if err := a.HTTP.Shutdown(sctx); err != nil {
		return fmt.Errorf("http: shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http: %w", err)
	}
	return nil
}

// Run listens on the configured address and serves until ctx ends.
func (a *App) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", a.HTTP.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", a.HTTP.Addr, err)
	}
	return a.Serve(ctx, ln)
}
