package queen

import (
	"log/slog"

	"github.com/queen-go/queen/adapters/jwks"
	"github.com/queen-go/queen/config"
	"github.com/queen-go/queen/core/auth"
)

// ProvideKeySet builds the JWKS client when the configuration uses one
// (config.UsesJWKS); nil otherwise. It fetches nothing until App.Start starts it.
func ProvideKeySet(cfg config.Config, log *slog.Logger) (*jwks.Client, error) {
	if !cfg.UsesJWKS() {
		return nil, nil
	}
	return jwks.New(cfg.JWTJWKSURL, jwks.Options{Refresh: cfg.JWTRefresh(), Timeout: cfg.JWTJWKSTimeout, Logger: log})
}

// ProvideVerifier builds the token verifier from the JWT_* variables (docs/api.md §3, §6.5);
// nil when JWT_ENABLED is off, which lets every request through (App.Start warns). A
// secret or key the verifier cannot use stops the broker from starting.
func ProvideVerifier(cfg config.Config, keys *jwks.Client, log *slog.Logger) (*auth.Verifier, error) {
	if !cfg.JWTEnabled {
		return nil, nil
	}
	opts := auth.Options{
		Algorithm: cfg.JWTAlgorithm, Secret: cfg.JWTSecret, PublicKey: cfg.JWTPublicKey,
		Issuer: cfg.JWTIssuer, Audience: cfg.JWTAudience, ClockSkew: cfg.JWTLeeway(), Logger: log,
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
	log.Info("authentication is on", "algorithm", cfg.JWTAlgorithm, "jwks", cfg.JWTJWKSURL != "",
		"issuer", cfg.JWTIssuer, "audience", cfg.JWTAudience)
	return v, nil
}
