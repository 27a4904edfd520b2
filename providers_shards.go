package queen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"time"

	"github.com/queen-go/queen/adapters/admin"
	"github.com/queen-go/queen/adapters/httpapi"
	"github.com/queen-go/queen/adapters/metrics"
	"github.com/queen-go/queen/adapters/postgres"
	"github.com/queen-go/queen/config"
	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/core/drain"
	"github.com/queen-go/queen/core/encryption"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/hotlist"
	"github.com/queen-go/queen/core/maintenance"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/core/peers"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/replication"
	"github.com/queen-go/queen/core/retention"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/core/shard"
	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/core/stages"
	"github.com/queen-go/queen/core/twophase"
	"github.com/queen-go/queen/core/vegas"
	"github.com/queen-go/queen/ports"
)

// Shards are the broker's databases (QUEEN_SHARDS, docs/design.md "Several PostgreSQL
// clusters"): Stores[0] is the wire graph's store (the catalogue), the others are opened
// here, one pool each, with their admin queries. With one database, Placer is nil and
// nothing routes: the broker is exactly the unsharded one.
type Shards struct {
	Stores []*postgres.Store
	Admins []*admin.Admin // Admins[0] is nil: shard 0's is the graph's
	Placer *shard.Placer
}

// Sharded reports whether there are several shards.
func (s *Shards) Sharded() bool { return s.Placer != nil }

// ProvideShards opens the databases of QUEEN_SHARDS after the first (migrated, each
// checked to be the shard its index says), reads the catalogue's placement map and
// records in it the queues the shards held before they were shards. It logs when a
// shard cannot prepare transactions (max_prepared_transactions 0): transactions across
// shards would fail.
func ProvideShards(ctx context.Context, store *postgres.Store, cfg config.Config, log *slog.Logger) (*Shards, func(), error) {
	urls := cfg.ShardURLs()
	sh := &Shards{Stores: []*postgres.Store{store}, Admins: []*admin.Admin{nil}}
	if len(urls) < 2 {
		return sh, func() {}, nil
	}
	var cleanups closers
	cleanup := cleanups.run
	for n, url := range urls[1:] {
		s, closeStore, err := openStore(ctx, url, n+1, cfg, log.With("shard", n+1))
		if err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("QUEEN_SHARDS: shard %d: %w", n+1, err)
		}
		db := s.DB()
		cleanups.add(closeStore, func() { _ = db.Close() })
		sh.Stores = append(sh.Stores, s)
		sh.Admins = append(sh.Admins, admin.New(db, adminOptions(cfg, log)))
	}
	sh.Placer = shard.NewPlacer(store, len(urls), cfg.ShardsOpen)
	if err := placeHeld(ctx, sh); err != nil {
		cleanup()
		return nil, nil, err
	}
	for n, s := range sh.Stores {
		if max, err := s.MaxPreparedTransactions(ctx); err == nil && max == 0 {
			log.Warn("max_prepared_transactions is 0 on this shard: transactions that span shards will fail until it is raised (a server restart)", "shard", n)
		}
	}
	log.Info("shards open", "shards", len(urls), "open_for_new_queues", cfg.ShardsOpen)
	return sh, cleanup, nil
}

// closers release what a provider opened, last opened first.
type closers []func()

func (c *closers) add(fs ...func()) { *c = append(*c, fs...) }

func (c *closers) run() {
	for i := len(*c) - 1; i >= 0; i-- {
		(*c)[i]()
	}
}

// placeHeld loads the placement map and records the queues every shard holds that it
// lacks (a database an unsharded broker used before).
func placeHeld(ctx context.Context, sh *Shards) error {
	if err := sh.Placer.Load(ctx); err != nil {
		return err
	}
	for n, s := range sh.Stores {
		held, err := s.HeldQueues(ctx)
		if err != nil {
			return fmt.Errorf("QUEEN_SHARDS: shard %d: list its queues: %w", n, err)
		}
		if err := sh.Placer.Backfill(ctx, held); err != nil {
			return fmt.Errorf("QUEEN_SHARDS: %w", err)
		}
	}
	return nil
}

