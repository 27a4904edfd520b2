package config

import (
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/queen-go/queen/core/auth"
)

// Config is the server configuration. Every exported field is read from the
// environment variable named in its env tag; see the package documentation
// for the meaning of the other tags.
type Config struct {
	// Server.

	Port             int           `env:"PORT" envDefault:"6632" min:"0" max:"65535" section:"Server" help:"HTTP port the server listens on; 0 picks a free port (the start-up log line names it)."`
	BindAddr         string        `env:"QUEEN_BIND_ADDR" envDefault:"0.0.0.0" section:"Server" help:"Host name or IP address the HTTP server binds to."`
	MaxBodyBytes     int64         `env:"QUEEN_MAX_BODY_BYTES" envDefault:"67108864" min:"1" section:"Server" help:"Largest accepted HTTP request body, in bytes."`
	MaxPushItems     int           `env:"QUEEN_MAX_PUSH_ITEMS" envDefault:"10000" min:"1" section:"Server" help:"Most items one push request may carry; a push of more is answered 413."`
	ReadTimeout      time.Duration `env:"QUEEN_READ_TIMEOUT_MS" envDefault:"60000" min:"1" section:"Server" help:"How long a request, headers and body, may take to arrive, in milliseconds: a body still arriving then is answered 408 and its connection closed, so a client trickling a body cannot hold a connection. Long polls are not affected: they wait after their request has arrived."`
	ServerID         string        `env:"QUEEN_SERVER_ID" envDefault:"queen" defaultFrom:"HOSTNAME" section:"Server" help:"Identifier of this server instance, used in logs and status output."`
	ShutdownTimeout  time.Duration `env:"QUEEN_SHUTDOWN_TIMEOUT_MS" envDefault:"30000" min:"0" section:"Server" help:"How long SIGTERM waits for in-flight requests to finish before the server exits; 0 does not wait."`
	EncryptionKey    string        `env:"QUEEN_ENCRYPTION_KEY" envDefault:"" check:"aes256key" section:"Server" help:"AES-256 key of payload encryption: payloads of queues with encryptionEnabled are sealed with it. Without it, pushes to such queues are refused (never stored in plaintext) and their stored payloads read as null. An invalid key is a start-up error."`
	EncryptionKeyOld string        `env:"QUEEN_ENCRYPTION_KEY_OLD" envDefault:"" check:"aes256key" section:"Server" help:"The previous AES-256 key while the key is rotated: it only decrypts payloads sealed before the rotation (new ones are sealed with QUEEN_ENCRYPTION_KEY, which must be set too). Remove it once every message sealed with it has been consumed and removed or has expired. An invalid key is a start-up error."`
	CacheRefresh     time.Duration `env:"QUEEN_CACHE_REFRESH_INTERVAL_MS" envDefault:"60000" min:"1" section:"Server" help:"How often per-queue flags (such as encryptionEnabled) are re-read from the database."`
	AdminShare       time.Duration `env:"QUEEN_ADMIN_SHARE_MS" envDefault:"1000" min:"0" section:"Server" help:"How long one read of a tenant-wide admin listing (queue lists, the overview, consumer groups) answers every identical request, in milliseconds: dashboards polling often then cost the database one read per period. Changes made through this broker show at once; pushes, pops and acks within the period. 0 reads on every request."`
	PprofAddr        string        `env:"QUEEN_PPROF_ADDR" envDefault:"" section:"Server" help:"When set (host:port), serve Go's net/http/pprof profiles under /debug/pprof/ on their own listener at that address, for profiling; empty (the default): off. Bind it to a loopback address: it has no authentication."`

	// Database.

	PGURL                  string        `env:"QUEEN_PG_URL" envDefault:"" check:"pgurl" section:"Database" help:"PostgreSQL connection URL. When neither it nor any of PG_HOST, PG_PORT, PG_USER, PG_PASSWORD, PG_DATABASE, PG_DB is set, an embedded PostgreSQL is started in QUEEN_DATA_DIR."`
	PGHost                 string        `env:"PG_HOST" envDefault:"localhost" conn:"part" section:"Database" help:"PostgreSQL host, used when QUEEN_PG_URL is empty."`
	PGPort                 int           `env:"PG_PORT" envDefault:"5432" min:"1" max:"65535" conn:"part" section:"Database" help:"PostgreSQL port, used when QUEEN_PG_URL is empty."`
	PGUser                 string        `env:"PG_USER" envDefault:"postgres" conn:"part" section:"Database" help:"PostgreSQL user, used when QUEEN_PG_URL is empty."`
	PGPassword             string        `env:"PG_PASSWORD" envDefault:"postgres" conn:"part" secret:"true" section:"Database" help:"PostgreSQL password, used when QUEEN_PG_URL is empty."`
	PGDatabase             string        `env:"PG_DATABASE" alias:"PG_DB" envDefault:"postgres" conn:"part" section:"Database" help:"PostgreSQL database name, used when QUEEN_PG_URL is empty; PG_DB is read when PG_DATABASE is unset."`
	PGUseSSL               bool          `env:"PG_USE_SSL" envDefault:"false" section:"Database" help:"Connect with sslmode=require instead of sslmode=disable (PG_* parts only)."`
	DataDir                string        `env:"QUEEN_DATA_DIR" envDefault:"./.queen" section:"Database" help:"Data directory of the embedded PostgreSQL (and later of the spool)."`
	PoolSize               int           `env:"DB_POOL_SIZE" envDefault:"160" min:"2" section:"Database" help:"Maximum number of pooled PostgreSQL connections."`
	StatementTimeout       time.Duration `env:"DB_STATEMENT_TIMEOUT" alias:"QUEEN_STMT_TIMEOUT_MS" envDefault:"30000" min:"1" section:"Database" help:"PostgreSQL statement_timeout of the server's queries; QUEEN_STMT_TIMEOUT_MS is read when DB_STATEMENT_TIMEOUT is unset."`
	ApplySchema            bool          `env:"QUEEN_APPLY_SCHEMA" envDefault:"true" section:"Database" help:"Create or upgrade the database schema at start-up."`
	RequireSyncReplication bool          `env:"QUEEN_REQUIRE_SYNC_REPLICATION" envDefault:"false" section:"Database" help:"Answer queued only while the database has a synchronous standby attached (re-checked every 2 s): without one, pushes go to the spool (buffered) and its replay waits, and the log and GET /ready say why. An acknowledged push then survives a failover to that standby."`
	ReadURL                string        `env:"QUEEN_PG_READ_URL" envDefault:"" check:"pgurl" section:"Database" help:"PostgreSQL connection URL of a standby (or several, as a multi-host URL, e.g. with target_session_attrs=prefer-standby) that answers the read-only admin routes: the listings, status, message browse, traces, analytics and the dashboard's reads. Writes, and reads that must see the request's own writes, stay on QUEEN_PG_URL; so do all reads while the standby lags more than QUEEN_READ_MAX_LAG_MS or does not answer. Empty: every read goes to QUEEN_PG_URL."`
	ReadMaxLag             time.Duration `env:"QUEEN_READ_MAX_LAG_MS" envDefault:"5000" min:"0" section:"Database" help:"Most replay lag, in milliseconds, a read from QUEEN_PG_READ_URL may see: while the standby lags more (measured every second from WAL positions: an idle standby that replayed everything lags 0), those reads answer from QUEEN_PG_URL."`
	Shards                 string        `env:"QUEEN_SHARDS" envDefault:"" check:"pgurls" section:"Database" help:"Several PostgreSQL clusters (shards) to spread queues over: their connection URLs (postgres:// or postgresql://, each may name several hosts), separated by spaces, or by commas when each URL starts with its scheme. The first is also the catalogue (placements, maintenance flags, cross-shard transaction decisions); the order must never change (each database records its index, and a broker refuses a reordered list). Set it instead of QUEEN_PG_URL and the PG_* parts; one URL is one shard, exactly as QUEEN_PG_URL. Empty: one database, QUEEN_PG_URL's."`
	ShardsOpen             []int         `env:"QUEEN_SHARDS_OPEN" envDefault:"" envSeparator:"," section:"Database" help:"Comma-separated indexes into QUEEN_SHARDS of the shards new queues may be placed on (queues already placed stay where they are); empty: all of them."`

	// Push path.

	FusionShards  int           `env:"QUEEN_V2_FUSION_SHARDS" envDefault:"8" min:"1" max:"256" section:"Push path" help:"Number of shards that fuse concurrent pushes into shared commits."`
	BundleMax     int           `env:"QUEEN_V2_BUNDLE_MAX" envDefault:"64" min:"1" max:"4096" section:"Push path" help:"Maximum number of partitions in one push commit (Queen's reference defaults to 16; with one commit at a time, bigger bundles carry more of what waits)."`
	FusionHold    time.Duration `env:"QUEEN_V2_FUSION_HOLD_MS" envDefault:"15" min:"1" section:"Push path" help:"Liveness backstop tick of the fusion shards; not a batching window."`
	DedupCache    bool          `env:"QUEEN_DEDUP_CACHE" envDefault:"true" section:"Push path" help:"Keep each partition's recent transaction-id hashes in memory so that a push whose hashes this broker has not seen lets PostgreSQL skip the history it already checked; false makes every push probe the whole dedup window in PostgreSQL. Deduplication is exact either way."`
	DedupCacheMB  int           `env:"QUEEN_DEDUP_CACHE_MB" envDefault:"512" min:"1" section:"Push path" help:"Memory budget of the dedup cache, in MiB (about 64 bytes per remembered message); past it, whole partitions are forgotten and fall back to full probes."`
	ZstdLevel     int           `env:"QUEEN_V2_ZSTD_LEVEL" envDefault:"3" min:"1" max:"22" section:"Push path" help:"zstd compression level used on the push path."`
	PushLimitInit int           `env:"QUEEN_SEG_PUSH_INIT" envDefault:"1" min:"1" section:"Push path" help:"Initial value of the adaptive (TCP-Vegas-style) limit on concurrent push commits; QUEEN_SEG_PUSH_MIN <= QUEEN_SEG_PUSH_INIT <= QUEEN_SEG_PUSH_MAX. Fewer concurrent commits make bigger fused commits: the defaults (one commit at a time) suit a small (2-core) database host; raise QUEEN_SEG_PUSH_MAX with its cores and the limit adapts between the bounds."`
	PushLimitMin  int           `env:"QUEEN_SEG_PUSH_MIN" envDefault:"1" min:"1" section:"Push path" help:"Lower bound of the adaptive push concurrency limit."`
	PushLimitMax  int           `env:"QUEEN_SEG_PUSH_MAX" envDefault:"1" min:"1" section:"Push path" help:"Upper bound of the adaptive push concurrency limit (Queen's reference uses 64 on large hosts)."`
	VegasAlpha    int           `env:"QUEEN_VEGAS_ALPHA" envDefault:"3" min:"0" section:"Push path" help:"Vegas alpha: the push limit grows while the estimated queueing is below alpha; must be less than QUEEN_VEGAS_BETA."`
	VegasBeta     int           `env:"QUEEN_VEGAS_BETA" envDefault:"6" min:"1" section:"Push path" help:"Vegas beta: the push limit shrinks while the estimated queueing is above beta."`

	// Pop path.

	PopTimeout       time.Duration `env:"DEFAULT_TIMEOUT" alias:"POP_DEFAULT_TIMEOUT_MS" envDefault:"30000" min:"0" section:"Pop path" help:"Long-poll deadline of pops that give no timeout, in milliseconds; POP_DEFAULT_TIMEOUT_MS is read when DEFAULT_TIMEOUT is unset."`
	SubscriptionMode string        `env:"DEFAULT_SUBSCRIPTION_MODE" envDefault:"all" oneof:"all,new" section:"Pop path" help:"Where a new named consumer group starts when its pop gives no subscriptionMode: all (from the oldest retained message, so a group created after the producer still reads the backlog) or new (after the messages already there, the newest Queen default)."`
	PollInitial      time.Duration `env:"POP_WAIT_INITIAL_INTERVAL_MS" envDefault:"100" min:"1" section:"Pop path" help:"Re-check interval of a parked long-poll pop that no commit woke, in milliseconds."`
	PollThreshold    int           `env:"POP_WAIT_BACKOFF_THRESHOLD" envDefault:"3" min:"1" section:"Pop path" help:"Empty re-checks before the long-poll interval starts growing."`
	PollMultiplier   float64       `env:"POP_WAIT_BACKOFF_MULTIPLIER" envDefault:"2.0" min:"1" max:"100" section:"Pop path" help:"Growth factor of the long-poll interval after the threshold (interval x empties x factor)."`
	PollMax          time.Duration `env:"POP_WAIT_MAX_INTERVAL_MS" envDefault:"1000" min:"1" section:"Pop path" help:"Cap of the long-poll re-check interval, in milliseconds."`

	// Hot-list and peers.

	Hotlist            bool          `env:"QUEEN_HOTLIST" envDefault:"true" section:"Hot-list" help:"Serve wildcard pops from the in-memory hot-list (partitions with work per queue and consumer group); false scans for candidate partitions in SQL on every wildcard pop."`
	HotlistShards      int           `env:"QUEEN_HOTLIST_SHARDS" envDefault:"8" defaultFrom:"QUEEN_V2_FUSION_SHARDS" min:"1" max:"256" section:"Hot-list" help:"Sub-shards of each (queue, group) ring, so one busy queue does not convoy on one lock; QUEEN_V2_FUSION_SHARDS when unset."`
	HotlistWindowBatch int           `env:"QUEEN_HOTLIST_WINDOW_BATCH" envDefault:"100" min:"1" section:"Hot-list" help:"Messages marked on a windowBuffer partition that make it ready before its window has elapsed."`
	HotlistReseed      time.Duration `env:"QUEEN_HOTLIST_RESEED_MS" envDefault:"5000" min:"100" section:"Hot-list" help:"Period of the reseed floor, per (queue, group): the hot-list re-reads the partitions with work from PostgreSQL, which repairs whatever it missed, in milliseconds."`
	HotlistIdleSweep   time.Duration `env:"QUEEN_HOTLIST_IDLE_SWEEP_MS" envDefault:"60000" min:"0" section:"Hot-list" help:"Period of the sweep that drops the hot-list state of queues unused for a whole period, in milliseconds; 0 disables it (memory then grows with every queue name ever popped)."`
	LogTopNQueues      int           `env:"QUEEN_LOG_TOPN_QUEUES" envDefault:"10" min:"0" section:"Hot-list" help:"Busiest (queue, group) rings named in the hot-list's periodic log lines."`
	HotlistTrace       string        `env:"QUEEN_HOTLIST_TRACE" envDefault:"" section:"Hot-list" help:"Queue-name prefix whose hot-list marks, serves and reseeds are logged (at most 100 lines a second); empty: none."`
	PeerHints          bool          `env:"QUEEN_PEER_HINTS" envDefault:"true" section:"Hot-list" help:"Tell the other brokers on the database about this broker's commits (PostgreSQL LISTEN/NOTIFY, coalesced every 5 ms), so their parked pops wake at once; a broker alone on its database may turn it off. Queue changes (configure, deletion) are announced to the other brokers either way."`

	// Spool.

	SpoolDir           string        `env:"FILE_BUFFER_DIR" envDefault:"" section:"Spool" help:"Directory of the crash-safe push spool (pushes the database could not take, and every push during maintenance). Default: QUEEN_DATA_DIR/buffers with the embedded PostgreSQL, else /var/lib/queen/buffers ($TMPDIR/queen-buffers when that cannot be created)."`
	DrainDirs          []string      `env:"QUEEN_DRAIN_DIRS" envDefault:"" envSeparator:"," section:"Spool" help:"queen-drain only: comma-separated spool directories to drain when no --dir is given; empty: the directory FILE_BUFFER_DIR names (or its default)."`
	SpoolFlush         time.Duration `env:"FILE_BUFFER_FLUSH_MS" envDefault:"100" min:"1" section:"Spool" help:"Period of the spool drain loop when idle, in milliseconds."`
	SpoolBatch         int           `env:"FILE_BUFFER_MAX_BATCH" envDefault:"100" min:"1" section:"Spool" help:"Spooled records per partition segment when the spool is replayed; a replay step reads this times QUEEN_V2_BUNDLE_MAX records."`
	SpoolPerFile       int           `env:"FILE_BUFFER_EVENTS_PER_FILE" envDefault:"10000" min:"1" section:"Spool" help:"Records per spool file before it is rotated."`
	MaintenanceRefresh time.Duration `env:"QUEEN_MAINTENANCE_REFRESH_MS" envDefault:"1000" min:"1" section:"Spool" help:"How often the broker re-reads the maintenance flags other brokers may have changed, in milliseconds."`

	// Retention.

	RetentionInterval time.Duration `env:"RETENTION_INTERVAL" envDefault:"5000" min:"1" section:"Retention" help:"Period of the retention and housekeeping cycle, in milliseconds (one broker of the database runs it at a time, under advisory lock 737001)."`
	RetentionBatch    int           `env:"RETENTION_BATCH_SIZE" envDefault:"1000" min:"1" section:"Retention" help:"Rows one retention step removes at most (one short transaction per step)."`
	RetentionParallel int           `env:"RETENTION_PARALLELISM" envDefault:"1" min:"1" section:"Retention" help:"Scales the per-cycle cap when QUEEN_RETENTION_DUE_CAP is 0; the steps themselves run one after the other (they take partition locks, and one writer keeps them from competing with pushes)."`
	RetentionDueCap   int           `env:"QUEEN_RETENTION_DUE_CAP" envDefault:"0" min:"0" section:"Retention" help:"Partitions walked and rows removed per cycle at most; 0 derives RETENTION_BATCH_SIZE x RETENTION_PARALLELISM x 5. A backlog of expired data drains at this many rows per cycle."`
	PartitionCleanup  bool          `env:"QUEEN_PARTITION_CLEANUP_ENABLED" envDefault:"true" section:"Retention" help:"Delete partitions that retain nothing and were not written for PARTITION_CLEANUP_DAYS."`
	PartitionIdleDays int           `env:"PARTITION_CLEANUP_DAYS" envDefault:"30" min:"1" section:"Retention" help:"Days without a write after which a partition that retains nothing is deleted with its cursors (checked every 10 minutes)."`
	MetricsRetention  int           `env:"METRICS_RETENTION_DAYS" envDefault:"90" min:"1" section:"Retention" help:"Days the metrics history (per-minute counters of queues and brokers, retention runs) is kept; older minutes are removed by the retention cycle in bounded steps."`

	// Metrics history and dashboard.

	MetricsFlush time.Duration `env:"METRICS_FLUSH_MS" envDefault:"60000" min:"0" section:"Metrics" help:"How often each broker writes its per-minute counters (queues and broker) to the metrics history, in milliseconds: one short statement per flush. Counting itself is in memory; during a database outage the missed flushes are written later (up to 60 of them). 0 turns the history off on this broker: nothing is counted or written."`
	Dashboard    bool          `env:"QUEEN_DASHBOARD" envDefault:"true" section:"Metrics" help:"Serve the web dashboard at / (its pages and assets are public; every figure and action it shows goes through the API's authentication)."`

	// Authentication (docs/api.md §3, §6.5).

	JWTEnabled         bool          `env:"JWT_ENABLED" envDefault:"false" section:"Authentication" help:"Require a JSON Web Token (Authorization: Bearer <jwt>, or the bare token) on every route but the public ones and JWT_SKIP_PATHS, and check its roles against the route's level. Off: every request is allowed (a warning is logged at start) and messages carry no producerSub."`
	JWTAlgorithm       string        `env:"JWT_ALGORITHM" envDefault:"HS256" oneof:"HS256,HS384,HS512,RS256,RS384,RS512,EdDSA,auto" section:"Authentication" help:"Token algorithm, case-insensitive. HS* check with JWT_SECRET; RS* and EdDSA with JWT_PUBLIC_KEY or JWT_JWKS_URL. RS256 also accepts RS384 and RS512 tokens; auto accepts all seven, each with the key material of its family. alg none is always refused."`
	JWTSecret          string        `env:"JWT_SECRET" envDefault:"" secret:"true" section:"Authentication" help:"HMAC secret of HS* tokens; required for HS* when JWT_ENABLED. Shorter than 32 bytes is accepted with a warning."`
	JWTPublicKey       string        `env:"JWT_PUBLIC_KEY" envDefault:"" section:"Authentication" help:"PEM public key (RSA or Ed25519; PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE block) of RS* and EdDSA tokens; line breaks may be written as \\n. Used for tokens without a kid when JWT_JWKS_URL is also set."`
	JWTJWKSURL         string        `env:"JWT_JWKS_URL" envDefault:"" check:"httpurl" section:"Authentication" help:"URL of a JSON Web Key Set: RS* and EdDSA tokens are checked with its key of the token's kid. Fetched at start, every JWT_JWKS_REFRESH_INTERVAL, and when a token names an unknown kid (at most once every 5 s)."`
	JWTJWKSRefresh     int           `env:"JWT_JWKS_REFRESH_INTERVAL" envDefault:"3600" min:"1" section:"Authentication" help:"Period of the JWKS re-fetch, in seconds."`
	JWTJWKSTimeout     time.Duration `env:"JWT_JWKS_TIMEOUT_MS" envDefault:"5000" min:"1" section:"Authentication" help:"Bound of one JWKS fetch, in milliseconds."`
	JWTIssuer          string        `env:"JWT_ISSUER" envDefault:"" section:"Authentication" help:"When set, a token's iss claim must equal it."`
	JWTAudience        string        `env:"JWT_AUDIENCE" envDefault:"" section:"Authentication" help:"When set, a token's aud claim (a string or an array) must be or contain it."`
	JWTClockSkew       int           `env:"JWT_CLOCK_SKEW" envDefault:"30" min:"0" section:"Authentication" help:"Tolerance, in seconds, applied to the exp, nbf and iat claims. A token without exp is always refused."`
	JWTSkipPaths       []string      `env:"JWT_SKIP_PATHS" envDefault:"/health,/metrics/prometheus,/metrics,/" envSeparator:"," section:"Authentication" help:"Comma-separated paths served without a token: an exact match, or a prefix match for entries longer than / that end in /."`
	JWTRolesClaim      string        `env:"JWT_ROLES_CLAIM" envDefault:"role" section:"Authentication" help:"Claim holding one role name (a string)."`
	JWTRolesArrayClaim string        `env:"JWT_ROLES_ARRAY_CLAIM" envDefault:"roles" section:"Authentication" help:"Claim holding role names (an array); its roles add to JWT_ROLES_CLAIM's."`
	JWTRoleAdmin       string        `env:"JWT_ROLE_ADMIN" envDefault:"admin" section:"Authentication" help:"Role name granting every route (ADMIN level and below)."`
	JWTRoleReadWrite   string        `env:"JWT_ROLE_READ_WRITE" envDefault:"read-write" section:"Authentication" help:"Role name granting READ_WRITE, READ_ONLY and WRITE_ONLY routes: push, pop, ack, transactions, reads."`
	JWTRoleReadOnly    string        `env:"JWT_ROLE_READ_ONLY" envDefault:"read-only" section:"Authentication" help:"Role name granting READ_ONLY routes only (status, resources, messages, traces): not push, not pop."`
	JWTRoleWriteOnly   string        `env:"JWT_ROLE_WRITE_ONLY" envDefault:"write-only" section:"Authentication" help:"Role name granting WRITE_ONLY routes only: push."`

	// Logging.

	LogLevel  string `env:"LOG_LEVEL" alias:"RUST_LOG" aliasIfValid:"true" envDefault:"info" oneof:"debug,info,warn,error" section:"Logging" help:"Minimum log level, case-insensitive. RUST_LOG is read when LOG_LEVEL is unset, and only if it is one of these words."`
	LogFormat string `env:"LOG_FORMAT" envDefault:"json" oneof:"json,text" section:"Logging" help:"Log line format: json (one JSON object per line, log/slog's JSONHandler) or text (key=value). When unset, QUEEN_LOG_JSON (Queen's variable) decides if it is set: true is json, false is text."`
	LogJSON   bool   `env:"QUEEN_LOG_JSON" envDefault:"true" section:"Logging" help:"Queen's switch between JSON and text logs, read only when LOG_FORMAT is unset; LOG_FORMAT wins when both are set."`
	AccessLog bool   `env:"QUEEN_ACCESS_LOG" envDefault:"false" section:"Logging" help:"Log one line per HTTP request at info level: method, route pattern, status, duration, response bytes and remote address (never the Authorization header or the body)."`

	// pgPartsSet records that at least one PG_* connection part was set,
	// which turns the embedded PostgreSQL off.
	pgPartsSet bool
	// logOutput is where the logs go instead of stderr (WithLogOutput); never read
	// from the environment.
	logOutput io.Writer
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	boolType     = reflect.TypeFor[bool]()
)

