package queen

import (
	"log/slog"
	"strings"
	"time"

	"github.com/queen-go/queen/adapters/jwks"
	"github.com/queen-go/queen/config"
	"github.com/queen-go/queen/core/auth"
)

// ProvideKeySet builds the JWKS client when authentication is on, JWT_JWKS_URL is set
// and the algorithm can use it (RS*, EdDSA, auto); nil otherwise. It fetches nothing
// until App.Start starts it.
func ProvideKeySet(cfg config.Config, log *slog.Logger) (*jwks.Client, error) {
	if !cfg.JWTEnabled || cfg.JWTJWKSURL == "" || strings.HasPrefix(cfg.JWTAlgorithm, "HS") {
		return nil, nil
	}
	return jwks.New(cfg.JWTJWKSURL, jwks.Options{
		Refresh: time.Duration(cfg.JWTJWKSRefresh) * time.Second, Timeout: cfg.JWTJWKSTimeout, Logger: log,
	})
}

// ProvideVerifier builds the token verifier from the JWT_* variables (docs/api.md §3, §6.5);
// nil when JWT_ENABLED is off, which lets every request through (App.Start warns). A
// secret or key the verifier cannot use stops the broker from starting.
func ProvideVerifier(cfg config.Config, keys *jwks.Client, log *slog.Logger) (*auth.Verifier, error) {
	if !cfg.JWTEnabled {
		return nil, nil
	}
	// JWT_CLOCK_SKEW=0 means no tolerance; the verifier reads 0 as its default.
	skew := time.Duration(cfg.JWTClockSkew) * time.Second
	if skew == 0 {
		skew = -1
	}
	opts := auth.Options{
		Algorithm: cfg.JWTAlgorithm, Secret: cfg.JWTSecret, PublicKey: cfg.JWTPublicKey,
		Issuer: cfg.JWTIssuer, Audience: cfg.JWTAudience, ClockSkew: skew,
		RolesClaim: cfg.JWTRolesClaim, RolesArrayClaim: cfg.JWTRolesArrayClaim,
		RoleNames: auth.RoleNames{Admin: cfg.JWTRoleAdmin, ReadWrite: cfg.JWTRoleReadWrite,
			ReadOnly: cfg.JWTRoleReadOnly, WriteOnly: cfg.JWTRoleWriteOnly},
	}
	if keys != nil { // a nil *jwks.Client in the interface would not be a nil KeySet
		opts.Keys = keys
	}
	v, err := auth.New(opts)
	if err != nil {
		return nil, err
	}
	if cfg.JWTSecret != "" && len(cfg.JWTSecret) < auth.MinSecretBytes {
		log.Warn("JWT_SECRET is shorter than 32 bytes: HS tokens are easier to forge; use a longer random secret",
			"bytes", len(cfg.JWTSecret))
	}
	log.Info("authentication is on", "algorithm", cfg.JWTAlgorithm, "jwks", cfg.JWTJWKSURL != "",
		"issuer", cfg.JWTIssuer, "audience", cfg.JWTAudience)
	return v, nil
}
