package queen

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"time"

	"github.com/google/wire"

	"github.com/queen-go/queen/adapters/httpapi"
	"github.com/queen-go/queen/adapters/metrics"
	"github.com/queen-go/queen/adapters/pglocal"
	"github.com/queen-go/queen/adapters/postgres"
	"github.com/queen-go/queen/config"
	adminapi "github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/core/auth"
	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/core/drain"
	"github.com/queen-go/queen/core/encryption"
	"github.com/queen-go/queen/core/envelope"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/history"
	"github.com/queen-go/queen/core/hotlist"
	"github.com/queen-go/queen/core/loglimit"
	"github.com/queen-go/queen/core/maintenance"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/core/peers"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/core/readiness"
	"github.com/queen-go/queen/core/replication"
	"github.com/queen-go/queen/core/retention"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/core/stages"
	"github.com/queen-go/queen/core/streams"
	"github.com/queen-go/queen/core/vegas"
	"github.com/queen-go/queen/ports"
)

// Version is reported by /health.
const Version = "0.1.0"

// DatabaseURL is the PostgreSQL the broker uses (configured, or the embedded one).
type DatabaseURL string

// Providers build components and connect them; they start no goroutine of ours (App.Start
// does). Resources (the embedded PostgreSQL, the pool, the spool directory's lock) are
// opened here and released by the injector's cleanup.

// ProviderSet builds the broker.
var ProviderSet = wire.NewSet(
	storageSet,
	ProvideDatabase,
	ProvideWaker,
	ProvideHotlist,
	ProvidePeers,
	ProvideSealer,
	ProvideEncryption,
	ProvidePushService,
	ProvideConsumeService,
	ProvideAdminDB,
	ProvideReadRouter,
	ProvideAdmin,
	ProvideQueues,
	ProvideMaintenance,
	ProvideSpool,
	ProvideDrainer,
	ProvideGate,
	ProvideResources,
	ProvideGroupChanges,
	ProvideGroups,
	ProvideMessages,
	ProvideTraces,
	ProvideStreams,
	ProvideRetention,
	ProvideHistory,
	ProvideActivity,
	ProvideAnalytics,
	ProvideDashboard,
	ProvideKeySet,
	ProvideVerifier,
	ProvideReadiness,
	ProvideReplication,
	ProvideHandler,
	ProvideHTTPServer,
	ProvideShards,
	ProvideRouting,
	wire.FieldsOf(new(Routing), "Consume", "Hot", "Settings", "Queues", "Txn", "Resources", "Groups", "Messages", "Traces",
		"Metrics", "Streams", "Segments"),
	ProvideShardStacks,
	ProvideSpoolStatus,
	ProvideFusionStats,
	ProvideSpooledAhead,
	ProvideShardReadings,
	ProvidePusher,
	NewApp,
)

// storageSet is what the broker and the drain job share: the pool and push fusion.
var storageSet = wire.NewSet(
	ProvideLogger,
	ProvideStore,
	ProvideCodec,
	ProvideLimiter,
	ProvideStages,
	ProvideCommits,
	ProvideQueueChanges,
	ProvideBatcher,
)

// DrainSet builds the batch-drain job: the broker's storage and fusion providers, with a
// database that must be configured (a drain job never starts an embedded PostgreSQL).
var DrainSet = wire.NewSet(
	storageSet,
	ProvideConfiguredDatabase,
	wire.Bind(new(ports.QueueSettings), new(*postgres.Store)),
	ProvideSealer,
	ProvideEncryption,
	ProvideDrainJob,
)

