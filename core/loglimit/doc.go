// Package loglimit keeps a repeated log line from flooding the log: a slog.Handler that
// lets at most Lines lines of each cause through per Interval and summarises the rest
// in one line ("suppressed": K) when the interval ends.
//
// A line opts in by carrying a cause (Cause): a short constant naming why it is logged
// ("push bundle failed", "ack failed"), never a value a client chose, since every cause
// keeps a little state while it is active. Lines without a cause pass untouched, so the
// access log and the one-off lines are never thinned.
//
// Why a handler: the broker builds one logger at its root, and every component logs
// through it (or a logger derived from it with With). Wrapping its handler once limits
// every call site that names a cause, with no limiter to thread through the
// constructors; the summaries go out through the handler of the line they summarise,
// with its attributes (server_id, target).
package loglimit