// Routing are the ports the use cases reach the databases through: shard 0's store and
// admin queries with one database; with several, routers that send each call to the
// shard holding what it names (core/shard) and transactions through two-phase commit
// when they span shards (core/twophase).
type Routing struct {
	Consume  ports.ConsumeStore
	Hot      ports.HotlistStore
	Settings ports.QueueSettings
	Queues   ports.QueueAdmin
	Txn      ports.TransactionStore
	// The admin reads and moves: shard 0's admin queries (with its read replica), or
	// every shard's read as one database (core/shard's Resources, Groups, ...).
	Resources ports.ResourceStore
	Groups    ports.GroupStore
	Messages  ports.MessageStore
	Traces    ports.TraceStore
	Metrics   ports.MetricsReader
	// The streams routes' store, and the segment reads of their sink answers.
	Streams  ports.StreamStore
	Segments ports.SegmentStore
}

// ProvideRouting connects the use cases to the shards.
func ProvideRouting(store *postgres.Store, a *admin.Admin, sh *Shards, log *slog.Logger) Routing {
	if !sh.Sharded() {
		return Routing{Consume: store, Hot: store, Settings: store, Queues: a, Txn: store,
			Resources: a, Groups: a, Messages: a, Traces: a, Metrics: a, Streams: store, Segments: store}
	}
	stores := make([]shard.Stores, len(sh.Stores))
	txns := make([]twophase.ShardStore, len(sh.Stores))
	admins := make([]*admin.Admin, len(sh.Stores))
	for n, s := range sh.Stores {
		admins[n] = a
		if n > 0 {
			admins[n] = sh.Admins[n]
		}
		stores[n] = shard.Stores{Consume: s, Hot: s, Settings: s, Queues: admins[n]}
		txns[n] = s
	}
	r := shard.NewRouter(stores, sh.Placer)
	streams, segs := make([]ports.StreamStore, len(sh.Stores)), make([]ports.SegmentStore, len(sh.Stores))
	for n, s := range sh.Stores {
		streams[n], segs[n] = s, s
	}
	st := shard.NewStreams(streams, segs, sh.Placer)
	coord := twophase.NewCoordinator(store, twophase.Options{Logger: log.With("target", "twophase")})
	return Routing{Consume: r, Hot: r, Settings: r, Queues: r, Txn: twophase.NewRouter(txns, sh.Placer.ShardOfPushed, coord),
		Resources: shard.NewResources(each[ports.ResourceStore](admins), sh.Placer),
		Groups:    shard.NewGroups(each[ports.GroupStore](admins), sh.Placer),
		Messages:  shard.NewMessages(each[ports.MessageStore](admins), sh.Placer),
		Traces:    shard.NewTraces(each[ports.TraceStore](admins)),
		Metrics:   shard.NewAnalytics(each[ports.MetricsReader](admins)),
		Streams:   st,
		Segments:  st,
	}
}

// each is the shards' admin queries as the port T.
func each[T any](admins []*admin.Admin) []T {
	out := make([]T, len(admins))
	for n, a := range admins {
		out[n] = any(a).(T)
	}
	return out
}

// ShardStacks are what each shard after the first runs for this broker besides its
// pool: push fusion, the spool and its replay (in a directory of its own), the peer
// hints, retention, and the replication check that may hold its pushes; and, with
// several shards, the recovery of cross-shard transactions a crash left prepared.
// Shard 0's are the wire graph's own.
type ShardStacks struct {
	stacks   []*shardStack
	recovery *twophase.Recovery // nil with one shard
}

type shardStack struct {
	limiter *vegas.Limiter
	batcher *fusion.Batcher
	spool   *spool.Spool
	drainer *drain.Drainer
	mesh    *peers.Mesh
	ret     *retention.Job
	repl    *replication.Check
	push    *push.Service
}