// configFields returns the fields of Config that are read from the
// environment, in declaration order.
func configFields() []reflect.StructField {
	t := reflect.TypeFor[Config]()
	var out []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		if f.IsExported() && f.Tag.Get("env") != "" {
			out = append(out, f)
		}
	}
	return out
}

// envName returns the variable name of the named Config field.
func envName(field string) string {
	f, ok := reflect.TypeFor[Config]().FieldByName(field)
	if !ok {
		panic("config: no field " + field)
	}
	return f.Tag.Get("env")
}

// Embedded reports whether no database is configured, so the server must
// start an embedded PostgreSQL in DataDir: QUEEN_PG_URL is empty and none of
// PG_HOST, PG_PORT, PG_USER, PG_PASSWORD, PG_DATABASE, PG_DB was set.
func (c Config) Embedded() bool {
	return c.PGURL == "" && !c.pgPartsSet && c.Shards == ""
}

// ShardURLs returns the URLs of QUEEN_SHARDS in order, or nil when it is empty.
func (c Config) ShardURLs() []string { return splitURLs(c.Shards) }

// splitURLs splits a list of PostgreSQL URLs separated by white space, or by commas
// where the next URL starts with its scheme (a multi-host URL has commas of its own).
func splitURLs(v string) []string {
	var out []string
	for _, field := range strings.Fields(v) {
		for i, piece := range strings.Split(field, ",") {
			switch {
			case i > 0 && !hasPGScheme(piece) && len(out) > 0:
				out[len(out)-1] += "," + piece
			case piece != "":
				out = append(out, piece)
			}
		}
	}
	return out
}

