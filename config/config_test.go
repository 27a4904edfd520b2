package config

import (
	"bytes"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

const validKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

func defaults() Config {
	return Config{
		Port:               6632,
		BindAddr:           "0.0.0.0",
		MaxBodyBytes:       67108864,
		MaxPushItems:       10000,
		ReadTimeout:        time.Minute,
		ServerID:           "queen",
		ShutdownTimeout:    30 * time.Second,
		CacheRefresh:       60 * time.Second,
		PGHost:             "localhost",
		PGPort:             5432,
		PGUser:             "postgres",
		PGPassword:         "postgres",
		PGDatabase:         "postgres",
		DataDir:            "./.queen",
		PoolSize:           160,
		StatementTimeout:   30 * time.Second,
		ApplySchema:        true,
		FusionShards:       8,
		BundleMax:          64,
		FusionHold:         15 * time.Millisecond,
		DedupCache:         true,
		DedupCacheMB:       512,
		ZstdLevel:          3,
		PushLimitInit:      1,
		PushLimitMin:       1,
		PushLimitMax:       1,
		VegasAlpha:         3,
		VegasBeta:          6,
		PopTimeout:         30 * time.Second,
		SubscriptionMode:   "all",
		PollInitial:        100 * time.Millisecond,
		PollThreshold:      3,
		PollMultiplier:     2,
		PollMax:            time.Second,
		Hotlist:            true,
		HotlistShards:      8,
		HotlistWindowBatch: 100,
		HotlistReseed:      5 * time.Second,
		HotlistIdleSweep:   time.Minute,
		LogTopNQueues:      10,
		PeerHints:          true,
		SpoolFlush:         100 * time.Millisecond,
		SpoolBatch:         100,
		SpoolPerFile:       10000,
		MaintenanceRefresh: time.Second,
		AdminShare:         time.Second,
		ReadMaxLag:         5 * time.Second,
		RetentionInterval:  5 * time.Second,
		RetentionBatch:     1000,
		RetentionParallel:  1,
		PartitionCleanup:   true,
		PartitionIdleDays:  30,
		MetricsRetention:   90,
		MetricsFlush:       time.Minute,
		Dashboard:          true,
		JWTAlgorithm:       "HS256",
		JWTJWKSRefresh:     3600,
		JWTJWKSTimeout:     5 * time.Second,
		JWTClockSkew:       30,
		JWTSkipPaths:       []string{"/health", "/metrics/prometheus", "/metrics", "/"},
		JWTRolesClaim:      "role",
		JWTRolesArrayClaim: "roles",
		JWTRoleAdmin:       "admin",
		JWTRoleReadWrite:   "read-write",
		JWTRoleReadOnly:    "read-only",
		JWTRoleWriteOnly:   "write-only",
		LogLevel:           "info",
		LogFormat:          "json",
		LogJSON:            true,
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		mod  func(*Config) // applied to defaults() to get the expected Config
	}{
		{name: "defaults", env: nil, mod: func(*Config) {}},
		{name: "empty values mean defaults", env: map[string]string{
			"PORT": "", "PG_USE_SSL": "", "DB_STATEMENT_TIMEOUT": "", "LOG_LEVEL": "", "QUEEN_PG_URL": "", "PG_HOST": "",
		}, mod: func(*Config) {}},
		{name: "all overridden", env: map[string]string{
			"PORT":                            "8080",
			"QUEEN_BIND_ADDR":                 "127.0.0.1",
			"QUEEN_MAX_BODY_BYTES":            "1024",
			"QUEEN_SERVER_ID":                 "node-7",
			"QUEEN_SHUTDOWN_TIMEOUT_MS":       "0",
			"QUEEN_ENCRYPTION_KEY":            validKey,
			"QUEEN_CACHE_REFRESH_INTERVAL_MS": "250",
			"QUEEN_PG_URL":                    "postgres://u:p@db:5433/q",
			"QUEEN_DATA_DIR":                  "/var/lib/queen",
			"DB_POOL_SIZE":                    "2",
			"DB_STATEMENT_TIMEOUT":            "1500",
			"QUEEN_APPLY_SCHEMA":              "off",
			"QUEEN_V2_FUSION_SHARDS":          "256",
			"QUEEN_V2_BUNDLE_MAX":             "4096",
			"QUEEN_V2_FUSION_HOLD_MS":         "1",
			"QUEEN_V2_ZSTD_LEVEL":             "22",
			"QUEEN_DEDUP_CACHE":               "false",
			"QUEEN_READ_TIMEOUT_MS":           "2500",
			"QUEEN_DEDUP_CACHE_MB":            "64",
			"QUEEN_SEG_PUSH_INIT":             "8",
			"QUEEN_SEG_PUSH_MIN":              "8",
			"QUEEN_SEG_PUSH_MAX":              "8",
			"QUEEN_VEGAS_ALPHA":               "0",
			"QUEEN_VEGAS_BETA":                "1",
			"QUEEN_PG_READ_URL":               "postgres://u:p@h1:5433,h2:5434/q?target_session_attrs=prefer-standby",
			"QUEEN_READ_MAX_LAG_MS":           "250",
			"LOG_LEVEL":                       "DeBuG",
			"QUEEN_LOG_JSON":                  "YES",
		}, mod: func(c *Config) {
			c.Port = 8080
			c.BindAddr = "127.0.0.1"
			c.MaxBodyBytes = 1024
			c.ServerID = "node-7"
			c.ShutdownTimeout = 0
			c.EncryptionKey = validKey
			c.CacheRefresh = 250 * time.Millisecond
			c.PGURL = "postgres://u:p@db:5433/q"
			c.ReadURL = "postgres://u:p@h1:5433,h2:5434/q?target_session_attrs=prefer-standby"
			c.ReadMaxLag = 250 * time.Millisecond
			c.DataDir = "/var/lib/queen"
			c.PoolSize = 2
			c.StatementTimeout = 1500 * time.Millisecond
			c.ApplySchema = false
			c.FusionShards = 256
			c.HotlistShards = 256 // inherited from QUEEN_V2_FUSION_SHARDS
			c.BundleMax = 4096
			c.FusionHold = time.Millisecond
			c.ZstdLevel = 22
			c.DedupCache, c.DedupCacheMB = false, 64
			c.ReadTimeout = 2500 * time.Millisecond
			c.PushLimitInit, c.PushLimitMin, c.PushLimitMax = 8, 8, 8
			c.VegasAlpha, c.VegasBeta = 0, 1
			c.LogLevel = "debug"
			c.LogJSON = true
		}},
		{name: "bool true spellings", env: map[string]string{"PG_USE_SSL": "1", "QUEEN_LOG_JSON": "On", "QUEEN_APPLY_SCHEMA": "TRUE"},
			mod: func(c *Config) { c.PGUseSSL, c.LogJSON, c.ApplySchema = true, true, true }},
		{name: "bool false spellings", env: map[string]string{"PG_USE_SSL": "no", "QUEEN_LOG_JSON": "0", "QUEEN_APPLY_SCHEMA": "False"},
			mod: func(c *Config) { c.PGUseSSL, c.LogJSON, c.LogFormat, c.ApplySchema = false, false, "text", false }},
		{name: "LOG_FORMAT wins over QUEEN_LOG_JSON", env: map[string]string{"LOG_FORMAT": "JSON", "QUEEN_LOG_JSON": "false"},
			mod: func(c *Config) { c.LogJSON = false }},
		{name: "LOG_FORMAT text, access log on", env: map[string]string{"LOG_FORMAT": "text", "QUEEN_ACCESS_LOG": "on"},
			mod: func(c *Config) { c.LogFormat, c.AccessLog = "text", true }},
		{name: "server id from HOSTNAME", env: map[string]string{"HOSTNAME": "box1"},
			mod: func(c *Config) { c.ServerID = "box1" }},
		{name: "QUEEN_SERVER_ID beats HOSTNAME", env: map[string]string{"HOSTNAME": "box1", "QUEEN_SERVER_ID": "s2"},
			mod: func(c *Config) { c.ServerID = "s2" }},
		{name: "QUEEN_STMT_TIMEOUT_MS alias used when DB_STATEMENT_TIMEOUT unset", env: map[string]string{"QUEEN_STMT_TIMEOUT_MS": "700"},
			mod: func(c *Config) { c.StatementTimeout = 700 * time.Millisecond }},
		{name: "QUEEN_STMT_TIMEOUT_MS alias used when DB_STATEMENT_TIMEOUT empty", env: map[string]string{"DB_STATEMENT_TIMEOUT": "", "QUEEN_STMT_TIMEOUT_MS": "700"},
			mod: func(c *Config) { c.StatementTimeout = 700 * time.Millisecond }},
		{name: "DB_STATEMENT_TIMEOUT beats QUEEN_STMT_TIMEOUT_MS", env: map[string]string{"DB_STATEMENT_TIMEOUT": "900", "QUEEN_STMT_TIMEOUT_MS": "700"},
			mod: func(c *Config) { c.StatementTimeout = 900 * time.Millisecond }},
		{name: "DB_STATEMENT_TIMEOUT wins even over an invalid alias", env: map[string]string{"DB_STATEMENT_TIMEOUT": "900", "QUEEN_STMT_TIMEOUT_MS": "x"},
			mod: func(c *Config) { c.StatementTimeout = 900 * time.Millisecond }},
		{name: "PG_DB used when PG_DATABASE unset", env: map[string]string{"PG_DB": "alt"},
			mod: func(c *Config) { c.PGDatabase = "alt"; c.pgPartsSet = true }},
		{name: "PG_DATABASE beats PG_DB", env: map[string]string{"PG_DATABASE": "main", "PG_DB": "alt"},
			mod: func(c *Config) { c.PGDatabase = "main"; c.pgPartsSet = true }},
		{name: "PG_HOST alone disables embedded", env: map[string]string{"PG_HOST": "db.internal"},
			mod: func(c *Config) { c.PGHost = "db.internal"; c.pgPartsSet = true }},
		{name: "RUST_LOG used when it is a level word", env: map[string]string{"RUST_LOG": "WARN"},
			mod: func(c *Config) { c.LogLevel = "warn" }},
		{name: "RUST_LOG ignored when it is a filter", env: map[string]string{"RUST_LOG": "queen=debug,tower=info"},
			mod: func(*Config) {}},
		{name: "LOG_LEVEL beats RUST_LOG", env: map[string]string{"LOG_LEVEL": "error", "RUST_LOG": "debug"},
			mod: func(c *Config) { c.LogLevel = "error" }},
		{name: "pg key=value connection string", env: map[string]string{"QUEEN_PG_URL": "host=db user=q dbname=q"},
			mod: func(c *Config) { c.PGURL = "host=db user=q dbname=q" }},
		{name: "postgresql scheme", env: map[string]string{"QUEEN_PG_URL": "postgresql://db/q"},
			mod: func(c *Config) { c.PGURL = "postgresql://db/q" }},
		{name: "jwt with a secret, algorithm spelled as listed", env: map[string]string{
			"JWT_ENABLED": "true", "JWT_ALGORITHM": "hs512", "JWT_SECRET": "s", "JWT_ISSUER": "idp", "JWT_AUDIENCE": "queen",
			"JWT_CLOCK_SKEW": "0", "JWT_SKIP_PATHS": "/health,/docs/", "JWT_ROLES_CLAIM": "grp", "JWT_ROLES_ARRAY_CLAIM": "grps",
			"JWT_ROLE_ADMIN": "root", "JWT_ROLE_READ_WRITE": "rw", "JWT_ROLE_READ_ONLY": "ro", "JWT_ROLE_WRITE_ONLY": "wo",
		}, mod: func(c *Config) {
			c.JWTEnabled, c.JWTAlgorithm, c.JWTSecret, c.JWTIssuer, c.JWTAudience = true, "HS512", "s", "idp", "queen"
			c.JWTClockSkew, c.JWTSkipPaths, c.JWTRolesClaim, c.JWTRolesArrayClaim = 0, []string{"/health", "/docs/"}, "grp", "grps"
			c.JWTRoleAdmin, c.JWTRoleReadWrite, c.JWTRoleReadOnly, c.JWTRoleWriteOnly = "root", "rw", "ro", "wo"
		}},
		{name: "jwt EdDSA with a JWKS", env: map[string]string{
			"JWT_ENABLED": "1", "JWT_ALGORITHM": "EDDSA", "JWT_JWKS_URL": "https://idp.example/.well-known/jwks.json",
			"JWT_JWKS_REFRESH_INTERVAL": "60", "JWT_JWKS_TIMEOUT_MS": "250",
		}, mod: func(c *Config) {
			c.JWTEnabled, c.JWTAlgorithm, c.JWTJWKSURL = true, "EdDSA", "https://idp.example/.well-known/jwks.json"
			c.JWTJWKSRefresh, c.JWTJWKSTimeout = 60, 250*time.Millisecond
		}},
		{name: "jwt auto with a public key", env: map[string]string{"JWT_ENABLED": "on", "JWT_ALGORITHM": "Auto", "JWT_PUBLIC_KEY": "pem"},
			mod: func(c *Config) { c.JWTEnabled, c.JWTAlgorithm, c.JWTPublicKey = true, "auto", "pem" }},
		{name: "jwt off needs no key", env: map[string]string{"JWT_ALGORITHM": "RS256"},
			mod: func(c *Config) { c.JWTAlgorithm = "RS256" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.env)
			if err != nil {
				t.Fatalf("Parse: unexpected error: %v", err)
			}
			want := defaults()
			tt.mod(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Parse mismatch\n got: %+v\nwant: %+v", got, want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		want    []string // every error line, in order
		notWant []string // substrings that must not appear (secrets)
	}{
		{name: "int not a number", env: map[string]string{"QUEEN_V2_FUSION_SHARDS": "abc"},
			want: []string{`config: QUEEN_V2_FUSION_SHARDS="abc": want an integer between 1 and 256`}},
		{name: "int below range", env: map[string]string{"QUEEN_V2_FUSION_SHARDS": "0"},
			want: []string{`config: QUEEN_V2_FUSION_SHARDS="0": want an integer between 1 and 256`}},
		{name: "int above range", env: map[string]string{"PORT": "65536"},
			want: []string{`config: PORT="65536": want an integer between 0 and 65535`}},
		{name: "int overflow", env: map[string]string{"PORT": "99999999999999999999"},
			want: []string{`config: PORT="99999999999999999999": want an integer between 0 and 65535`}},
		{name: "int with spaces", env: map[string]string{"QUEEN_V2_BUNDLE_MAX": " 16"},
			want: []string{`config: QUEEN_V2_BUNDLE_MAX=" 16": want an integer between 1 and 4096`}},
		{name: "pool size below minimum", env: map[string]string{"DB_POOL_SIZE": "1"},
			want: []string{`config: DB_POOL_SIZE="1": want an integer of at least 2`}},
		{name: "int64 not positive", env: map[string]string{"QUEEN_MAX_BODY_BYTES": "-5"},
			want: []string{`config: QUEEN_MAX_BODY_BYTES="-5": want an integer greater than 0`}},
		{name: "zstd level out of range", env: map[string]string{"QUEEN_V2_ZSTD_LEVEL": "23"},
			want: []string{`config: QUEEN_V2_ZSTD_LEVEL="23": want an integer between 1 and 22`}},
		{name: "bool invalid", env: map[string]string{"PG_USE_SSL": "maybe"},
			want: []string{`config: PG_USE_SSL="maybe": want a boolean (true/false, 1/0, yes/no, on/off)`}},
		{name: "bool single letter rejected", env: map[string]string{"QUEEN_APPLY_SCHEMA": "t"},
			want: []string{`config: QUEEN_APPLY_SCHEMA="t": want a boolean (true/false, 1/0, yes/no, on/off)`}},
		{name: "duration with unit", env: map[string]string{"QUEEN_V2_FUSION_HOLD_MS": "15ms"},
			want: []string{`config: QUEEN_V2_FUSION_HOLD_MS="15ms": want a whole number of milliseconds greater than 0`}},
		{name: "duration zero", env: map[string]string{"DB_STATEMENT_TIMEOUT": "0"},
			want: []string{`config: DB_STATEMENT_TIMEOUT="0": want a whole number of milliseconds greater than 0`}},
		{name: "duration negative", env: map[string]string{"QUEEN_SHUTDOWN_TIMEOUT_MS": "-1"},
			want: []string{`config: QUEEN_SHUTDOWN_TIMEOUT_MS="-1": want a whole number of milliseconds, 0 or more`}},
		{name: "duration overflow", env: map[string]string{"QUEEN_CACHE_REFRESH_INTERVAL_MS": "9223372036854775"},
			want: []string{`config: QUEEN_CACHE_REFRESH_INTERVAL_MS="9223372036854775": want a whole number of milliseconds greater than 0`}},
		{name: "alias value is named in the error", env: map[string]string{"QUEEN_STMT_TIMEOUT_MS": "soon"},
			want: []string{`config: QUEEN_STMT_TIMEOUT_MS="soon": want a whole number of milliseconds greater than 0`}},
		{name: "PG_DB alias value is named in the error", env: map[string]string{"PG_PORT": "x", "PG_DB": "ok"},
			want: []string{`config: PG_PORT="x": want an integer between 1 and 65535`}},
		{name: "log level invalid", env: map[string]string{"LOG_LEVEL": "verbose"},
			want: []string{`config: LOG_LEVEL="verbose": want one of debug, info, warn, error`}},
		{name: "encryption key too short", env: map[string]string{"QUEEN_ENCRYPTION_KEY": "deadbeefsecret"},
			want:    []string{`config: QUEEN_ENCRYPTION_KEY=<14 characters, not shown>: want 64 hex characters (a 256-bit AES key)`},
			notWant: []string{"deadbeef"}},
		{name: "encryption key not hex", env: map[string]string{"QUEEN_ENCRYPTION_KEY": strings.Repeat("zz", 32)},
			want:    []string{`config: QUEEN_ENCRYPTION_KEY=<64 characters, not shown>: want 64 hex characters (a 256-bit AES key)`},
			notWant: []string{"zzzz"}},
		{name: "old encryption key malformed", env: map[string]string{"QUEEN_ENCRYPTION_KEY": validKey, "QUEEN_ENCRYPTION_KEY_OLD": "cafe"},
			want:    []string{`config: QUEEN_ENCRYPTION_KEY_OLD=<4 characters, not shown>: want 64 hex characters (a 256-bit AES key)`},
			notWant: []string{"cafe", validKey}},
		{name: "old encryption key without the current one", env: map[string]string{"QUEEN_ENCRYPTION_KEY_OLD": validKey},
			want:    []string{`config: QUEEN_ENCRYPTION_KEY_OLD is set but QUEEN_ENCRYPTION_KEY is not: the old key only decrypts; set the current key too`},
			notWant: []string{validKey}},
		{name: "pg url wrong scheme hides password", env: map[string]string{"QUEEN_PG_URL": "mysql://u:hunter2@db/q"},
			want:    []string{`config: QUEEN_PG_URL="mysql://u:xxxxx@db/q": want a postgres:// or postgresql:// URL, or a key=value connection string`},
			notWant: []string{"hunter2"}},
		{name: "pg url garbage", env: map[string]string{"QUEEN_PG_URL": "db.example:5432"},
			want: []string{`config: QUEEN_PG_URL=<15 characters, not shown>: want a postgres:// or postgresql:// URL, or a key=value connection string`}},
		{name: "push limits out of order", env: map[string]string{"QUEEN_SEG_PUSH_MIN": "3"},
			want: []string{`config: QUEEN_SEG_PUSH_MIN=3, QUEEN_SEG_PUSH_INIT=1, QUEEN_SEG_PUSH_MAX=1: want QUEEN_SEG_PUSH_MIN <= QUEEN_SEG_PUSH_INIT <= QUEEN_SEG_PUSH_MAX`}},
		{name: "push init above max", env: map[string]string{"QUEEN_SEG_PUSH_INIT": "65"},
			want: []string{`config: QUEEN_SEG_PUSH_MIN=1, QUEEN_SEG_PUSH_INIT=65, QUEEN_SEG_PUSH_MAX=1: want QUEEN_SEG_PUSH_MIN <= QUEEN_SEG_PUSH_INIT <= QUEEN_SEG_PUSH_MAX`}},
		{name: "push limit zero", env: map[string]string{"QUEEN_SEG_PUSH_MIN": "0"},
			want: []string{`config: QUEEN_SEG_PUSH_MIN="0": want an integer greater than 0`}},
		{name: "vegas alpha not below beta", env: map[string]string{"QUEEN_VEGAS_ALPHA": "6"},
			want: []string{`config: QUEEN_VEGAS_ALPHA=6, QUEEN_VEGAS_BETA=6: want QUEEN_VEGAS_ALPHA < QUEEN_VEGAS_BETA`}},
		{name: "relation skipped when a side is unparsable", env: map[string]string{"QUEEN_VEGAS_BETA": "x"},
			want: []string{`config: QUEEN_VEGAS_BETA="x": want an integer greater than 0`}},
		{name: "jwt HS256 without a secret", env: map[string]string{"JWT_ENABLED": "true"},
			want: []string{`config: JWT_ENABLED=true, JWT_ALGORITHM=HS256: want JWT_SECRET`}},
		{name: "jwt RS256 without a key", env: map[string]string{"JWT_ENABLED": "true", "JWT_ALGORITHM": "rs256", "JWT_SECRET": "s"},
			want: []string{`config: JWT_ENABLED=true, JWT_ALGORITHM=RS256: want JWT_PUBLIC_KEY or JWT_JWKS_URL`}},
		{name: "jwt EdDSA without a key", env: map[string]string{"JWT_ENABLED": "true", "JWT_ALGORITHM": "EdDSA"},
			want: []string{`config: JWT_ENABLED=true, JWT_ALGORITHM=EdDSA: want JWT_PUBLIC_KEY or JWT_JWKS_URL`}},
		{name: "jwt auto without anything", env: map[string]string{"JWT_ENABLED": "true", "JWT_ALGORITHM": "auto"},
			want: []string{`config: JWT_ENABLED=true, JWT_ALGORITHM=auto: want JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL`}},
		{name: "jwt unknown algorithm", env: map[string]string{"JWT_ALGORITHM": "ES256"},
			want: []string{`config: JWT_ALGORITHM="ES256": want one of HS256, HS384, HS512, RS256, RS384, RS512, EdDSA, auto`}},
		{name: "jwt jwks url not http", env: map[string]string{"JWT_JWKS_URL": "file:///etc/keys.json"},
			want: []string{`config: JWT_JWKS_URL="file:///etc/keys.json": want an http:// or https:// URL`}},
		{name: "jwt skew negative, refresh zero", env: map[string]string{"JWT_CLOCK_SKEW": "-1", "JWT_JWKS_REFRESH_INTERVAL": "0"},
			want: []string{`config: JWT_JWKS_REFRESH_INTERVAL="0": want an integer greater than 0`,
				`config: JWT_CLOCK_SKEW="-1": want an integer, 0 or more`}},
		{name: "jwt secret never echoed", env: map[string]string{"JWT_ENABLED": "maybe", "JWT_SECRET": "hunter2hunter2"},
			want:    []string{`config: JWT_ENABLED="maybe": want a boolean (true/false, 1/0, yes/no, on/off)`},
			notWant: []string{"hunter2"}},
		{name: "all problems reported together", env: map[string]string{
			"PORT": "-1", "PG_USE_SSL": "perhaps", "QUEEN_V2_FUSION_SHARDS": "abc", "LOG_LEVEL": "loud", "QUEEN_VEGAS_ALPHA": "9",
		}, want: []string{
			`config: PORT="-1": want an integer between 0 and 65535`,
			`config: PG_USE_SSL="perhaps": want a boolean (true/false, 1/0, yes/no, on/off)`,
			`config: QUEEN_V2_FUSION_SHARDS="abc": want an integer between 1 and 256`,
			`config: LOG_LEVEL="loud": want one of debug, info, warn, error`,
			`config: QUEEN_VEGAS_ALPHA=9, QUEEN_VEGAS_BETA=6: want QUEEN_VEGAS_ALPHA < QUEEN_VEGAS_BETA`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse(tt.env)
			if err == nil {
				t.Fatalf("Parse: want error, got nil (config %+v)", cfg)
			}
			if !reflect.DeepEqual(cfg, Config{}) {
				t.Errorf("Parse returned a non-zero Config with an error: %+v", cfg)
			}
			got := strings.Split(err.Error(), "\n")
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("error lines mismatch\n got: %q\nwant: %q", got, tt.want)
			}
			var joined interface{ Unwrap() []error }
			if errors.As(err, &joined) && len(joined.Unwrap()) != len(tt.want) {
				t.Errorf("got %d joined errors, want %d", len(joined.Unwrap()), len(tt.want))
			}
			for _, s := range tt.notWant {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q leaks %q", err, s)
				}
			}
		})
	}
}

func TestFieldErrorAs(t *testing.T) {
	t.Parallel()
	_, err := Parse(map[string]string{"QUEEN_V2_ZSTD_LEVEL": "fast"})
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("errors.As(%v, *FieldError) = false", err)
	}
	if fe.Var != "QUEEN_V2_ZSTD_LEVEL" || fe.Value != "fast" || fe.Want != "an integer between 1 and 22" || fe.Secret {
		t.Errorf("FieldError = %+v", *fe)
	}
}

