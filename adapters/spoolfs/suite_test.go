package spoolfs_test

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/queen-go/queen/adapters/spoolfs"
	"github.com/queen-go/queen/core/spool/spooltest"
)

// TestSpoolSuite runs core/spool's crash and damage suite on a real directory. A
// process death is a copy of the directory taken while the spool still runs: every byte
// the spool wrote is in the page cache and survives the process, and the copy holds no
// lock, as the directory of a dead process holds none.
func TestSpoolSuite(t *testing.T) {
	spooltest.Run(t, func(t *testing.T) spooltest.Env { return dirEnv(t, t.TempDir()) })
}

func dirEnv(t *testing.T, dir string) spooltest.Env {
	fsys := newFS(t, dir)
	path := func(name string) string { return filepath.Join(dir, filepath.FromSlash(name)) }
	return spooltest.Env{
		FS: fsys,
		Read: func(t *testing.T, name string) []byte {
			t.Helper()
			b, err := os.ReadFile(path(name))
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		Write: func(t *testing.T, name string, data []byte) {
			t.Helper()
			if err := os.WriteFile(path(name), data, 0o640); err != nil {
				t.Fatal(err)
			}
		},
		Names: func(t *testing.T) []string {
			t.Helper()
			out := regularFiles(t, dir, "")
			return slices.Sorted(slices.Values(append(out, regularFiles(t, filepath.Join(dir, spoolfs.FailedDir), spoolfs.FailedDir+"/")...)))
		},
		Kill: func(t *testing.T) spooltest.Env {
			t.Helper()
			copied := filepath.Join(t.TempDir(), "spool")
			copyDir(t, dir, copied)
			return dirEnv(t, copied)
		},
	}
}

// regularFiles lists the regular files of dir, each name after prefix.
func regularFiles(t *testing.T, dir, prefix string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			out = append(out, prefix+e.Name())
		}
	}
	return out
}

// copyDir copies the regular files of src and of its failed/ into dst (created).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	for _, sub := range []string{"", spoolfs.FailedDir} {
		if err := os.MkdirAll(filepath.Join(dst, sub), 0o750); err != nil {
			t.Fatal(err)
		}
		for _, name := range regularFiles(t, filepath.Join(src, sub), "") {
			copyFile(t, filepath.Join(src, sub, name), filepath.Join(dst, sub, name))
		}
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
