package spoolfs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/ports/porttest"
)

// TestSpoolFSConformance runs the port's suite on a real directory; each handle is a
// separate FS on the same path, as two processes would open it.
func TestSpoolFSConformance(t *testing.T) {
	porttest.SpoolFS(t, func(t *testing.T) porttest.SpoolFSFixture {
		dir := t.TempDir()
		return porttest.SpoolFSFixture{
			FS:     newFS(t, dir),
			Handle: func(t *testing.T) ports.SpoolFS { return newFS(t, dir) },
			Mkdir: func(t *testing.T, name string) {
				if err := os.Mkdir(filepath.Join(dir, filepath.FromSlash(name)), 0o750); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}