func TestDatabase(t *testing.T) {
	t.Parallel()
	const pw = `p@ss:w/rd?#%&= é`
	tests := []struct {
		name     string
		env      map[string]string
		embedded bool
		wantURL  string // exact, when non-empty
		// checked when wantURL is empty and embedded is false
		user, password, host, db, sslmode string
	}{
		{name: "nothing set is embedded", env: nil, embedded: true},
		{name: "empty values are embedded", env: map[string]string{"QUEEN_PG_URL": "", "PG_HOST": "", "PG_DB": ""}, embedded: true},
		{name: "PG_USE_SSL alone stays embedded", env: map[string]string{"PG_USE_SSL": "true"}, embedded: true},
		{name: "QUEEN_DATA_DIR alone stays embedded", env: map[string]string{"QUEEN_DATA_DIR": "/d"}, embedded: true},
		{name: "QUEEN_PG_URL returned verbatim",
			env:     map[string]string{"QUEEN_PG_URL": "postgres://a:b@h:1/d?sslmode=verify-full", "PG_HOST": "ignored"},
			wantURL: "postgres://a:b@h:1/d?sslmode=verify-full"},
		{name: "PG_HOST builds URL from defaults",
			env:     map[string]string{"PG_HOST": "db"},
			wantURL: "postgres://postgres:postgres@db:5432/postgres?sslmode=disable"},
		{name: "each part set alone disables embedded: PG_PORT",
			env:     map[string]string{"PG_PORT": "6000"},
			wantURL: "postgres://postgres:postgres@localhost:6000/postgres?sslmode=disable"},
		{name: "each part set alone disables embedded: PG_USER",
			env:     map[string]string{"PG_USER": "queen"},
			wantURL: "postgres://queen:postgres@localhost:5432/postgres?sslmode=disable"},
		{name: "each part set alone disables embedded: PG_PASSWORD",
			env:     map[string]string{"PG_PASSWORD": "s"},
			wantURL: "postgres://postgres:s@localhost:5432/postgres?sslmode=disable"},
		{name: "each part set alone disables embedded: PG_DATABASE",
			env:     map[string]string{"PG_DATABASE": "q"},
			wantURL: "postgres://postgres:postgres@localhost:5432/q?sslmode=disable"},
		{name: "each part set alone disables embedded: PG_DB",
			env:     map[string]string{"PG_DB": "q2"},
			wantURL: "postgres://postgres:postgres@localhost:5432/q2?sslmode=disable"},
		{name: "ssl require",
			env:     map[string]string{"PG_HOST": "db", "PG_USE_SSL": "on"},
			wantURL: "postgres://postgres:postgres@db:5432/postgres?sslmode=require"},
		{name: "ipv6 host",
			env:     map[string]string{"PG_HOST": "::1"},
			wantURL: "postgres://postgres:postgres@[::1]:5432/postgres?sslmode=disable"},
		{name: "special characters are escaped",
			env:  map[string]string{"PG_USER": "us@r:x", "PG_PASSWORD": pw, "PG_HOST": "db", "PG_PORT": "5433", "PG_DATABASE": "my db/1?"},
			user: "us@r:x", password: pw, host: "db:5433", db: "my db/1?", sslmode: "disable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse(tt.env)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := cfg.Embedded(); got != tt.embedded {
				t.Errorf("Embedded() = %v, want %v", got, tt.embedded)
			}
			got := cfg.DatabaseURL()
			switch {
			case tt.embedded:
				if got != "" {
					t.Errorf("DatabaseURL() = %q, want empty when embedded", got)
				}
			case tt.wantURL != "":
				if got != tt.wantURL {
					t.Errorf("DatabaseURL() = %q, want %q", got, tt.wantURL)
				}
			default:
				if strings.Contains(got, pw) {
					t.Errorf("DatabaseURL() = %q contains the raw password", got)
				}
				u, err := url.Parse(got)
				if err != nil {
					t.Fatalf("DatabaseURL() = %q does not parse: %v", got, err)
				}
				p, _ := u.User.Password()
				if u.Scheme != "postgres" || u.User.Username() != tt.user || p != tt.password || u.Host != tt.host ||
					strings.TrimPrefix(u.Path, "/") != tt.db || u.Query().Get("sslmode") != tt.sslmode {
					t.Errorf("DatabaseURL() = %q parses to scheme=%q user=%q password=%q host=%q db=%q sslmode=%q",
						got, u.Scheme, u.User.Username(), p, u.Host, strings.TrimPrefix(u.Path, "/"), u.Query().Get("sslmode"))
				}
			}
		})
	}
}

