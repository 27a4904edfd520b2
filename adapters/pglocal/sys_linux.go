package pglocal

import "syscall"

// setParentDeathSignal asks the kernel to send the postmaster SIGINT (fast shutdown) when the thread
// that started it dies, so a crashed or killed owner does not leave the server running. Start keeps
// that thread alive, locked to the goroutine that waits for the server, for as long as it runs.
func setParentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGINT
}