// shardDeps are the components every shard's stack shares.
type shardDeps struct {
	codec   *segment.Codec
	commits *notify.Commits
	changes *notify.QueueChanges
	timers  *stages.Timers
	enc     *encryption.Policy
	flags   *maintenance.Flags
	consume *consume.Service
	hot     *hotlist.List
	act     ports.Activity
}

// ProvideShardStacks builds the stacks of the shards after the first.
func ProvideShardStacks(sh *Shards, codec *segment.Codec, commits *notify.Commits, changes *notify.QueueChanges,
	timers *stages.Timers, enc *encryption.Policy, flags *maintenance.Flags, c *consume.Service, hot *hotlist.List,
	act ports.Activity, cfg config.Config, log *slog.Logger) (*ShardStacks, func(), error) {
	out := &ShardStacks{}
	if !sh.Sharded() {
		return out, func() {}, nil
	}
	deps := shardDeps{codec: codec, commits: commits, changes: changes, timers: timers, enc: enc, flags: flags,
		consume: c, hot: hot, act: act}
	var cleanups closers
	cleanup := cleanups.run
	for n := 1; n < len(sh.Stores); n++ {
		st, closeSpool, err := newShardStack(n, sh, deps, cfg, log.With("shard", n))
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		cleanups.add(closeSpool)
		out.stacks = append(out.stacks, st)
	}
	parts := make([]ports.TwoPhaseStore, len(sh.Stores))
	for n, s := range sh.Stores {
		parts[n] = s
	}
	out.recovery = twophase.NewRecovery(parts, sh.Stores[0], twophase.RecoveryOptions{
		Grace: cfg.StatementTimeout, Logger: log.With("target", "twophase"),
	})
	return out, cleanup, nil
}

func newShardStack(n int, sh *Shards, d shardDeps, cfg config.Config, log *slog.Logger) (*shardStack, func(), error) {
	store := sh.Stores[n]
	dirs := cfg.SpoolDirs()
	for i, dir := range dirs {
		dirs[i] = filepath.Join(dir, "shard-"+strconv.Itoa(n))
	}
	sp, closeSpool, err := openSpool(dirs, cfg, log)
	if err != nil {
		return nil, nil, fmt.Errorf("shard %d: %w", n, err)
	}
	limiter := ProvideLimiter(cfg)
	b := ProvideBatcher(store, d.codec, limiter, d.commits, d.changes, d.timers, cfg, log)
	repl := ProvideReplication(store, cfg, log)
	dr := ProvideDrainer(sp, b, d.enc, store, d.flags, repl, cfg, log)
	gate := ProvideGate(dr, d.flags, repl)
	// Transactions run on shard 0's service (core/twophase): this one takes none.
	p := ProvidePushService(b, d.enc, nil, d.codec, d.commits, sp, gate, d.consume, d.act, nil, log)
	m := newPeers(store, n, d.hot, d.commits, d.changes, sh, cfg, log)
	st := &shardStack{limiter: limiter, batcher: b, spool: sp, drainer: dr, mesh: m, ret: ProvideRetention(store, d.act, cfg, log),
		repl: repl, push: p}
	return st, closeSpool, nil
}

// SpoolStatus is the status of the broker's spools, every shard's as one.
type SpoolStatus func() drain.Status

// ProvideSpoolStatus reports shard 0's spool with one database, every shard's added up
// with several (GET /api/v1/status's buffers, queen_file_buffer_*, GET /ready, the
// dashboard).
func ProvideSpoolStatus(d *drain.Drainer, stacks *ShardStacks) SpoolStatus {
	if len(stacks.stacks) == 0 {
		return d.Status
	}
	return func() drain.Status {
		sts := []drain.Status{d.Status()}
		for _, st := range stacks.stacks {
			sts = append(sts, st.drainer.Status())
		}
		return drain.Combine(sts...)
	}
}

// FusionStats is push fusion's statistics, every shard's as one.
type FusionStats func() fusion.Stats

