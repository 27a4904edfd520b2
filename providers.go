package queen

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/google/wire"

	"github.com/queen-go/queen/adapters/httpapi"
	"github.com/queen-go/queen/adapters/metrics"
	"github.com/queen-go/queen/adapters/pglocal"
	"github.com/queen-go/queen/adapters/postgres"
	"github.com/queen-go/queen/config"
	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/core/drain"
	"github.com/queen-go/queen/core/envelope"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/maintenance"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/core/vegas"
)

// Version is reported by /health.
const Version = "0.1.0"

// DatabaseURL is the PostgreSQL the broker uses (configured, or the embedded one).
type DatabaseURL string

// ProviderSet is shared by every injector.
var ProviderSet = wire.NewSet(
	ProvideLogger,
	ProvideDatabase,
	ProvideStore,
	ProvideCodec,
	ProvideLimiter,
	ProvideWaker,
	ProvideBatcher,
	ProvideSealer,
	ProvidePushService,
	ProvideConsumeService,
	ProvideAdmin,
	ProvideQueues,
	ProvideMaintenance,
	ProvideSpool,
	ProvideDrainer,
	ProvideHandler,
	ProvideHTTPServer,
	wire.Struct(new(App), "*"),
)

// DrainSet builds the batch-drain job: the broker's storage and fusion providers, with a
// database that must be configured (a drain job never starts an embedded PostgreSQL).
var DrainSet = wire.NewSet(
	ProvideLogger,
	ProvideConfiguredDatabase,
	ProvideStore,
	ProvideCodec,
	ProvideLimiter,
	ProvideWaker,
	ProvideBatcher,
	wire.Bind(new(DrainStore), new(*postgres.Store)),
	wire.Struct(new(DrainJob), "*"),
)

// ProvideConfiguredDatabase returns the configured database URL; the drain job has
// nothing to drain into without one.
func ProvideConfiguredDatabase(cfg config.Config) (DatabaseURL, error) {
	if cfg.Embedded() {
		return "", fmt.Errorf("no database configured: set QUEEN_PG_URL (or PG_HOST, PG_PORT, PG_USER, PG_PASSWORD, PG_DB) to the brokers' PostgreSQL")
	}
	return DatabaseURL(cfg.DatabaseURL()), nil
}

// ProvideLogger builds the process logger from LOG_LEVEL and QUEEN_LOG_JSON.
func ProvideLogger(cfg config.Config) *slog.Logger {
	hopts := &slog.HandlerOptions{Level: cfg.SlogLevel()}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, hopts)
	if cfg.LogJSON {
		h = slog.NewJSONHandler(os.Stderr, hopts)
	}
	return slog.New(h).With("server_id", cfg.ServerID)
}

// ProvideDatabase returns the configured database URL, or starts the embedded PostgreSQL
// in QUEEN_DATA_DIR/pg when none is configured (stopped by the cleanup).
func ProvideDatabase(ctx context.Context, cfg config.Config, log *slog.Logger) (DatabaseURL, func(), error) {
	if !cfg.Embedded() {
		return DatabaseURL(cfg.DatabaseURL()), func() {}, nil
	}
	dir, err := filepath.Abs(filepath.Join(cfg.DataDir, "pg"))
	if err != nil {
		return "", nil, fmt.Errorf("embedded postgres: data dir: %w", err)
	}
	log.Info("no database configured: starting the embedded PostgreSQL", "data_dir", dir)
	srv, err := pglocal.Start(ctx, dir, pglocal.Options{Logger: log})
	if err != nil {
		return "", nil, fmt.Errorf("embedded postgres: %w", err)
	}
	return DatabaseURL(srv.URL()), func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Stop(stopCtx); err != nil {
			log.Error("embedded postgres: stop", "err", err)
		}
	}, nil
}

// ProvideStore opens the pool and applies the schema (unless QUEEN_APPLY_SCHEMA=false).
func ProvideStore(ctx context.Context, url DatabaseURL, cfg config.Config, log *slog.Logger) (*postgres.Store, func(), error) {
	s, err := postgres.Open(ctx, string(url), postgres.Options{
		PoolSize: cfg.PoolSize, StatementTimeout: cfg.StatementTimeout, Logger: log,
		ApplicationName: "queen-go:" + cfg.ServerID,
	})
	if err != nil {
		return nil, nil, err
	}
	if cfg.ApplySchema {
		if err := s.Migrate(ctx); err != nil {
			s.Close()
			return nil, nil, err
		}
	}
	return s, s.Close, nil
}

// ProvideCodec builds the segment codec at QUEEN_V2_ZSTD_LEVEL.
func ProvideCodec(cfg config.Config) (*segment.Codec, error) { return segment.NewCodec(cfg.ZstdLevel) }

