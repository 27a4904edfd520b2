package queen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/queen-go/queen/adapters/jwks"
	"github.com/queen-go/queen/config"
	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/core/drain"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/history"
	"github.com/queen-go/queen/core/hotlist"
	"github.com/queen-go/queen/core/maintenance"
	"github.com/queen-go/queen/core/peers"
	"github.com/queen-go/queen/core/readiness"
	"github.com/queen-go/queen/core/replication"
	"github.com/queen-go/queen/core/retention"
	"github.com/queen-go/queen/core/spool"
)

// App is the long-running broker. InitializeApp builds it with nothing running; Start
// starts its components and the HTTP listener, Stop stops them in the one order a
// graceful shutdown needs. The injector's cleanup then closes the pool and stops the
// embedded PostgreSQL.
type App struct {
	cfg     config.Config
	log     *slog.Logger
	flags   *maintenance.Flags
	consume *consume.Service
	batcher *fusion.Batcher
	spool   *spool.Spool
	drainer *drain.Drainer
	hot     *hotlist.List
	mesh    *peers.Mesh
	ret     *retention.Job
	history *history.Recorder
	keys    *jwks.Client // the JWKS of token verification; nil without JWT_JWKS_URL
	ready   *readiness.Check
	repl    *replication.Check
	reads   *replication.ReadRouter
	shards  *ShardStacks // the components of the shards after the first (QUEEN_SHARDS)
	http    *http.Server

	ln     net.Listener
	failed chan error // the HTTP server's own failure, once
}

// NewApp assembles the broker from its components.
func NewApp(cfg config.Config, log *slog.Logger, flags *maintenance.Flags, b *fusion.Batcher, sp *spool.Spool,
	d *drain.Drainer, hot *hotlist.List, mesh *peers.Mesh, ret *retention.Job, rec *history.Recorder, keys *jwks.Client,
	ready *readiness.Check, repl *replication.Check, reads *replication.ReadRouter, shards *ShardStacks, srv *http.Server, c *consume.Service) *App {
	return &App{cfg: cfg, log: log, flags: flags, consume: c, batcher: b, spool: sp, drainer: d, hot: hot, mesh: mesh,
		ret: ret, history: rec, keys: keys, ready: ready, repl: repl, reads: reads, shards: shards, http: srv, failed: make(chan error, 1)}
}

// Logger is the broker's logger.
func (a *App) Logger() *slog.Logger { return a.log }

// Start reads the maintenance flags, starts push fusion, the spool's writer and its
// drain, the hot-list, the peer hints, the retention cycle and the metrics history's
// flushes, then listens on QUEEN_BIND_ADDR:PORT (PORT 0: a free port, see Addr) and serves
// HTTP. On a listen error everything started is stopped again.
func (a *App) Start(ctx context.Context) error {
	a.flags.Start(ctx)
	a.repl.Start(ctx)  // before the first push: a required synchronous standby holds them or not
	a.reads.Start(ctx) // the admin reads find their server measured (QUEEN_PG_READ_URL)

	a.batcher.Start()
	a.spool.Start()
	a.drainer.Start()
	a.hot.Start()
	a.mesh.Start()
	a.ret.Start()
	a.shards.Start(ctx)
	if a.keys != nil {
		// Before listening: the first requests find the key set fetched (or its failure
		// logged).
		if err := a.keys.Start(ctx); err != nil {
			_ = a.stopComponents(ctx)
			return err
		}
	}
	ln, err := net.Listen("tcp", a.http.Addr)
	if err != nil {
		_ = a.stopComponents(ctx)
		return fmt.Errorf("listen %s: %w", a.http.Addr, err)
	}
	a.ln = ln
	// The metrics history names the port listened on (PORT 0 picks one), and flushes
	// until Stop, not until the start-up deadline.
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		a.history.SetPort(tcp.Port)
	}
	a.history.Start(context.WithoutCancel(ctx))
	go func() {
		if err := a.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			a.failed <- fmt.Errorf("http: %w", err)
		}
	}()
	if !a.cfg.JWTEnabled {
		a.log.Warn("authentication is off (JWT_ENABLED=false): every request is allowed")
	}
	a.log.Info("queen-go listening", "addr", ln.Addr().String(), "version", Version, "config", a.cfg)
	// Whether an acknowledged push survives a failover, said once (docs/reliability.md).
	a.repl.Report(ctx, 5*time.Second, a.log)
	return nil
}

// Addr is the address the broker listens on (after Start).
func (a *App) Addr() net.Addr { return a.ln.Addr() }

// Failed delivers the error that ended HTTP serving on its own (not by Stop).
func (a *App) Failed() <-chan error { return a.failed }

// Stop shuts the broker down in this order: GET /ready answers 503; the parked long polls
// answer (204) and the listener stops accepting; in-flight requests finish within ctx
// (their pushes commit); the JWKS refresh, the retention cycle, the peer hints and the
// hot-list's background work stop; the spool's drain stops; fusion commits what it still
// holds (given DB_STATEMENT_TIMEOUT whatever ctx says); the spool is flushed and closed;
// the maintenance flags are no longer re-read. Every step runs even when an earlier one
// failed.
func (a *App) Stop(ctx context.Context) error {
	a.ready.Stopping() // GET /ready answers 503 from here on
	a.log.Info("shutting down: draining in-flight requests", "timeout", a.cfg.ShutdownTimeout)
	var errs []error
	// The parked long polls would hold the shutdown for their whole timeout: they answer
	// now (204), and a pop arriving before the listener closes answers at once.
	a.consume.Stop()
	if err := a.http.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("http: shutdown: %w", err))
	}
	errs = append(errs, a.stopComponents(ctx))
	return errors.Join(errs...)
}

func (a *App) stopComponents(ctx context.Context) error {
	var errs []error
	if a.keys != nil {
		a.keys.Stop()
	}
	a.ret.Stop()
	a.mesh.Stop()
	if err := a.shards.Stop(ctx, a.cfg.StatementTimeout+5*time.Second); err != nil {
		errs = append(errs, err)
	}
	a.hot.Stop()
	a.drainer.Stop()
	a.repl.Stop()
	a.reads.Stop()
	// Whatever the shutdown deadline, what fusion holds was accepted: its commits get
	// the time a statement may take.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.StatementTimeout+5*time.Second)
	defer cancel()
	if err := a.batcher.Stop(fctx); err != nil {
		errs = append(errs, err)
	}
	a.history.Stop() // after fusion: its final flush counts the last commits
	if err := a.spool.Close(); err != nil && !errors.Is(err, spool.ErrClosed) {
		errs = append(errs, err)
	}
	a.flags.Stop()
	return errors.Join(errs...)
}
