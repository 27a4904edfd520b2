package auth

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const secret = "0123456789abcdef0123456789abcdef-test-secret"

// now is the verifiers' fixed clock.
var now = time.Unix(1_800_000_000, 0)

// testKeys are generated once: RSA key generation takes a while.
var testKeys = sync.OnceValue(func() (k struct {
	rsa, rsa2 *rsa.PrivateKey
	ed        ed25519.PrivateKey
}) {
	var err error
	if k.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		panic(err)
	}
	if k.rsa2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		panic(err)
	}
	if _, k.ed, err = ed25519.GenerateKey(rand.Reader); err != nil {
		panic(err)
	}
	return k
})

func pemOf(t testing.TB, pub crypto.PublicKey) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// claims are valid for an hour at now, for alice with the admin role.
func claims(mod func(jwt.MapClaims)) jwt.MapClaims {
	c := jwt.MapClaims{"sub": "alice", "role": "admin", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	if mod != nil {
		mod(c)
	}
	return c
}

// sign signs c with alg and key; kid "" leaves it out.
func sign(t testing.TB, alg, kid string, key any, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(alg), c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("sign %s: %v", alg, err)
	}
	return s
}

func b64(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

// unsigned is a token with the given header and claims and an empty signature.
func unsigned(h map[string]any, c jwt.MapClaims) string { return b64(h) + "." + b64(c) + "." }

// fakeKeys is a KeySet over a map; err, when set, is every lookup's answer.
type fakeKeys struct {
	keys map[string]crypto.PublicKey
	err  error
}

func (f fakeKeys) Key(_ context.Context, kid string) (crypto.PublicKey, error) {
	if f.err != nil {
		return nil, f.err
	}
	if k, ok := f.keys[kid]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("kid %q: %w", kid, ErrUnknownKID)
}

func TestVerify(t *testing.T) {
	t.Parallel()
	k := testKeys()
	rsaPEM := pemOf(t, &k.rsa.PublicKey)
	edPEM := pemOf(t, k.ed.Public())
	jwks := fakeKeys{keys: map[string]crypto.PublicKey{"r1": &k.rsa.PublicKey, "e1": k.ed.Public()}}
	hs := Options{Secret: secret}
	rs := Options{Algorithm: "RS256", PublicKey: rsaPEM}
	tests := []struct {
		name  string
		opts  Options
		token func(t *testing.T) string
		want  error   // the rejection kind; nil: accepted
		sub   string  // when accepted
		roles RoleSet // when accepted
	}{
		{name: "HS256 valid", opts: hs, token: func(t *testing.T) string { return sign(t, "HS256", "", []byte(secret), claims(nil)) },
			sub: "alice", roles: Roles(RoleAdmin)},
		{name: "roles array", opts: hs, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(func(c jwt.MapClaims) {
				delete(c, "role")
				c["roles"] = []string{"read-only", "write-only", "janitor"}
			}))
		}, sub: "alice", roles: Roles(RoleReadOnly, RoleWriteOnly)},
		{name: "role and roles combine", opts: hs, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(func(c jwt.MapClaims) { c["role"], c["roles"] = "read-only", []string{"write-only"} }))
		}, sub: "alice", roles: Roles(RoleReadOnly, RoleWriteOnly)},
		{name: "custom claims and role names", opts: Options{Secret: secret, RolesClaim: "grp", RolesArrayClaim: "grps",
			RoleNames: RoleNames{Admin: "root", ReadOnly: "viewer"}}, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(func(c jwt.MapClaims) { c["grp"], c["grps"] = "root", []string{"viewer", "admin"} }))
		}, sub: "alice", roles: Roles(RoleAdmin, RoleReadOnly)},
		{name: "unknown role and no sub", opts: hs, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(func(c jwt.MapClaims) { c["role"] = "superuser"; delete(c, "sub") }))
		}},
		{name: "empty token", opts: hs, token: func(*testing.T) string { return "" }, want: ErrNoToken},
		{name: "garbage", opts: hs, token: func(*testing.T) string { return "garbage" }, want: ErrBadHeader},
		{name: "three segments of garbage", opts: hs, token: func(*testing.T) string { return "a.b.c" }, want: ErrBadHeader},
		{name: "four segments", opts: hs, token: func(t *testing.T) string { return sign(t, "HS256", "", []byte(secret), claims(nil)) + ".x" }, want: ErrBadHeader},
		{name: "alg not a string", opts: hs, token: func(*testing.T) string { return unsigned(map[string]any{"alg": 256}, claims(nil)) }, want: ErrBadHeader},
		{name: "alg none", opts: hs, token: func(*testing.T) string { return unsigned(map[string]any{"alg": "none"}, claims(nil)) }, want: ErrUnsupportedAlg},
		{name: "alg None", opts: hs, token: func(*testing.T) string { return unsigned(map[string]any{"alg": "None"}, claims(nil)) }, want: ErrUnsupportedAlg},
		{name: "alg NONE", opts: hs, token: func(*testing.T) string { return unsigned(map[string]any{"alg": "NONE"}, claims(nil)) }, want: ErrUnsupportedAlg},
		{name: "alg nOnE under auto", opts: Options{Algorithm: "auto", Secret: secret}, token: func(*testing.T) string {
			return unsigned(map[string]any{"alg": "nOnE"}, claims(nil))
		}, want: ErrUnsupportedAlg},
		{name: "alg hs256 in lower case", opts: hs, token: func(t *testing.T) string {
			good := sign(t, "HS256", "", []byte(secret), claims(nil))
			return b64(map[string]any{"alg": "hs256", "typ": "JWT"}) + good[strings.Index(good, "."):]
		}, want: ErrUnsupportedAlg},
		{name: "HS384 on an HS256 server", opts: hs, token: func(t *testing.T) string { return sign(t, "HS384", "", []byte(secret), claims(nil)) }, want: ErrUnsupportedAlg},
		{name: "wrong secret", opts: hs, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte("another-secret-another-secret-123"), claims(nil))
		}, want: ErrBadSignature},
		{name: "payload changed, signature kept", opts: hs, token: func(t *testing.T) string {
			parts := strings.Split(sign(t, "HS256", "", []byte(secret), claims(nil)), ".")
			parts[1] = b64(claims(func(c jwt.MapClaims) { c["sub"] = "mallory" }))
			return strings.Join(parts, ".")
		}, want: ErrBadSignature},
		{name: "signature not base64url", opts: hs, token: func(t *testing.T) string { return sign(t, "HS256", "", []byte(secret), claims(nil)) + "!" }, want: ErrBadSignature},
		{name: "expired beyond the skew", opts: hs, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(func(c jwt.MapClaims) { c["exp"] = now.Add(-31 * time.Second).Unix() }))
		}, want: ErrExpired},
		{name: "expired inside the skew", opts: hs, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(func(c jwt.MapClaims) { c["exp"] = now.Add(-29 * time.Second).Unix() }))
		}, sub: "alice", roles: Roles(RoleAdmin)},
		{name: "expired, no skew", opts: Options{Secret: secret, ClockSkew: -1}, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Second).Unix() }))
		}, want: ErrExpired},
		{name: "exp missing", opts: hs, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(func(c jwt.MapClaims) { delete(c, "exp") }))
		}, want: ErrNoExpiry},
		{name: "exp not a number", opts: hs, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(func(c jwt.MapClaims) { c["exp"] = "tomorrow" }))
		}, want: ErrBadClaims},
		{name: "sub not a string", opts: hs, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(func(c jwt.MapClaims) { c["sub"] = 42 }))
		}, want: ErrBadClaims},
		{name: "nbf beyond the skew", opts: hs, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(func(c jwt.MapClaims) { c["nbf"] = now.Add(31 * time.Second).Unix() }))
		}, want: ErrNotYetValid},
		{name: "nbf inside the skew", opts: hs, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(func(c jwt.MapClaims) { c["nbf"] = now.Add(29 * time.Second).Unix() }))
		}, sub: "alice", roles: Roles(RoleAdmin)},
		{name: "iat in the future", opts: hs, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(func(c jwt.MapClaims) { c["iat"] = now.Add(time.Minute).Unix() }))
		}, want: ErrIssuedInFuture},
		{name: "issuer matches", opts: Options{Secret: secret, Issuer: "idp"}, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(func(c jwt.MapClaims) { c["iss"] = "idp" }))
		}, sub: "alice", roles: Roles(RoleAdmin)},
		{name: "wrong issuer", opts: Options{Secret: secret, Issuer: "idp"}, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(func(c jwt.MapClaims) { c["iss"] = "evil" }))
		}, want: ErrBadIssuer},
		{name: "issuer missing", opts: Options{Secret: secret, Issuer: "idp"}, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(nil))
		}, want: ErrBadIssuer},
		{name: "audience string", opts: Options{Secret: secret, Audience: "queen"}, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(func(c jwt.MapClaims) { c["aud"] = "queen" }))
		}, sub: "alice", roles: Roles(RoleAdmin)},
		{name: "audience array", opts: Options{Secret: secret, Audience: "queen"}, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(func(c jwt.MapClaims) { c["aud"] = []string{"other", "queen"} }))
		}, sub: "alice", roles: Roles(RoleAdmin)},
		{name: "wrong audience", opts: Options{Secret: secret, Audience: "queen"}, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(func(c jwt.MapClaims) { c["aud"] = []string{"other"} }))
		}, want: ErrBadAudience},
		{name: "audience missing", opts: Options{Secret: secret, Audience: "queen"}, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(nil))
		}, want: ErrBadAudience},

		{name: "RS256 with a PEM key", opts: rs, token: func(t *testing.T) string { return sign(t, "RS256", "", k.rsa, claims(nil)) },
			sub: "alice", roles: Roles(RoleAdmin)},
		{name: "RS384 on an RS256 server", opts: rs, token: func(t *testing.T) string { return sign(t, "RS384", "", k.rsa, claims(nil)) },
			sub: "alice", roles: Roles(RoleAdmin)},
		{name: "RS512 on an RS256 server", opts: rs, token: func(t *testing.T) string { return sign(t, "RS512", "", k.rsa, claims(nil)) },
			sub: "alice", roles: Roles(RoleAdmin)},
		{name: "RS256 on an RS384 server", opts: Options{Algorithm: "RS384", PublicKey: rsaPEM}, token: func(t *testing.T) string {
			return sign(t, "RS256", "", k.rsa, claims(nil))
		}, want: ErrUnsupportedAlg},
		{name: "RS256 signed by another key", opts: rs, token: func(t *testing.T) string { return sign(t, "RS256", "", k.rsa2, claims(nil)) },
			want: ErrBadSignature},
		{name: "algorithm confusion: HS256 with the public key as secret", opts: rs, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(rsaPEM), claims(nil))
		}, want: ErrUnsupportedAlg},
		{name: "algorithm confusion on a JWKS server", opts: Options{Algorithm: "RS256", Keys: jwks}, token: func(t *testing.T) string {
			return sign(t, "HS256", "r1", []byte(rsaPEM), claims(nil))
		}, want: ErrUnsupportedAlg},
		{name: "JWKS key by kid", opts: Options{Algorithm: "RS256", Keys: jwks}, token: func(t *testing.T) string {
			return sign(t, "RS256", "r1", k.rsa, claims(nil))
		}, sub: "alice", roles: Roles(RoleAdmin)},
		{name: "JWKS unknown kid", opts: Options{Algorithm: "RS256", Keys: jwks}, token: func(t *testing.T) string {
			return sign(t, "RS256", "nope", k.rsa, claims(nil))
		}, want: ErrUnknownKID},
		{name: "JWKS token without kid", opts: Options{Algorithm: "RS256", Keys: jwks}, token: func(t *testing.T) string {
			return sign(t, "RS256", "", k.rsa, claims(nil))
		}, want: ErrUnknownKID},
		{name: "JWKS token without kid falls back to the PEM key", opts: Options{Algorithm: "RS256", Keys: jwks, PublicKey: rsaPEM},
			token: func(t *testing.T) string { return sign(t, "RS256", "", k.rsa, claims(nil)) }, sub: "alice", roles: Roles(RoleAdmin)},
		{name: "JWKS kid of a key of another family", opts: Options{Algorithm: "RS256", Keys: jwks}, token: func(t *testing.T) string {
			return sign(t, "RS256", "e1", k.rsa, claims(nil))
		}, want: ErrBadSignature},
		{name: "JWKS unreachable", opts: Options{Algorithm: "RS256", Keys: fakeKeys{err: errors.New("connection refused")}},
			token: func(t *testing.T) string { return sign(t, "RS256", "r1", k.rsa, claims(nil)) }, want: ErrKeysUnavailable},

		{name: "EdDSA with a PEM key", opts: Options{Algorithm: "EdDSA", PublicKey: edPEM}, token: func(t *testing.T) string {
			return sign(t, "EdDSA", "", k.ed, claims(nil))
		}, sub: "alice", roles: Roles(RoleAdmin)},
		{name: "EdDSA by kid", opts: Options{Algorithm: "eddsa", Keys: jwks}, token: func(t *testing.T) string {
			return sign(t, "EdDSA", "e1", k.ed, claims(nil))
		}, sub: "alice", roles: Roles(RoleAdmin)},
		{name: "RS256 on an EdDSA server", opts: Options{Algorithm: "EdDSA", PublicKey: edPEM}, token: func(t *testing.T) string {
			return sign(t, "RS256", "", k.rsa, claims(nil))
		}, want: ErrUnsupportedAlg},

		{name: "auto: HS512", opts: Options{Algorithm: "auto", Secret: secret, PublicKey: rsaPEM}, token: func(t *testing.T) string {
			return sign(t, "HS512", "", []byte(secret), claims(nil))
		}, sub: "alice", roles: Roles(RoleAdmin)},
		{name: "auto: RS384", opts: Options{Algorithm: "AUTO", Secret: secret, PublicKey: rsaPEM}, token: func(t *testing.T) string {
			return sign(t, "RS384", "", k.rsa, claims(nil))
		}, sub: "alice", roles: Roles(RoleAdmin)},
		{name: "auto: HS256 with the public key as secret", opts: Options{Algorithm: "auto", Secret: secret, PublicKey: rsaPEM},
			token: func(t *testing.T) string { return sign(t, "HS256", "", []byte(rsaPEM), claims(nil)) }, want: ErrBadSignature},
		{name: "auto: EdDSA without an Ed25519 key", opts: Options{Algorithm: "auto", Secret: secret, PublicKey: rsaPEM},
			token: func(t *testing.T) string { return sign(t, "EdDSA", "", k.ed, claims(nil)) }, want: ErrUnsupportedAlg},
		{name: "auto: HS256 without a secret", opts: Options{Algorithm: "auto", PublicKey: rsaPEM}, token: func(t *testing.T) string {
			return sign(t, "HS256", "", []byte(secret), claims(nil))
		}, want: ErrNoSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.opts.Now = func() time.Time { return now }
			v, err := New(tt.opts)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			token := tt.token(t)
			p, err := v.Verify(context.Background(), token)
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("Verify: %v, want %v", err, tt.want)
				}
				if strings.Contains(err.Error(), token) && token != "" {
					t.Fatalf("the error %q quotes the token", err)
				}
				if got := unauthorizedOrNot(err); got != (tt.want != ErrNoSecret && tt.want != ErrKeysUnavailable) {
					t.Fatalf("IsUnauthorized(%v) = %v", err, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if p.Subject != tt.sub || p.Roles != tt.roles {
				t.Fatalf("principal %+v, want sub %q roles %b", p, tt.sub, tt.roles)
			}
		})
	}
}