func hasPGScheme(v string) bool {
	return strings.HasPrefix(v, "postgres://") || strings.HasPrefix(v, "postgresql://")
}

// SpoolDirs returns the spool directory candidates in order of preference:
// FILE_BUFFER_DIR alone when it is set; else QUEEN_DATA_DIR/buffers with the embedded
// PostgreSQL; else /var/lib/queen/buffers, then $TMPDIR/queen-buffers for hosts where
// the first cannot be created (as Queen does).
func (c Config) SpoolDirs() []string {
	switch {
	case c.SpoolDir != "":
		return []string{c.SpoolDir}
	case c.Embedded():
		return []string{filepath.Join(c.DataDir, "buffers")}
	}
	return []string{"/var/lib/queen/buffers", filepath.Join(os.TempDir(), "queen-buffers")}
}

// DatabaseURL returns QUEEN_PG_URL when it is set, otherwise a postgres://
// URL built from the PG_* parts, with sslmode=require when PG_USE_SSL is on
// and sslmode=disable otherwise. It returns "" when Embedded is true.
func (c Config) DatabaseURL() string {
	if urls := c.ShardURLs(); len(urls) > 0 {
		return urls[0]
	}
	if c.PGURL != "" {
		return c.PGURL
	}
	if c.Embedded() {
		return ""
	}
	mode := "disable"
	if c.PGUseSSL {
		mode = "require"
	}
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(c.PGUser, c.PGPassword),
		Host:     net.JoinHostPort(c.PGHost, strconv.Itoa(c.PGPort)),
		Path:     "/" + c.PGDatabase,
		RawPath:  "/" + url.PathEscape(c.PGDatabase),
		RawQuery: url.Values{"sslmode": {mode}}.Encode(),
	}
	return u.String()
}

