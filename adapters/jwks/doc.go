// Package jwks is the JSON Web Key Set client behind token verification with
// JWT_JWKS_URL (docs/api.md §3): it implements core/auth's KeySet on lestrrat-go/jwx's
// jwk.Cache, which fetches the set and re-fetches it on a constant interval.
//
// Invariants:
//
//   - New starts nothing; Start registers the URL (waiting up to the fetch timeout for
//     the first fetch, and starting anyway when it fails: the set may come later) and
//     Stop ends every goroutine and connection of the client.
//   - Keys are found by kid. A kid the set does not hold triggers one re-fetch (key
//     rotation), but at most one every MissInterval (5 s) whatever the number of requests
//     asking: a flood of tokens with invented kids costs the identity provider nothing.
//     Requests arriving while that re-fetch runs wait for it instead of starting another.
//   - Only RSA and Ed25519 public keys are handed out (the private parts of a key that
//     has them are dropped); a JWKS never supplies an HMAC secret.
//   - Errors wrap auth.ErrUnknownKID (no such key) or auth.ErrKeysUnavailable (no set was
//     ever fetched), and never contain a token.
package jwks
