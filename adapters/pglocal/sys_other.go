//go:build !unix

package pglocal

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"syscall"
)

// serverUser and the helpers below exist so the package builds everywhere; Start fails early on
// systems without Unix process control, telling the user to point at a server instead.
type serverUser struct{}

func lookupServerUser() (*serverUser, error) {
	return nil, fmt.Errorf("%w (pglocal cannot run a server on %s)", ErrNoBinaries, runtime.GOOS)
}

func (u *serverUser) procAttr(bool) *syscall.SysProcAttr           { return &syscall.SysProcAttr{} }
func (u *serverUser) chown(string) error                           { return nil }
func (u *serverUser) ensureTraversable(string, *slog.Logger) error { return nil }
func setParentDeathSignal(*syscall.SysProcAttr)                    {}
func signalPID(int, syscall.Signal) error                          { return errors.ErrUnsupported }
func processGone(int) bool                                         { return true }
func canInspect() bool                                             { return false }
func isPostgresIn(int, string) bool                                { return false }
func anyPostgresIn(string) bool                                    { return false }
