package auth

import (
	"errors"
)

// Rejection is a refusal whose text is the body the client reads ({"error": text}),
// capitalized as docs/api.md §3 words it.
type Rejection string

func (r Rejection) Error() string { return string(r) }

// The rejections, each with the exact text docs/api.md §3 gives the client. ErrNoExpiry and
// ErrBadClaims are ours: docs/api.md makes exp optional and does not name claims of the
// wrong type.
var (
	ErrNoToken        error = Rejection("Authentication required")
	ErrBadHeader      error = Rejection("Bad token header")
	ErrBadSignature   error = Rejection("Invalid token signature")
	ErrExpired        error = Rejection("Token has expired")
	ErrNotYetValid    error = Rejection("Token not yet valid")
	ErrIssuedInFuture error = Rejection("Token issued in the future")
	ErrBadIssuer      error = Rejection("Invalid token issuer")
	ErrBadAudience    error = Rejection("Invalid token audience")
	ErrUnsupportedAlg error = Rejection("Unsupported token algorithm")
	ErrUnknownKID     error = Rejection("Unknown key ID")
	ErrNoExpiry       error = Rejection("Token has no expiry")
	ErrBadClaims      error = Rejection("Invalid token claims")
	ErrForbidden      error = Rejection("Insufficient permissions")
)

// Server-side failures: the client gets a generic 5xx body, the log gets these.
var (
	// ErrNoSecret: an HS token reached a server without JWT_SECRET (auto); 500 as in
	// Queen's reference.
	ErrNoSecret = errors.New("auth: an HS token, and no JWT secret is configured")
	// ErrKeysUnavailable: no key set could be fetched (JWKS unreachable); 503, retry.
	ErrKeysUnavailable = errors.New("auth: token signing keys unavailable")

	errUnknownAlgorithm = errors.New("unknown algorithm")
)

// unauthorized are the rejections of a token (401): the client must authenticate again.
var unauthorized = []error{ErrNoToken, ErrBadHeader, ErrBadSignature, ErrExpired, ErrNotYetValid,
	ErrIssuedInFuture, ErrBadIssuer, ErrBadAudience, ErrUnsupportedAlg, ErrUnknownKID, ErrNoExpiry, ErrBadClaims}

// IsUnauthorized reports whether err rejects the token itself (HTTP 401), as opposed to
// its roles (ErrForbidden), the server's configuration (ErrNoSecret) or an unreachable
// key set (ErrKeysUnavailable).
func IsUnauthorized(err error) bool {
	for _, e := range unauthorized {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Error is a rejection with its cause. Error() is the rejection's public text alone:
// the cause (the JWT library's or the key set's error) is for logs at debug level and
// errors.Is/As, never for the client.
type Error struct {
	Kind  error // one of the sentinels above
	Cause error // may be nil
}

func (e *Error) Error() string { return e.Kind.Error() }

// Unwrap exposes both the kind and the cause.
func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Cause}
}

// Detail is the rejection with its cause, for logs.
func (e *Error) Detail() string {
	if e.Cause == nil {
		return e.Kind.Error()
	}
	return e.Kind.Error() + ": " + e.Cause.Error()
}

func reject(kind, cause error) error { return &Error{Kind: kind, Cause: cause} }