func unauthorizedOrNot(err error) bool { return IsUnauthorized(err) }

// TestRejectionTexts: clients read these exact bodies (docs/api.md §3).
func TestRejectionTexts(t *testing.T) {
	t.Parallel()
	want := map[error]string{
		ErrNoToken: "Authentication required", ErrBadHeader: "Bad token header", ErrBadSignature: "Invalid token signature",
		ErrExpired: "Token has expired", ErrNotYetValid: "Token not yet valid", ErrIssuedInFuture: "Token issued in the future",
		ErrBadIssuer: "Invalid token issuer", ErrBadAudience: "Invalid token audience",
		ErrUnsupportedAlg: "Unsupported token algorithm", ErrUnknownKID: "Unknown key ID", ErrForbidden: "Insufficient permissions",
	}
	for e, s := range want {
		if e.Error() != s {
			t.Errorf("%q, want %q", e.Error(), s)
		}
		wrapped := reject(e, errors.New("the library's detail"))
		if wrapped.Error() != s || !errors.Is(wrapped, e) {
			t.Errorf("wrapped %v: text %q", e, wrapped.Error())
		}
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	k := testKeys()
	rsaPEM := pemOf(t, &k.rsa.PublicKey)
	edPEM := pemOf(t, k.ed.Public())
	pkcs1 := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&k.rsa.PublicKey)}))
	tests := []struct {
		name    string
		opts    Options
		wantErr string // substring; "" means New succeeds
	}{
		{name: "defaults to HS256", opts: Options{Secret: secret}},
		{name: "unknown algorithm", opts: Options{Algorithm: "ES256", Secret: secret}, wantErr: "unknown algorithm"},
		{name: "HS256 without a secret", opts: Options{}, wantErr: "no secret"},
		{name: "HS512 with only a public key", opts: Options{Algorithm: "HS512", PublicKey: rsaPEM}, wantErr: "no secret"},
		{name: "RS256 without a key", opts: Options{Algorithm: "RS256", Secret: secret}, wantErr: "no public key and no key set"},
		{name: "RS256 with an Ed25519 key", opts: Options{Algorithm: "RS256", PublicKey: edPEM}, wantErr: "not a key of this algorithm"},
		{name: "EdDSA with an RSA key", opts: Options{Algorithm: "EdDSA", PublicKey: rsaPEM}, wantErr: "not a key of this algorithm"},
		{name: "RS256 with a key set", opts: Options{Algorithm: "rs256", Keys: fakeKeys{}}},
		{name: "PKCS #1 PEM", opts: Options{Algorithm: "RS256", PublicKey: pkcs1}},
		{name: "PEM with escaped line breaks", opts: Options{Algorithm: "RS256", PublicKey: strings.ReplaceAll(rsaPEM, "\n", `\n`)}},
		{name: "not PEM", opts: Options{Algorithm: "RS256", PublicKey: "not a key"}, wantErr: "no PEM block"},
		{name: "private key PEM", opts: Options{Algorithm: "RS256", PublicKey: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"},
			wantErr: `PEM block "PRIVATE KEY"`},
		{name: "auto without anything", opts: Options{Algorithm: "auto"}, wantErr: "no key material"},
		{name: "auto with a secret only", opts: Options{Algorithm: "auto", Secret: "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tt.opts)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("New: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