func TestDatabaseURLAfterSettingPGURL(t *testing.T) {
	t.Parallel()
	cfg, err := Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.PGURL = "postgres://embedded@127.0.0.1:1/q"
	if cfg.Embedded() || cfg.DatabaseURL() != cfg.PGURL {
		t.Errorf("after setting PGURL: Embedded()=%v DatabaseURL()=%q", cfg.Embedded(), cfg.DatabaseURL())
	}
}

func TestAccessors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		level   slog.Level
		addr    string
		keyLen  int
		keyByte byte // last byte of the key, when keyLen > 0
		oldLen  int
		oldByte byte  // last byte of the old key, when oldLen > 0
		cache   int64 // DedupCacheBytes; 0: the default, 512 MiB
	}{
		{name: "defaults", level: slog.LevelInfo, addr: "0.0.0.0:6632"},
		{name: "debug", env: map[string]string{"LOG_LEVEL": "DEBUG"}, level: slog.LevelDebug, addr: "0.0.0.0:6632"},
		{name: "warn from RUST_LOG", env: map[string]string{"RUST_LOG": "warn"}, level: slog.LevelWarn, addr: "0.0.0.0:6632"},
		{name: "error", env: map[string]string{"LOG_LEVEL": "error"}, level: slog.LevelError, addr: "0.0.0.0:6632"},
		{name: "ipv6 bind and key", env: map[string]string{"QUEEN_BIND_ADDR": "::", "PORT": "1", "QUEEN_ENCRYPTION_KEY": strings.ToUpper(validKey)},
			level: slog.LevelInfo, addr: "[::]:1", keyLen: 32, keyByte: 0x1f},
		{name: "rotated key", env: map[string]string{"QUEEN_ENCRYPTION_KEY": strings.Repeat("ab", 32), "QUEEN_ENCRYPTION_KEY_OLD": validKey},
			level: slog.LevelInfo, addr: "0.0.0.0:6632", keyLen: 32, keyByte: 0xab, oldLen: 32, oldByte: 0x1f},
		{name: "dedup cache sized", env: map[string]string{"QUEEN_DEDUP_CACHE_MB": "64"},
			level: slog.LevelInfo, addr: "0.0.0.0:6632", cache: 64 << 20},
		{name: "dedup cache off", env: map[string]string{"QUEEN_DEDUP_CACHE": "false", "QUEEN_DEDUP_CACHE_MB": "64"},
			level: slog.LevelInfo, addr: "0.0.0.0:6632", cache: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse(tt.env)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := cfg.SlogLevel(); got != tt.level {
				t.Errorf("SlogLevel() = %v, want %v", got, tt.level)
			}
			if got := cfg.Addr(); got != tt.addr {
				t.Errorf("Addr() = %q, want %q", got, tt.addr)
			}
			key := cfg.EncryptionKeyBytes()
			if len(key) != tt.keyLen || (tt.keyLen > 0 && key[len(key)-1] != tt.keyByte) {
				t.Errorf("EncryptionKeyBytes() = %x, want %d bytes ending in %#x", key, tt.keyLen, tt.keyByte)
			}
			old := cfg.EncryptionKeyOldBytes()
			if len(old) != tt.oldLen || (tt.oldLen > 0 && old[len(old)-1] != tt.oldByte) {
				t.Errorf("EncryptionKeyOldBytes() = %x, want %d bytes ending in %#x", old, tt.oldLen, tt.oldByte)
			}
			if tt.cache == 0 {
				tt.cache = 512 << 20
			}
			if got := cfg.DedupCacheBytes(); got != tt.cache {
				t.Errorf("DedupCacheBytes() = %d, want %d", got, tt.cache)
			}
		})
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	Usage(&buf)
	out := buf.String()

	if first, _, _ := strings.Cut(out, "\n"); !strings.Contains(first, "environment variables") {
		t.Errorf("header line = %q", first)
	}
	last := -1
	for _, s := range sections {
		i := strings.Index(out, "\n"+s+":\n")
		if i < 0 {
			t.Errorf("Usage lacks section %q", s)
			continue
		}
		if i < last {
			t.Errorf("section %q out of order", s)
		}
		last = i
	}

	known := map[string]bool{}
	for _, s := range sections {
		known[s] = true
	}
	typ := reflect.TypeFor[Config]()
	n := 0
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Tag.Get("env")
		n++
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			if name == "" {
				t.Fatalf("field %s has no env tag", f.Name)
			}
			if strings.TrimSpace(f.Tag.Get("help")) == "" {
				t.Errorf("%s (%s) has no help text", f.Name, name)
			}
			if !known[f.Tag.Get("section")] {
				t.Errorf("%s (%s) has unknown section %q", f.Name, name, f.Tag.Get("section"))
			}
			if _, ok := f.Tag.Lookup("envDefault"); !ok {
				t.Errorf("%s (%s) has no envDefault tag", f.Name, name)
			}
			for _, v := range []string{name, f.Tag.Get("alias"), f.Tag.Get("defaultFrom")} {
				if v != "" && !strings.Contains(out, v) {
					t.Errorf("Usage does not mention %s", v)
				}
			}
			line := lineWith(out, name)
			if d := f.Tag.Get("envDefault"); line == "" || !strings.Contains(line, "default: ") || !strings.Contains(line, d) {
				t.Errorf("Usage line for %s = %q, want its default %q", name, line, d)
			}
		})
	}
	if n == 0 {
		t.Fatal("no fields found")
	}
}

