//go:build unix

package spoolfs

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"github.com/queen-go/queen/ports"
)

// lock opens (creating) path and flocks it exclusively without blocking; the returned
// function unlocks and closes it.
func lock(path string) (func() error, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("spoolfs: open lock file: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("spoolfs: %s: %w", path, ports.ErrSpoolLocked)
		}
		return nil, fmt.Errorf("spoolfs: flock %s: %w", path, err)
	}
	var once sync.Once
	var uerr error
	return func() error {
		once.Do(func() {
			// Closing the descriptor would release the lock too; unlocking first makes a
			// failure to release visible.
			uerr = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			if cerr := f.Close(); uerr == nil {
				uerr = cerr
			}
			if uerr != nil {
				uerr = fmt.Errorf("spoolfs: unlock %s: %w", path, uerr)
			}
		})
		return uerr
	}, nil
}
