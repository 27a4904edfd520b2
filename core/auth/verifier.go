package auth

import (
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// MinSecretBytes is the shortest HS secret we call safe: RFC 7518 §3.2 wants a key at
// least as long as the hash (32 bytes for HS256). A shorter one is accepted with a
// warning (the caller logs it), as Queen's reference accepts it.
const MinSecretBytes = 32

// DefaultClockSkew is the tolerance applied to exp, nbf and iat unless Options says
// otherwise (JWT_CLOCK_SKEW).
const DefaultClockSkew = 30 * time.Second

// NoClockSkew, as Options.ClockSkew, applies exp, nbf and iat without tolerance (any
// negative value does): 0 means DefaultClockSkew.
const NoClockSkew time.Duration = -1

// The other defaults of Options that the server's variables share: config's defaults are
// these values (its tests check it).
const (
	DefaultAlgorithm       = "HS256" // JWT_ALGORITHM
	DefaultRolesClaim      = "role"  // JWT_ROLES_CLAIM
	DefaultRolesArrayClaim = "roles" // JWT_ROLES_ARRAY_CLAIM
)

// DefaultRoleNames are the role names of JWT_ROLE_ADMIN, JWT_ROLE_READ_WRITE,
// JWT_ROLE_READ_ONLY and JWT_ROLE_WRITE_ONLY by default.
var DefaultRoleNames = RoleNames{Admin: "admin", ReadWrite: "read-write", ReadOnly: "read-only", WriteOnly: "write-only"}

// KeySet finds the public key a token names by its kid: a JWKS client (adapters/jwks).
// Key returns an *rsa.PublicKey or an ed25519.PublicKey; an error wrapping
// ErrUnknownKID when the set has no such key (after whatever refresh the set allows),
// or ErrKeysUnavailable when no key set could be fetched.
type KeySet interface {
	Key(ctx context.Context, kid string) (crypto.PublicKey, error)
}

// RoleNames are the claim values that mean each role; empty ones take the defaults in
// brackets.
type RoleNames struct {
	Admin     string // [admin]
	ReadWrite string // [read-write]
	ReadOnly  string // [read-only]
	WriteOnly string // [write-only]
}

// Options configures a Verifier; zero values take the defaults in brackets.
type Options struct {
	// Algorithm is HS256, HS384, HS512, RS256, RS384, RS512, EdDSA or auto, in any case
	// [HS256].
	Algorithm string
	// Secret is the HMAC key of HS* tokens (required for HS*; used for HS* tokens under
	// auto).
	Secret string
	// PublicKey is a PEM RSA or Ed25519 public key for RS* or EdDSA tokens, used when
	// Keys is nil or the token has no kid.
	PublicKey string
	// Keys finds the keys of RS* and EdDSA tokens by kid (a JWKS); nil: none.
	Keys KeySet
	// Issuer, when set, must equal the iss claim.
	Issuer string
	// Audience, when set, must be the aud claim or one of its elements.
	Audience string
	// ClockSkew is how far exp, nbf and iat may be off [DefaultClockSkew]; NoClockSkew
	// (any negative value) means no tolerance.
	ClockSkew time.Duration
	// RolesClaim is the string claim holding one role name [role]; RolesArrayClaim the
	// array claim holding several [roles]. Roles from both are combined.
	RolesClaim      string
	RolesArrayClaim string
	RoleNames       RoleNames
	// Now is the clock [time.Now].
	Now func() time.Time
	// Logger hears the warning about a secret shorter than MinSecretBytes
	// [slog.Default()].
	Logger *slog.Logger
}

// Verifier checks tokens and turns them into principals. It is safe for concurrent use.
type Verifier struct {
	accepted   map[string]bool
	secret     []byte
	static     crypto.PublicKey // from Options.PublicKey; nil when none
	keys       KeySet
	parsers    map[string]*jwt.Parser // per accepted algorithm
	roleClaims [2]string
	roleOf     map[string]Role
	issuer     string // "" when not checked
}

// New builds a Verifier. It fails when the algorithm is unknown or has no key material
// (a secret for HS*, a public key or a key set for RS* and EdDSA, any of them for auto),
// or when the public key is not a PEM key of the algorithm's family: the broker must not
// start with authentication on and nothing to check tokens against.
func New(opts Options) (*Verifier, error) {
	if opts.Algorithm == "" {
		opts.Algorithm = DefaultAlgorithm
	}
	switch {
	case opts.ClockSkew == 0:
		opts.ClockSkew = DefaultClockSkew
	case opts.ClockSkew < 0:
		opts.ClockSkew = 0
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	defaults := func(s *string, def string) {
		if *s == "" {
			*s = def
		}
	}
	defaults(&opts.RolesClaim, DefaultRolesClaim)
	defaults(&opts.RolesArrayClaim, DefaultRolesArrayClaim)
	defaults(&opts.RoleNames.Admin, DefaultRoleNames.Admin)
	defaults(&opts.RoleNames.ReadWrite, DefaultRoleNames.ReadWrite)
	defaults(&opts.RoleNames.ReadOnly, DefaultRoleNames.ReadOnly)
	defaults(&opts.RoleNames.WriteOnly, DefaultRoleNames.WriteOnly)

	acc, err := accepted(opts.Algorithm)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	v := &Verifier{
		accepted:   acc,
		secret:     []byte(opts.Secret),
		keys:       opts.Keys,
		parsers:    make(map[string]*jwt.Parser, len(acc)),
		roleClaims: [2]string{opts.RolesClaim, opts.RolesArrayClaim},
		issuer:     opts.Issuer,
		roleOf: map[string]Role{
			opts.RoleNames.Admin: RoleAdmin, opts.RoleNames.ReadWrite: RoleReadWrite,
			opts.RoleNames.ReadOnly: RoleReadOnly, opts.RoleNames.WriteOnly: RoleWriteOnly,
		},
	}
	if opts.PublicKey != "" {
		if v.static, err = parsePublicKey(opts.PublicKey); err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
	}
	have := KeyMaterial{Secret: opts.Secret != "", PublicKey: opts.PublicKey != "", KeySet: opts.Keys != nil}
	if err := CheckKeyMaterial(opts.Algorithm, have); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	if !strings.EqualFold(opts.Algorithm, "auto") && v.keys == nil && v.static != nil {
		// One family (RS256 accepts RS384 and RS512 too): the public key must be of it.
		for alg := range acc {
			if f := algorithms[alg]; f != familyHMAC && familyOfKey(v.static) != f {
				return nil, fmt.Errorf("auth: algorithm %s: the public key is a %T, not a key of this algorithm", opts.Algorithm, v.static)
			}
		}
	}
	if len(opts.Secret) < MinSecretBytes && opts.Secret != "" {
		opts.Logger.Warn(fmt.Sprintf("JWT_SECRET is shorter than %d bytes: HS tokens are easier to forge; use a longer random secret", MinSecretBytes),
			"bytes", len(opts.Secret))
	}
	popts := []jwt.ParserOption{jwt.WithLeeway(opts.ClockSkew), jwt.WithExpirationRequired(), jwt.WithIssuedAt(),
		jwt.WithTimeFunc(opts.Now)}
	if opts.Issuer != "" {
		popts = append(popts, jwt.WithIssuer(opts.Issuer))
	}
	if opts.Audience != "" {
		popts = append(popts, jwt.WithAudience(opts.Audience))
	}
	for alg := range acc {
		// One algorithm per parser: the library checks it again, after our own check of
		// the header, so the two would have to be wrong together.
		v.parsers[alg] = jwt.NewParser(append([]jwt.ParserOption{jwt.WithValidMethods([]string{alg})}, popts...)...)
	}
	return v, nil
}

// header is the part of a JOSE header we read before verifying.
type header struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
}

// Verify checks token (without its "Bearer " prefix) and returns its principal. A
// rejection wraps one of the sentinel errors: ErrNoToken for an empty token, the
// docs/api.md §3 kinds for a bad one, ErrNoSecret when an HS token meets a server without a
// secret (auto), ErrKeysUnavailable when the key set cannot be fetched.
func (v *Verifier) Verify(ctx context.Context, token string) (Principal, error) {
	if token == "" {
		return Principal{}, ErrNoToken
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return Principal{}, reject(ErrBadHeader, errors.New("want three dot-separated segments"))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return Principal{}, reject(ErrBadHeader, errors.New("header is not base64url"))
	}
	var h header
	if err := json.Unmarshal(raw, &h); err != nil {
		return Principal{}, reject(ErrBadHeader, errors.New("header is not a JSON object with a string alg"))
	}
	// Byte-for-byte: "none", "NONE", "hs256" and every algorithm not configured stop here.
	if !v.accepted[h.Alg] {
		return Principal{}, reject(ErrUnsupportedAlg, nil)
	}
	if _, err := base64.RawURLEncoding.DecodeString(parts[2]); err != nil {
		return Principal{}, reject(ErrBadSignature, errors.New("signature is not base64url"))
	}
	key, err := v.key(ctx, h)
	if err != nil {
		return Principal{}, err
	}
	claims := jwt.MapClaims{}
	_, err = v.parsers[h.Alg].ParseWithClaims(token, claims, func(*jwt.Token) (any, error) { return key, nil })
	if err != nil {
		return Principal{}, reject(v.kindOf(err, claims), err)
	}
	sub, err := claims.GetSubject()
	if err != nil {
		return Principal{}, reject(ErrBadClaims, err)
	}
	return Principal{Subject: sub, Roles: v.roles(claims)}, nil
}

// key chooses the key of a token by its algorithm's family: the secret for HS*; for RS*
// and EdDSA the key set's key by kid, else the configured public key.
func (v *Verifier) key(ctx context.Context, h header) (any, error) {
	f := algorithms[h.Alg]
	if f == familyHMAC {
		if len(v.secret) == 0 {
			return nil, ErrNoSecret
		}
		return v.secret, nil
	}
	if v.keys != nil && h.Kid != "" {
		k, err := v.keys.Key(ctx, h.Kid)
		switch {
		case err == nil:
			return k, nil
		case errors.Is(err, ErrUnknownKID):
			return nil, reject(ErrUnknownKID, err)
		case errors.Is(err, ErrKeysUnavailable):
			return nil, err
		default:
			return nil, reject(ErrKeysUnavailable, err)
		}
	}
	if familyOfKey(v.static) == f {
		return v.static, nil
	}
	if v.keys != nil {
		return nil, reject(ErrUnknownKID, errors.New("the token has no kid"))
	}
	// Only under auto: this family has no key material at all.
	return nil, reject(ErrUnsupportedAlg, errors.New("no key for this algorithm"))
}

// kindOf maps a JWT library error to our rejection. Signature problems come first (the
// library checks the signature before the claims); among claims, time before identity.
func (v *Verifier) kindOf(err error, claims jwt.MapClaims) error {
	switch {
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return ErrBadSignature
	case errors.Is(err, jwt.ErrTokenMalformed), errors.Is(err, jwt.ErrInvalidType):
		return ErrBadClaims
	case errors.Is(err, jwt.ErrTokenExpired):
		return ErrExpired
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return ErrNotYetValid
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return ErrIssuedInFuture
	}
	if _, ok := claims["exp"]; !ok {
		return ErrNoExpiry
	}
	switch {
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return ErrBadIssuer
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return ErrBadAudience
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		// exp is present, so the missing claim is the configured iss or aud.
		if _, ok := claims["iss"]; !ok && v.issuer != "" {
			return ErrBadIssuer
		}
		return ErrBadAudience
	}
	return ErrBadClaims
}

// roles reads the string claim and the array claim; either may hold a string or an
// array of strings. Names that are no role are ignored.
func (v *Verifier) roles(claims jwt.MapClaims) RoleSet {
	var s RoleSet
	for _, name := range v.roleClaims {
		switch x := claims[name].(type) {
		case string:
			s |= RoleSet(v.roleOf[x])
		case []any:
			for _, e := range x {
				if str, ok := e.(string); ok {
					s |= RoleSet(v.roleOf[str])
				}
			}
		}
	}
	return s
}