// lineWith returns the line of s that introduces variable name.
func lineWith(s, name string) string {
	for line := range strings.Lines(s) {
		if strings.HasPrefix(line, "  "+name+" ") {
			return line
		}
	}
	return ""
}

func TestLoad(t *testing.T) {
	// Every variable the configuration reads is emptied (= unset) first, so the
	// surrounding environment cannot make Load fail or change what it reads.
	for _, f := range configFields() {
		for _, tag := range []string{"env", "alias", "defaultFrom"} {
			if name := f.Tag.Get(tag); name != "" {
				t.Setenv(name, "")
			}
		}
	}
	t.Setenv("QUEEN_V2_FUSION_SHARDS", "12")
	cfg, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.FusionShards != 12 {
		t.Errorf("Load: FusionShards = %d, want 12", cfg.FusionShards)
	}
}

func TestLogOutput(t *testing.T) {
	t.Parallel()
	cfg, err := Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LogOutput() != os.Stderr {
		t.Fatalf("LogOutput() = %v, want stderr", cfg.LogOutput())
	}
	var buf bytes.Buffer
	if got := cfg.WithLogOutput(&buf).LogOutput(); got != &buf {
		t.Fatalf("LogOutput() after WithLogOutput = %v", got)
	}
	if cfg.LogOutput() != os.Stderr {
		t.Fatal("WithLogOutput changed the original")
	}
}