// ProvideLogger builds the process logger from LOG_LEVEL and LOG_FORMAT (or Queen's
// QUEEN_LOG_JSON).
func ProvideLogger(cfg config.Config) *slog.Logger {
	hopts := &slog.HandlerOptions{Level: cfg.SlogLevel()}
	var h slog.Handler = slog.NewJSONHandler(cfg.LogOutput(), hopts)
	if cfg.LogFormat == "text" {
		h = slog.NewTextHandler(cfg.LogOutput(), hopts)
	}
	// A line that names its cause repeats at most 5 times per 10 s, then is summarised:
	// a failing database or a misconfiguration must not flood the log, line per request.
	h = loglimit.NewHandler(h, loglimit.Options{Lines: 5, Interval: 10 * time.Second})
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

// ProvideStore opens the pool and applies the schema (unless QUEEN_APPLY_SCHEMA=false),
// at once or, when the database is unreachable, as soon as it answers.
func ProvideStore(ctx context.Context, url DatabaseURL, cfg config.Config, log *slog.Logger) (*postgres.Store, func(), error) {
	return openStore(ctx, string(url), 0, cfg, log)
}

// openStore opens the pool of shard n's database and applies the schema (unless
// QUEEN_APPLY_SCHEMA=false), which also checks that the database is shard n.
func openStore(ctx context.Context, url string, n int, cfg config.Config, log *slog.Logger) (*postgres.Store, func(), error) {
	s, err := postgres.Open(ctx, url, postgres.Options{
		PoolSize: cfg.PoolSize, StatementTimeout: cfg.StatementTimeout, Logger: log,
		ApplicationName: "queen-go:" + cfg.ServerID, Shard: n,
	})
	if err != nil {
		return nil, nil, err
	}
	if cfg.ApplySchema {
		if err := s.EnsureSchema(ctx); err != nil {
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

// ProvideCommits is the commit notification topic.
func ProvideCommits() *notify.Commits { return notify.NewCommits() }

// ProvideQueueChanges is the queue-change notification topic.
func ProvideQueueChanges() *notify.QueueChanges { return notify.NewQueueChanges() }

// ProvideBatcher builds push fusion; it announces its commits and forgets a queue's
// dedup state when the queue changes.
func ProvideBatcher(store *postgres.Store, codec *segment.Codec, limiter *vegas.Limiter, commits *notify.Commits,
	changes *notify.QueueChanges, timers *stages.Timers, cfg config.Config, log *slog.Logger) *fusion.Batcher {
	b := fusion.New(store, codec, fusion.Options{
		Shards: cfg.FusionShards, BundleMax: cfg.BundleMax, Hold: cfg.FusionHold,
		Limiter: limiter, Logger: log.With("target", "fusion"), Commits: commits,
		CacheBytes: cfg.DedupCacheBytes(), Stages: timers,
	})
	changes.Subscribe(b.QueueChanged)
	return b
}

// ProvideSealer returns the payload sealer, or nil when QUEEN_ENCRYPTION_KEY is unset:
// it seals with that key and also opens with QUEEN_ENCRYPTION_KEY_OLD (key rotation).
func ProvideSealer(cfg config.Config) (*envelope.Sealer, error) {
	key := cfg.EncryptionKeyBytes()
	if key == nil {
		return nil, nil
	}
	var old [][]byte
	if k := cfg.EncryptionKeyOldBytes(); k != nil {
		old = append(old, k)
	}
	s, err := envelope.New(key, old...)
	if err != nil {
		return nil, fmt.Errorf("QUEEN_ENCRYPTION_KEY: %w", err)
	}
	return s, nil
}

// ProvideEncryption is the encryption policy every write path shares (pushes,
// transactions, spool replay): it reads the queues' flags from the store, caches them for
// QUEEN_CACHE_REFRESH_INTERVAL_MS, and forgets a queue's flag when the queue changes, on
// this broker or, announced by the peer mesh (ProvidePeers), on another.
func ProvideEncryption(sealer *envelope.Sealer, store ports.QueueSettings, changes *notify.QueueChanges, cfg config.Config,
	log *slog.Logger) *encryption.Policy {
	p := encryption.New(sealer, store, encryption.Options{CacheTTL: cfg.CacheRefresh, Logger: log})
	changes.Subscribe(p.QueueChanged)
	return p
}

// ProvidePushService builds the push use case: pushes through fusion, transactions on
// the store, the spool behind the gate, payloads prepared by the encryption policy.
func ProvidePushService(b *fusion.Batcher, enc *encryption.Policy, txns ports.TransactionStore, codec *segment.Codec,
	commits *notify.Commits, sp *spool.Spool, gate *drain.Gate, c *consume.Service, act ports.Activity, ahead SpooledAhead,
	log *slog.Logger) *push.Service {
	return push.New(b, push.Options{
		Encryption: enc, Logger: log, Activity: act,
		Transactions: txns, Codec: codec, Commits: commits, AcksApplied: c.Applied,
		Spool: sp, Divert: gate.Divert, BundleFailed: gate.BundleFailed, SpooledAhead: ahead,
	})
}

// ProvideStages is the push and pop stage timers every component on those paths feeds
// and the Prometheus exporter reads.
func ProvideStages() *stages.Timers { return stages.New() }

// ProvideWaker is where parked pops wait; the hot-list wakes them.
func ProvideWaker() *consume.Waker { return consume.NewWaker() }

// ProvideHotlist builds the hot-list (QUEEN_HOTLIST): it hears of every commit and queue
// change, and wakes the parked pops (at once when it is off).
func ProvideHotlist(store ports.HotlistStore, waker *consume.Waker, commits *notify.Commits, changes *notify.QueueChanges,
	timers *stages.Timers, cfg config.Config, log *slog.Logger) *hotlist.List {
	l := hotlist.New(store, hotlist.Options{
		Enabled: cfg.Hotlist, Wake: waker.Notify, Shards: cfg.HotlistShards, WindowBatch: cfg.HotlistWindowBatch,
		Reseed: cfg.HotlistReseed, IdleSweep: cfg.HotlistIdleSweep, StatementTimeout: cfg.StatementTimeout,
		TopN: cfg.LogTopNQueues, Trace: cfg.HotlistTrace, Logger: log, Stages: timers,
	})
	commits.Subscribe(l.Committed)
	changes.Subscribe(l.QueueChanged)
	return l
}

// ProvidePeers builds the hints exchanged with the other brokers on the database: this
// broker's commits go out and the others' reach the hot-list (QUEEN_PEER_HINTS), and
// every queue change goes out and the others' are announced here, whatever
// QUEEN_PEER_HINTS says, so every cache of a queue's options (the encryption flag,
// fusion's dedup state, the hot-list, the admin listings) forgets a queue configured or
// deleted on another broker at once instead of after QUEEN_CACHE_REFRESH_INTERVAL_MS.
func ProvidePeers(store *postgres.Store, hot *hotlist.List, commits *notify.Commits, changes *notify.QueueChanges,
	sh *Shards, cfg config.Config, log *slog.Logger) *peers.Mesh {
	return newPeers(store, 0, hot, commits, changes, sh, cfg, log)
}

// newPeers is shard n's mesh: with several shards, each shard's announces the commits
// and queue changes of its own queues only (every broker listens on every shard).
func newPeers(store *postgres.Store, n int, hot *hotlist.List, commits *notify.Commits, changes *notify.QueueChanges,
	sh *Shards, cfg config.Config, log *slog.Logger) *peers.Mesh {
	m := peers.New(store, hot, peers.Options{Enabled: cfg.PeerHints, Changes: changes, Logger: log})
	if !sh.Sharded() {
		commits.Subscribe(m.Committed)
		changes.Subscribe(m.QueueChanged)
		return m
	}
	commits.Subscribe(func(c notify.Commit) {
		if sh.Placer.Owner(c.Tenant, c.Queue, c.PartitionID) == n {
			m.Committed(c)
		}
	})
	changes.Subscribe(func(c notify.QueueChange) {
		if sh.Placer.Owner(c.Tenant, c.Queue, "") == n {
			m.QueueChanged(c)
		}
	})
	return m
}

// ProvideConsumeService builds the pop/ack use case; pops claim nothing during pop
// maintenance.
func ProvideConsumeService(store ports.ConsumeStore, codec *segment.Codec, sealer *envelope.Sealer, waker *consume.Waker,
	hot *hotlist.List, commits *notify.Commits, m *maintenance.Flags, act ports.Activity, timers *stages.Timers,
	cfg config.Config, log *slog.Logger) *consume.Service {
	return consume.New(store, codec, consume.Options{
		Sealer: sealer, Waker: waker, Hot: hot, Commits: commits, Paused: m.Pop, Activity: act, Stages: timers,
		DefaultTimeout: cfg.PopTimeout, DefaultSubscription: cfg.SubscriptionMode,
		PollInitial: cfg.PollInitial, PollThreshold: cfg.PollThreshold,
		PollMultiplier: cfg.PollMultiplier, PollMax: cfg.PollMax, Logger: log,
	})
}

// ProvideReplication judges the database's replication set-up (start-up line,
// queen_pg_sync_replication) and, with QUEEN_REQUIRE_SYNC_REPLICATION, holds pushes out of
// the database while no synchronous standby is attached.
func ProvideReplication(store *postgres.Store, cfg config.Config, log *slog.Logger) *replication.Check {
	return replication.New(store, replication.Options{Require: cfg.RequireSyncReplication, Logger: log})
}

// ProvideReadiness builds GET /ready's check over the database and the spool's writes.
func ProvideReadiness(store *postgres.Store, spools SpoolStatus, repl *replication.Check) *readiness.Check {
	failedAt := func() time.Time { return spools().SpoolWriteFailedAt }
	return readiness.New(store, failedAt, readiness.Options{Held: repl.HeldReason})
}

// ProvideHandler builds the HTTP routes and the Prometheus exporter; every answered
// request feeds the request metrics.
func ProvideHandler(p httpapi.Pusher, c *consume.Service, m *maintenance.Flags, qs *queues.Service, spools SpoolStatus,
	store *postgres.Store, fusionStats FusionStats, limiter *vegas.Limiter, hot *hotlist.List, mesh *peers.Mesh,
	waker *consume.Waker, resources *adminapi.Resources, groups *adminapi.Groups, messages *adminapi.Messages,
	traces *adminapi.Traces, an *adminapi.Analytics, ui UI, st *streams.Service, ret *retention.Job, rec *history.Recorder,
	verifier *auth.Verifier, ready *readiness.Check, timers *stages.Timers, repl *replication.Check,
	reads *replication.ReadRouter, shardReadings ShardReadings, cfg config.Config, log *slog.Logger) http.Handler {
	requests := metrics.NewRequests()
	var replicaLag func() (time.Duration, bool) // queen_pg_replica_lag_seconds, with QUEEN_PG_READ_URL only
	if reads.Configured() {
		replicaLag = reads.Lag
	}
	prom := metrics.Handler(metrics.Sources{
		Fusion: fusionStats, Push: p.Stats, PushLimit: limiter.Limit, Consume: c.Stats,
		Pool:      store.PoolStat,
		DBCommits: store.Commits, OldestXact: store.OldestXactAge, SyncReplication: repl.Sync, ReplicaLag: replicaLag, Maintenance: m.Push, PopMaintenance: m.Pop, Spool: spools,
		Hotlist: hot.Stats, Peers: mesh.Stats, Parked: waker.Parked, Retention: ret.Stats, History: rec.Stats, Requests: requests,
		Stages: timers, Shards: shardReadings,
	})
	return httpapi.New(httpapi.Services{Push: p, DB: store, Consume: c, Queues: qs, Maintenance: m, Buffers: spools,
		Resources: resources, Groups: groups, Messages: messages, Traces: traces, Analytics: an, Streams: st},
		httpapi.Options{MaxBodyBytes: cfg.MaxBodyBytes, MaxPushItems: cfg.MaxPushItems, Version: Version, Logger: log, Prometheus: prom,
			PoolStats: store.PoolStats, Auth: verifier, SkipPaths: cfg.JWTSkipPaths, AccessLog: cfg.AccessLog,
			Observers: []httpapi.Observer{requests, rec}, Ready: ready.Ready, OpenAPI: OpenAPI(),
			UI: uiHandler(ui), UIRoutes: ui.Routes, Stages: timers})
}

// ProvideHTTPServer builds the HTTP server (App.Start listens, App.Stop shuts it down).
func ProvideHTTPServer(cfg config.Config, h http.Handler) *http.Server {
	srv := httpapi.NewServer(cfg.Addr(), h)
	srv.ReadTimeout = cfg.ReadTimeout
	return srv
}
