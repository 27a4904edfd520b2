package config

import (
	"testing"
	"time"

	"github.com/queen-go/queen/core/auth"
)

// TestPolicyAccessors: the values the broker derives from several variables, or reads
// in other units than they are written.
func TestPolicyAccessors(t *testing.T) {
	t.Parallel()
	parse := func(t *testing.T, env map[string]string) Config {
		t.Helper()
		c, err := Parse(env)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	const jwks = "https://issuer.example/jwks.json"
	t.Run("PartitionCleanupIdle", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct {
			env  map[string]string
			want time.Duration
		}{
			{map[string]string{}, 30 * 24 * time.Hour},
			{map[string]string{"PARTITION_CLEANUP_DAYS": "2"}, 48 * time.Hour},
			{map[string]string{"PARTITION_CLEANUP_DAYS": "2", "QUEEN_PARTITION_CLEANUP_ENABLED": "false"}, 0},
		} {
			if got := parse(t, tt.env).PartitionCleanupIdle(); got != tt.want {
				t.Errorf("%v: PartitionCleanupIdle() = %v, want %v", tt.env, got, tt.want)
			}
		}
	})
	t.Run("JWTLeeway", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct {
			skew string
			want time.Duration
		}{
			{"", 30 * time.Second},
			{"5", 5 * time.Second},
			{"0", auth.NoClockSkew}, // none, not the verifier's default
		} {
			if got := parse(t, map[string]string{"JWT_CLOCK_SKEW": tt.skew}).JWTLeeway(); got != tt.want {
				t.Errorf("JWT_CLOCK_SKEW=%q: JWTLeeway() = %v, want %v", tt.skew, got, tt.want)
			}
		}
	})
	t.Run("JWTRefresh", func(t *testing.T) {
		t.Parallel()
		if got := parse(t, map[string]string{"JWT_JWKS_REFRESH_INTERVAL": "90"}).JWTRefresh(); got != 90*time.Second {
			t.Errorf("JWTRefresh() = %v, want 90s", got)
		}
	})
	t.Run("UsesJWKS", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct {
			name string
			env  map[string]string
			want bool
		}{
			{"RS256", map[string]string{"JWT_ENABLED": "true", "JWT_ALGORITHM": "RS256", "JWT_JWKS_URL": jwks}, true},
			{"EdDSA", map[string]string{"JWT_ENABLED": "true", "JWT_ALGORITHM": "eddsa", "JWT_JWKS_URL": jwks}, true},
			{"auto", map[string]string{"JWT_ENABLED": "true", "JWT_ALGORITHM": "auto", "JWT_JWKS_URL": jwks}, true},
			{"HS256 never uses a key set", map[string]string{"JWT_ENABLED": "true", "JWT_ALGORITHM": "HS256",
				"JWT_SECRET": "s", "JWT_JWKS_URL": jwks}, false},
			{"no URL", map[string]string{"JWT_ENABLED": "true", "JWT_ALGORITHM": "RS256", "JWT_PUBLIC_KEY": "k"}, false},
			{"authentication off", map[string]string{"JWT_ALGORITHM": "RS256", "JWT_JWKS_URL": jwks}, false},
		} {
			if got := parse(t, tt.env).UsesJWKS(); got != tt.want {
				t.Errorf("%s: UsesJWKS() = %v, want %v", tt.name, got, tt.want)
			}
		}
	})
}
