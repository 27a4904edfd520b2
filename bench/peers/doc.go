// Package peers is the root of a separate Go module that holds the peers queen-go's
// benchmarks measure it beside: other systems doing the same job on the same PostgreSQL,
// in the same run, with the same CPU pinning (scripts/bench-latency.sh, make
// bench-latency).
//
// It is its own module (bench/peers/go.mod) so that the broker never depends on a peer:
// the peers' libraries appear in this module's go.mod and go.sum only, never in the
// root module's, and `go build ./...` or `go test ./...` at the root does not see them.
// The module replaces github.com/queen-go/queen with the working tree (../..) to reuse
// the load tool's pacer, histograms, summary line and CPU readings (bench/load), so a
// peer's figures are computed exactly as queen-bench's are.
//
// Each peer is a command in a subdirectory:
//
//   - river: River (a Go job queue on PostgreSQL), push-to-consume latency as queen-bench
//     latency measures it (bin/peer-river).
//
// This package itself holds no code: it only documents the module.
package peers