// TestShards: QUEEN_SHARDS lists URLs (multi-host ones too), names the first as the
// database, and refuses a mix with QUEEN_PG_URL or an out-of-range QUEEN_SHARDS_OPEN.
func TestShards(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		env     map[string]string
		want    []string
		open    []int
		wantErr string
	}{
		{name: "unset", env: map[string]string{}, want: nil},
		{name: "spaces", env: map[string]string{"QUEEN_SHARDS": "postgres://a/q  postgresql://b/q\npostgres://c/q"},
			want: []string{"postgres://a/q", "postgresql://b/q", "postgres://c/q"}},
		{name: "commas and multi-host", env: map[string]string{"QUEEN_SHARDS": "postgres://a1,a2:5433/q?target_session_attrs=read-write,postgres://b/q"},
			want: []string{"postgres://a1,a2:5433/q?target_session_attrs=read-write", "postgres://b/q"}},
		{name: "open", env: map[string]string{"QUEEN_SHARDS": "postgres://a/q postgres://b/q postgres://c/q", "QUEEN_SHARDS_OPEN": "1,2"},
			want: []string{"postgres://a/q", "postgres://b/q", "postgres://c/q"}, open: []int{1, 2}},
		{name: "not a URL", env: map[string]string{"QUEEN_SHARDS": "host=a dbname=q"}, wantErr: "QUEEN_SHARDS"},
		{name: "with QUEEN_PG_URL", env: map[string]string{"QUEEN_SHARDS": "postgres://a/q", "QUEEN_PG_URL": "postgres://a/q"},
			wantErr: "set the shards' URLs in QUEEN_SHARDS only"},
		{name: "open out of range", env: map[string]string{"QUEEN_SHARDS": "postgres://a/q postgres://b/q", "QUEEN_SHARDS_OPEN": "2"},
			wantErr: "want indexes of QUEEN_SHARDS, 0 to 1"},
		{name: "open without shards", env: map[string]string{"QUEEN_SHARDS_OPEN": "0"}, wantErr: "fewer than two shards"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse(tt.env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.ShardURLs(); !slices.Equal(got, tt.want) {
				t.Errorf("ShardURLs() = %q, want %q", got, tt.want)
			}
			if !slices.Equal(cfg.ShardsOpen, tt.open) {
				t.Errorf("ShardsOpen = %v, want %v", cfg.ShardsOpen, tt.open)
			}
			if len(tt.want) > 0 && (cfg.Embedded() || cfg.DatabaseURL() != tt.want[0]) {
				t.Errorf("Embedded() = %v, DatabaseURL() = %q: want the first shard", cfg.Embedded(), cfg.DatabaseURL())
			}
		})
	}
}
