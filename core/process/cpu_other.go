//go:build !unix

package process

// CPU reports nothing where getrusage does not exist: the CPU columns stay 0.
func CPU() (userUs, sysUs int64) { return 0, 0 }
