//go:build unix && !linux

package pglocal

import "syscall"

// setParentDeathSignal is Linux-only; elsewhere a killed owner leaves the server running and the
// next Start on the same data directory stops it (see the package documentation).
func setParentDeathSignal(*syscall.SysProcAttr) {}
