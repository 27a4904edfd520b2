// Package porttest is the conformance suite of the ports: every adapter of a port runs
// the same tests (adapters/memory in its own tests, adapters/postgres against a real
// PostgreSQL), so the fakes the core is tested with cannot drift from the real thing.
//
// It lives outside ports (which imports only the standard library) and imports only
// ports and the standard library itself: blobs are opaque bytes here.
package porttest
