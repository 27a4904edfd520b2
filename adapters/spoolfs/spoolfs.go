package spoolfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/queen-go/queen/ports"
)

// FailedDir is the quarantine subdirectory.
const FailedDir = "failed"

// LockFile is the name of the owner lock file in the directory.
const LockFile = "LOCK"

// FS is a spool directory.
type FS struct {
	dir string
}

var (
	_ ports.SpoolFS           = (*FS)(nil)
	_ ports.SpoolFailedLister = (*FS)(nil)
	_ ports.SpoolDirs         = Dirs{}
)

// Dirs opens spool directories on the local file system (or a mounted shared one).
type Dirs struct{}

// Open implements ports.SpoolDirs with New.
func (Dirs) Open(path string) (ports.SpoolFS, error) { return New(path) }

// New returns the spool directory dir, creating it and its failed/ subdirectory (mode
// 0750: spooled payloads are message data, not for other users) when missing.
func New(dir string) (*FS, error) {
	if dir == "" {
		return nil, errors.New("spoolfs: empty directory name")
	}
	if err := os.MkdirAll(filepath.Join(dir, FailedDir), 0o750); err != nil {
		return nil, fmt.Errorf("spoolfs: create %s: %w", dir, err)
	}
	return &FS{dir: dir}, nil
}

// Dir returns the directory.
func (f *FS) Dir() string { return f.dir }

// path maps a spool name to a path, refusing names that would leave the directory.
func (f *FS) path(name string) (string, error) {
	rest, inFailed := strings.CutPrefix(name, FailedDir+"/")
	if rest == "" || rest == "." || rest == ".." || strings.ContainsAny(rest, `/\`+"\x00") {
		return "", fmt.Errorf("spoolfs: invalid name %q", name)
	}
	if inFailed {
		return filepath.Join(f.dir, FailedDir, rest), nil
	}
	return filepath.Join(f.dir, rest), nil
}

// Lock takes the directory's flock without waiting.
func (f *FS) Lock() (func() error, error) {
	return lock(filepath.Join(f.dir, LockFile))
}

// List returns the regular files of the directory.
func (f *FS) List() ([]string, error) {
	return listRegular(f.dir)
}

// ListFailed returns the regular files of failed/ and their sizes in bytes.
func (f *FS) ListFailed() (map[string]int64, error) {
	entries, err := os.ReadDir(filepath.Join(f.dir, FailedDir))
	if err != nil {
		return nil, fmt.Errorf("spoolfs: list failed/: %w", err)
	}
	out := make(map[string]int64, len(entries))
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("spoolfs: stat failed/%s: %w", e.Name(), err)
		}
		out[e.Name()] = info.Size()
	}
	return out, nil
}

func listRegular(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("spoolfs: list %s: %w", dir, err)
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Create creates a new file (O_EXCL: an existing name fails with fs.ErrExist), mode 0640.
func (f *FS) Create(name string) (ports.SpoolFile, error) {
	p, err := f.path(name)
	if err != nil {
		return nil, err
	}
	file, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return nil, fmt.Errorf("spoolfs: %w", err)
	}
	return file, nil
}

// ReadFile returns a file's content.
func (f *FS) ReadFile(name string) ([]byte, error) {
	p, err := f.path(name)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("spoolfs: %w", err)
	}
	return b, nil
}

// Rename renames atomically (rename(2)), replacing the target.
func (f *FS) Rename(from, to string) error {
	pf, err := f.path(from)
	if err != nil {
		return err
	}
	pt, err := f.path(to)
	if err != nil {
		return err
	}
	if err := os.Rename(pf, pt); err != nil {
		return fmt.Errorf("spoolfs: %w", err)
	}
	return nil
}

// Remove deletes a file.
func (f *FS) Remove(name string) error {
	p, err := f.path(name)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil {
		return fmt.Errorf("spoolfs: %w", err)
	}
	return nil
}

// SyncDir fsyncs the directory and failed/.
func (f *FS) SyncDir() error {
	if err := syncDir(f.dir); err != nil {
		return err
	}
	if err := syncDir(filepath.Join(f.dir, FailedDir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("spoolfs: sync directory: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("spoolfs: sync directory %s: %w", dir, err)
	}
	return nil
}
