package config

import (
	"fmt"
	"testing"

	"github.com/queen-go/queen/adapters/admin"
	"github.com/queen-go/queen/adapters/httpapi"
	"github.com/queen-go/queen/adapters/jwks"
	"github.com/queen-go/queen/adapters/postgres"
	"github.com/queen-go/queen/core/auth"
	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/core/drain"
	"github.com/queen-go/queen/core/encryption"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/history"
	"github.com/queen-go/queen/core/hotlist"
	"github.com/queen-go/queen/core/maintenance"
	"github.com/queen-go/queen/core/replication"
	"github.com/queen-go/queen/core/retention"
	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/core/vegas"
	"github.com/queen-go/queen/ports"
)

// TestDefaultsAgreeWithCore: where a core package or an adapter has a default of its own for what a
// variable sets (so that its tests and tools need no configuration), the variable's
// default is that same value. Change one, and this fails until the other follows.
func TestDefaultsAgreeWithCore(t *testing.T) {
	t.Parallel()
	c, err := Parse(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		variable  string
		got, core any
	}{
		{"QUEEN_V2_FUSION_SHARDS", c.FusionShards, fusion.DefaultShards},
		{"QUEEN_V2_BUNDLE_MAX", c.BundleMax, fusion.DefaultBundleMax},
		{"QUEEN_V2_FUSION_HOLD_MS", c.FusionHold, fusion.DefaultHold},
		{"QUEEN_DEDUP_CACHE_MB", c.DedupCacheBytes(), int64(fusion.DefaultCacheBytes)},
		{"QUEEN_VEGAS_ALPHA", c.VegasAlpha, vegas.DefaultAlpha},
		{"QUEEN_VEGAS_BETA", c.VegasBeta, vegas.DefaultBeta},
		{"QUEEN_CACHE_REFRESH_INTERVAL_MS", c.CacheRefresh, encryption.DefaultCacheTTL},
		{"DEFAULT_TIMEOUT", c.PopTimeout, consume.DefaultTimeout},
		{"DEFAULT_SUBSCRIPTION_MODE", c.SubscriptionMode, ports.SubscribeAll},
		{"POP_WAIT_INITIAL_INTERVAL_MS", c.PollInitial, consume.DefaultPollInitial},
		{"POP_WAIT_BACKOFF_THRESHOLD", c.PollThreshold, consume.DefaultPollThreshold},
		{"POP_WAIT_BACKOFF_MULTIPLIER", c.PollMultiplier, consume.DefaultPollMultiplier},
		{"POP_WAIT_MAX_INTERVAL_MS", c.PollMax, consume.DefaultPollMax},
		{"QUEEN_HOTLIST_SHARDS", c.HotlistShards, hotlist.DefaultShards},
		{"QUEEN_HOTLIST_WINDOW_BATCH", c.HotlistWindowBatch, hotlist.DefaultWindowBatch},
		{"QUEEN_HOTLIST_RESEED_MS", c.HotlistReseed, hotlist.DefaultReseed},
		{"QUEEN_LOG_TOPN_QUEUES", c.LogTopNQueues, hotlist.DefaultTopN},
		{"FILE_BUFFER_FLUSH_MS", c.SpoolFlush, drain.DefaultInterval},
		{"FILE_BUFFER_MAX_BATCH", c.SpoolBatch, drain.DefaultMaxBatch},
		{"FILE_BUFFER_EVENTS_PER_FILE", c.SpoolPerFile, spool.DefaultEventsPerFile},
		{"QUEEN_MAINTENANCE_REFRESH_MS", c.MaintenanceRefresh, maintenance.DefaultRefresh},
		{"RETENTION_INTERVAL", c.RetentionInterval, retention.DefaultInterval},
		{"METRICS_FLUSH_MS", c.MetricsFlush, history.DefaultFlush},
		{"QUEEN_READ_MAX_LAG_MS", c.ReadMaxLag, replication.DefaultMaxReadLag},
		{"RETENTION_BATCH_SIZE", c.RetentionBatch, retention.DefaultBatchSize},
		{"RETENTION_PARALLELISM", c.RetentionParallel, retention.DefaultParallelism},
		{"METRICS_RETENTION_DAYS", c.MetricsRetentionPeriod(), retention.DefaultMetricsRetention},
		{"JWT_ALGORITHM", c.JWTAlgorithm, auth.DefaultAlgorithm},
		{"JWT_CLOCK_SKEW", c.JWTLeeway(), auth.DefaultClockSkew},
		{"JWT_ROLES_CLAIM", c.JWTRolesClaim, auth.DefaultRolesClaim},
		{"JWT_ROLES_ARRAY_CLAIM", c.JWTRolesArrayClaim, auth.DefaultRolesArrayClaim},
		{"JWT_ROLE_*", auth.RoleNames{Admin: c.JWTRoleAdmin, ReadWrite: c.JWTRoleReadWrite, ReadOnly: c.JWTRoleReadOnly,
			WriteOnly: c.JWTRoleWriteOnly}, auth.DefaultRoleNames},
		// The adapters' own defaults, for their tests and tools.
		{"DB_POOL_SIZE", c.PoolSize, postgres.DefaultPoolSize},
		{"DB_STATEMENT_TIMEOUT (postgres)", c.StatementTimeout, postgres.DefaultStatementTimeout},
		{"DB_STATEMENT_TIMEOUT (admin)", c.StatementTimeout, admin.DefaultStatementTimeout},
		{"QUEEN_MAX_BODY_BYTES", c.MaxBodyBytes, int64(httpapi.DefaultMaxBodyBytes)},
		{"QUEEN_MAX_PUSH_ITEMS", c.MaxPushItems, httpapi.DefaultMaxPushItems},
		{"JWT_JWKS_REFRESH_INTERVAL", c.JWTRefresh(), jwks.DefaultRefresh},
		{"JWT_JWKS_TIMEOUT_MS", c.JWTJWKSTimeout, jwks.DefaultTimeout},
	}
	for _, tt := range tests {
		// Compare values of one type: an untyped constant of core is an int or a float64.
		if fmt.Sprintf("%T %v", tt.got, tt.got) != fmt.Sprintf("%T %v", tt.core, tt.core) {
			t.Errorf("%s defaults to %T %v; core's default is %T %v", tt.variable, tt.got, tt.got, tt.core, tt.core)
		}
	}
}
