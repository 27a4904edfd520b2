//go:build unix

package process

import "syscall"

// CPU is the process's user and system CPU time so far, µs (getrusage).
func CPU() (userUs, sysUs int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return micros(ru.Utime), micros(ru.Stime)
}

func micros(t syscall.Timeval) int64 { return int64(t.Sec)*1_000_000 + int64(t.Usec) }
