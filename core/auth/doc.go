// Package auth is the broker's authentication and authorization (docs/api.md §3): it turns
// a bearer token into a Principal (the token's subject and roles) and says which roles
// may call a route of a given access level.
//
// # Tokens
//
// A Verifier checks JSON Web Tokens signed with HS256/384/512 (a shared secret),
// RS256/384/512 or EdDSA (a PEM public key, or a JWKS whose keys are found by the
// token's kid through a KeySet). The configured algorithm is the only one accepted,
// except that RS256 also accepts RS384 and RS512, and auto accepts all seven, choosing
// the key material by the algorithm's family. Invariants:
//
//   - The algorithm comes from an allow-list compared byte for byte: "none", in any
//     casing, and every algorithm not configured are "Unsupported token algorithm". A
//     token can never pick its own key family: an HS256 token is never checked against
//     a public key (the algorithm-confusion attack), and a JWKS never supplies an HMAC
//     secret.
//   - exp is required (a token without one is rejected: fail closed, where Queen's
//     reference accepts it); exp, nbf and iat are checked with a clock skew (30 s by
//     default); iss and aud are checked when configured (aud may be a string or an
//     array).
//   - Every rejection is one of the sentinel errors of errors.go, whose texts are the
//     bodies docs/api.md specifies. Error texts never contain the token or any part of it,
//     so they may be logged.
//
// # Roles and levels
//
// Roles come from a string claim (role) and/or an array claim (roles), by the
// configured names. Levels are role sets, not a ladder (grants, in level.go): a
// write-only token may push but not read, a read-only token may read but not push.
// A level the table does not know grants nothing (fail closed).
//
// The package has no I/O: fetching a JWKS is an adapter's job (adapters/jwks), behind
// KeySet.
package auth
