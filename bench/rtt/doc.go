// Package rtt measures what one TCP round trip over loopback costs the process that
// writes: the CPU (user and system, from /proc: bench/load's ProcessCPU) and the wall time per round trip of a
// request of Size bytes answered with 64 bytes, the shape of the broker's bundle call to
// PostgreSQL (one write, one short answer).
//
// Run the server and the client as two processes, pinned to one CPU or to two
// (scripts/bench-rtt.sh does both, alternating): the difference is what a wake-up across
// CPUs costs the writer on this machine. On a virtual machine without hardware
// virtualisation every system call and every wake-up traps to the host, and this is the
// figure that says how much (docs/benchmarks.md).
//
// The wire is raw bytes, no framing: the client writes Size bytes, the server reads
// exactly Size bytes and writes 64 back, and so on until the client closes.
package rtt