// Addr returns the HTTP listen address, BindAddr:Port.
func (c Config) Addr() string {
	return net.JoinHostPort(c.BindAddr, strconv.Itoa(c.Port))
}

// SlogLevel returns LogLevel as a slog.Level (Info when unrecognised).
func (c Config) SlogLevel() slog.Level {
	switch strings.ToLower(c.LogLevel) {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// WithLogOutput returns c with its logs going to w instead of stderr: for programs that
// embed the broker (the black-box tests read its logs). It is not read from the
// environment.
func (c Config) WithLogOutput(w io.Writer) Config {
	c.logOutput = w
	return c
}

// LogOutput is where the logs go: stderr unless WithLogOutput said otherwise.
func (c Config) LogOutput() io.Writer {
	if c.logOutput == nil {
		return os.Stderr
	}
	return c.logOutput
}

// EncryptionKeyBytes returns the decoded 32-byte AES-256 key, or nil when
// payload encryption is off (QUEEN_ENCRYPTION_KEY empty or invalid; Parse
// rejects invalid keys).
func (c Config) EncryptionKeyBytes() []byte { return aesKey(c.EncryptionKey) }

// DedupCacheBytes is the dedup cache's memory budget in bytes (QUEEN_DEDUP_CACHE_MB), or
// -1 when QUEEN_DEDUP_CACHE turns the cache off.
func (c Config) DedupCacheBytes() int64 {
	if !c.DedupCache {
		return -1
	}
	return int64(c.DedupCacheMB) << 20
}

// PartitionCleanupIdle is how long a partition that retains nothing must go unwritten
// before it is deleted (PARTITION_CLEANUP_DAYS), or 0 when QUEEN_PARTITION_CLEANUP_ENABLED
// turns the cleanup off.
func (c Config) PartitionCleanupIdle() time.Duration {
	if !c.PartitionCleanup {
		return 0
	}
	return time.Duration(c.PartitionIdleDays) * 24 * time.Hour
}

// MetricsRetentionPeriod is how long the metrics history is kept
// (METRICS_RETENTION_DAYS) as retention.Options.MetricsRetention takes it.
func (c Config) MetricsRetentionPeriod() time.Duration {
	return time.Duration(c.MetricsRetention) * 24 * time.Hour
}

// JWTLeeway is the tolerance of the exp, nbf and iat claims (JWT_CLOCK_SKEW) as
// auth.Options.ClockSkew takes it: JWT_CLOCK_SKEW=0 means none (auth.NoClockSkew), not
// the verifier's default.
func (c Config) JWTLeeway() time.Duration {
	if c.JWTClockSkew == 0 {
		return auth.NoClockSkew
	}
	return time.Duration(c.JWTClockSkew) * time.Second
}

// JWTRefresh is the period of the JWKS re-fetch (JWT_JWKS_REFRESH_INTERVAL, in seconds).
func (c Config) JWTRefresh() time.Duration { return time.Duration(c.JWTJWKSRefresh) * time.Second }

// UsesJWKS reports whether the broker fetches the key set of JWT_JWKS_URL: authentication
// is on, the URL is set and the algorithm checks its tokens with a key set (RS*, EdDSA,
// auto; HS* never does).
func (c Config) UsesJWKS() bool {
	return c.JWTEnabled && c.JWTJWKSURL != "" && auth.Usable(c.JWTAlgorithm).KeySet
}

// EncryptionKeyOldBytes returns the decoded previous key (QUEEN_ENCRYPTION_KEY_OLD),
// decryption only, or nil when none is set.
func (c Config) EncryptionKeyOldBytes() []byte { return aesKey(c.EncryptionKeyOld) }

// aesKey decodes a 64-hex-character AES-256 key; nil when empty or invalid.
func aesKey(hexKey string) []byte {
	if hexKey == "" {
		return nil
	}
	b, err := hex.DecodeString(hexKey)
	if err != nil || len(b) != 32 {
		return nil
	}
	return b
}
