// Package process reads this process's own figures: the CPU time it used and its
// resident and virtual memory. The metrics history samples them (core/history), GET
// /metrics and the Prometheus exporter report the resident size.
//
// Units: CPU in µs since the process started (getrusage; 0 where there is none), memory
// in bytes (/proc/self/statm on Linux; elsewhere the Go runtime's view, which misses
// memory mapped outside it).
package process
