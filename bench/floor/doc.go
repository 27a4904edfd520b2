// Package floor is the HTTP floor of docs/benchmarks.md: the broker's own HTTP layer with nothing behind
// the push route, so that the broker's CPU per single-message push can be compared with
// what the same router, middleware, body decoding and answer cost alone.
//
// Handler is adapters/httpapi's handler, built by the same constructor and options as
// queen-server's (gorilla/mux, the authentication guard, the push handler with its body
// reading, fast-path parser, name validation and hand-written answer), and Server is
// httpapi.NewServer, queen-server's net/http server settings. Only the push use case is
// replaced: Pusher answers every item queued, with a message id (a counter, not a
// UUIDv7: minting is the use case's work), the transaction id the use case would
// report (the message id as a string when the item gives none) and an offset, and does
// nothing else. No other service is configured, so only the push, /health and /metrics
// routes exist; the push route is the router's first either way.
//
// A push waits as it would for a fused commit: Pusher releases every waiting request
// together on a shared ticker, every Cycle (3 ms by default). The broker with its
// default single commit in flight answers single-message pushes from 64 connections in
// bundles about that far apart (a commit of some 30 partitions takes 3 to 4 ms on a
// 2-core machine: docs/benchmarks.md). The wait matters for CPU per request: handlers
// that park and are woken in groups cost the scheduler and the network poller what the
// broker's do, where answering at once would measure a different (busier, one request at
// a time) server. It also bounds the floor's rate near the broker's, so both run at a
// comparable load.
//
// queen-bench floor serves it; queen-bench push -broker-pid <its pid> measures it
// exactly as it measures queen-server.
package floor