// ProvideLimiter builds the push lane's adaptive concurrency limit.
func ProvideLimiter(cfg config.Config) *vegas.Limiter {
	return vegas.New(vegas.Options{
		Initial: cfg.PushLimitInit, Min: cfg.PushLimitMin, Max: cfg.PushLimitMax,
		Alpha: cfg.VegasAlpha, Beta: cfg.VegasBeta,
	})
}

// ProvideBatcher starts push fusion; the cleanup commits what is pending and waits.
// Every committed segment wakes the pops parked on its queue.
func ProvideBatcher(store *postgres.Store, codec *segment.Codec, limiter *vegas.Limiter, waker *consume.Waker, cfg config.Config, log *slog.Logger) (*fusion.Batcher, func()) {
	b := fusion.New(store, codec, fusion.Options{
		Shards: cfg.FusionShards, BundleMax: cfg.BundleMax, Hold: cfg.FusionHold,
		Limiter: limiter, Logger: log.With("target", "fusion"),
		Committed: func(tenant, queue, partition string) { waker.Notify(consume.Key(tenant, queue), partition) },
	})
	return b, func() {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.StatementTimeout+5*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			log.Error("fusion: close", "err", err)
		}
	}
}

// ProvideSealer returns the payload sealer, or nil when QUEEN_ENCRYPTION_KEY is unset.
func ProvideSealer(cfg config.Config) (*envelope.Sealer, error) {
	key := cfg.EncryptionKeyBytes()
	if key == nil {
		return nil, nil
	}
	return envelope.New(key)
}

// ProvidePushService builds the push use case.
// Transactions commit on the store directly and wake parked pops like fused pushes do.
// Pushes go to the spool during push maintenance and while the drain knows the database
// is away; the items of failed bundles are spooled.
func ProvidePushService(b *fusion.Batcher, sealer *envelope.Sealer, store *postgres.Store, codec *segment.Codec, waker *consume.Waker,
	sp *spool.Spool, d *drain.Drainer, m *maintenance.Flags, cfg config.Config, log *slog.Logger) *push.Service {
	return push.New(b, push.Options{
		Sealer: sealer, Settings: store, CacheTTL: cfg.CacheRefresh, Logger: log,
		Transactions: store, Codec: codec,
		Committed:    func(tenant, queue, partition string) { waker.Notify(consume.Key(tenant, queue), partition) },
		Spool:        sp,
		Divert:       func() bool { return m.Push() || !d.Healthy() },
		BundleFailed: d.Unhealthy,
	})
}

// ProvideWaker is the wake-up channel between commits and parked pops.
func ProvideWaker() *consume.Waker { return consume.NewWaker() }

// ProvideConsumeService builds the pop/ack use case.
// Pops claim nothing during pop maintenance.
func ProvideConsumeService(store *postgres.Store, codec *segment.Codec, sealer *envelope.Sealer, waker *consume.Waker, m *maintenance.Flags, cfg config.Config, log *slog.Logger) *consume.Service {
	return consume.New(store, codec, consume.Options{
		Sealer: sealer, Waker: waker, PollInitial: cfg.PollInitial, PollThreshold: cfg.PollThreshold,
		PollMultiplier: cfg.PollMultiplier, PollMax: cfg.PollMax, Logger: log, Paused: m.Pop,
	})
}

// ProvideHandler builds the HTTP routes.
func ProvideHandler(p *push.Service, c *consume.Service, m *maintenance.Flags, qs *queues.Service, sp *spool.Spool, d *drain.Drainer,
	store *postgres.Store, b *fusion.Batcher, limiter *vegas.Limiter, cfg config.Config, log *slog.Logger) http.Handler {
	buffers := bufferStatus(sp, d)
	prom := metrics.Handler(metrics.Sources{
		Fusion: b.Stats, Push: p.Stats, PushLimit: limiter.Limit, PoolStats: store.PoolStats,
		DBCommits: store.Commits, Maintenance: m.Push,
		Spool: func() (int64, int64, bool) { st := buffers(); return st.Pending, st.Failed, st.DBHealthy },
	})
	return httpapi.New(httpapi.Services{Push: p, DB: store, Consume: c, Queues: qs, Maintenance: m, Buffers: buffers}, httpapi.Options{
		MaxBodyBytes: cfg.MaxBodyBytes, Version: Version, Logger: log,
		Pop:        httpapi.PopDefaults{Timeout: cfg.PopTimeout, SubscriptionMode: cfg.SubscriptionMode},
		Prometheus: prom, PoolStats: store.PoolStats,
	})
}

// ProvideHTTPServer builds the HTTP server (not yet listening). Its shutdown ends the
// parked long polls first: they would hold a graceful stop for their whole timeout.
func ProvideHTTPServer(cfg config.Config, h http.Handler, c *consume.Service) *http.Server {
	srv := &http.Server{
		Addr:              net.JoinHostPort(cfg.BindAddr, fmt.Sprint(cfg.Port)),
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	srv.RegisterOnShutdown(c.Stop)
	return srv
}
