//go:build !unix

package spoolfs

import "errors"

// lock is not implemented outside Unix: the broker targets Linux.
func lock(string) (func() error, error) {
	return nil, errors.New("spoolfs: directory locking needs flock(2) (Unix only)")
}