// ProvideFusionStats reports shard 0's batcher with one database, every shard's added up
// with several (queen_fusion_*).
func ProvideFusionStats(b *fusion.Batcher, stacks *ShardStacks) FusionStats {
	if len(stacks.stacks) == 0 {
		return b.Stats
	}
	return func() fusion.Stats {
		sts := []fusion.Stats{b.Stats()}
		for _, st := range stacks.stacks {
			sts = append(sts, st.batcher.Stats())
		}
		return fusion.Combine(sts...)
	}
}

// ShardReadings is every shard's figures for the queen_shard_* metrics; nil with one
// database.
type ShardReadings func() []metrics.ShardReading

// ProvideShardReadings reads shard 0's components and every other shard's stack.
func ProvideShardReadings(sh *Shards, stacks *ShardStacks, b *fusion.Batcher, d *drain.Drainer, limiter *vegas.Limiter) ShardReadings {
	if !sh.Sharded() {
		return nil
	}
	reading := func(n int, b *fusion.Batcher, d *drain.Drainer, l *vegas.Limiter) metrics.ShardReading {
		f, st := b.Stats(), d.Status()
		return metrics.ShardReading{Shard: n, Pool: sh.Stores[n].PoolStat(), Commits: f.Commits, Frames: f.Frames,
			SpoolPending: st.Pending, DBHealthy: st.DBHealthy, PushLimit: l.Limit()}
	}
	return func() []metrics.ShardReading {
		out := []metrics.ShardReading{reading(0, b, d, limiter)}
		for i, st := range stacks.stacks {
			out = append(out, reading(i+1, st.batcher, st.drainer, st.limiter))
		}
		return out
	}
}

// SpooledAhead is what the transactions and the streams sinks ask before they push to a
// partition: whether its pushes spooled earlier are not replayed yet (push.Options).
type SpooledAhead func(tenant, queue, partition string) bool

// ProvideSpooledAhead asks shard 0's spool with one database (nil: push's default);
// with several, the spool of the partition's shard: transactions and sinks run on shard
// 0's push service whatever shard they push to.
func ProvideSpooledAhead(sp *spool.Spool, stacks *ShardStacks, sh *Shards) SpooledAhead {
	if !sh.Sharded() {
		return nil
	}
	spools := []*spool.Spool{sp}
	for _, st := range stacks.stacks {
		spools = append(spools, st.spool)
	}
	return shard.Spooled(sh.Placer, spools)
}

// ProvidePusher is what the push and transaction routes call: shard 0's push service
// with one database; with several, the router that sends each item to its queue's shard.
func ProvidePusher(p *push.Service, stacks *ShardStacks, sh *Shards) httpapi.Pusher {
	if !sh.Sharded() {
		return p
	}
	services := []*push.Service{p}
	for _, st := range stacks.stacks {
		services = append(services, st.push)
	}
	return shard.NewPushers(services, p, sh.Placer)
}

// Start starts every shard's components (after shard 0's, App.Start).
func (s *ShardStacks) Start(ctx context.Context) {
	for _, st := range s.stacks {
		st.repl.Start(ctx)
		st.batcher.Start()
		st.spool.Start()
		st.drainer.Start()
		st.mesh.Start()
		st.ret.Start()
	}
	if s.recovery != nil {
		s.recovery.Start(context.WithoutCancel(ctx))
	}
}

// Stop stops them as App.Stop stops shard 0's: what fusion holds commits within
// timeout whatever ctx says, then the spool is flushed and closed.
func (s *ShardStacks) Stop(ctx context.Context, timeout time.Duration) error {
	if s.recovery != nil {
		s.recovery.Stop()
	}
	var errs []error
	for _, st := range s.stacks {
		st.ret.Stop()
		st.mesh.Stop()
		st.drainer.Stop()
		st.repl.Stop()
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		if err := st.batcher.Stop(fctx); err != nil {
			errs = append(errs, err)
		}
		cancel()
		if err := st.spool.Close(); err != nil && !errors.Is(err, spool.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
