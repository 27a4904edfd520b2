package memory

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queen-go/queen/ports"
)

// SpoolFS is an in-memory ports.SpoolFS for core tests that models what survives a
// crash: every file keeps its written bytes and its synced bytes apart, and the directory
// keeps its current names and its synced names apart. Crash returns the state a machine
// would reboot with: synced names, each with its synced bytes. Every operation can be
// made to fail (SetFault).
//
// Apart from durability it behaves as adapters/spoolfs does on a real directory, which
// the conformance suite (ports/porttest.SpoolFS) checks for both: names are validated the
// same way, failed/ always exists, a closed file refuses writes, syncs and a second
// Close with fs.ErrClosed, and Mkdir makes the subdirectories listings must skip. Unlike
// adapters/spoolfs it keeps no LOCK file in the directory: the lock is a flag shared by
// the handles of one directory.
type SpoolFS struct {
	st *spoolStore
}

type spoolStore struct {
	mu      sync.Mutex
	cur     map[string]*inode // names now
	durable map[string]*inode // names as of the last SyncDir
	// dirs are the subdirectories: "failed" (always there, as adapters/spoolfs makes it
	// at New) and those Mkdir made, "x" or "failed/x". They are not files: listings skip
	// them and file operations refuse their names, as on a real directory.
	dirs   map[string]bool
	locked bool

	// fault, when set, is called before every operation ("create", "write", "sync",
	// "rename", "remove", "syncdir", "read", "list", "lock") with the file name; a
	// non-nil error fails the operation. For "write", partial writes half of the bytes
	// before failing.
	fault   func(op, name string) error
	partial bool
	// syncHook, when set, runs (outside the lock) at every file Sync before the bytes
	// become durable, e.g. to make fsyncs slow or to hold one while the test crashes.
	syncHook func(name string)

	syncs, dirSyncs int
}

type inode struct {
	data   []byte // written
	synced []byte // durable
}

// NewSpoolFS returns an empty directory.
func NewSpoolFS() *SpoolFS {
	return &SpoolFS{st: &spoolStore{cur: map[string]*inode{}, durable: map[string]*inode{},
		dirs: map[string]bool{strings.TrimSuffix(failedPrefix, "/"): true}}}
}

// Handle returns a second SpoolFS over the same directory (another process's view).
func (m *SpoolFS) Handle() *SpoolFS { return &SpoolFS{st: m.st} }

// Crash returns the directory as it would be found after a power loss now.
func (m *SpoolFS) Crash() *SpoolFS {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	n := NewSpoolFS()
	for name, ino := range m.st.durable {
		c := &inode{data: bytes.Clone(ino.synced), synced: bytes.Clone(ino.synced)}
		n.st.cur[name] = c
		n.st.durable[name] = c
	}
	maps.Copy(n.st.dirs, m.st.dirs)
	return n
}

// Mkdir makes an empty subdirectory, "x" or "failed/x" (durable at once, as if an
// operator had made it long ago). The spool never makes one; tests use it to check that
// listings report regular files only.
func (m *SpoolFS) Mkdir(name string) error {
	if err := validName(name); err != nil {
		return err
	}
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	if m.st.cur[name] != nil || m.st.dirs[name] {
		return &fs.PathError{Op: "mkdir", Path: name, Err: fs.ErrExist}
	}
	m.st.dirs[name] = true
	return nil
}

// errIsDir is the error of a file operation on a subdirectory's name (EISDIR).
var errIsDir = errors.New("is a directory")

// validName refuses, as adapters/spoolfs does, every name but a plain file name or
// "failed/" followed by one: nothing that could leave the directory ("..", separators,
// absolute paths) and nothing empty.
func validName(name string) error {
	rest, _ := strings.CutPrefix(name, failedPrefix)
	if rest == "" || rest == "." || rest == ".." || strings.ContainsAny(rest, `/\`+"\x00") {
		return fmt.Errorf("memfs: invalid name %q", name)
	}
	return nil
}

// failedPrefix starts the names of the quarantine subdirectory's files.
const failedPrefix = "failed/"

// SetFault sets (nil: clears) the fault injected before every operation ("create",
// "write", "sync", "rename", "remove", "syncdir", "read", "list", "lock"); with partial,
// a failing write still writes half of its bytes first.
func (m *SpoolFS) SetFault(f func(op, name string) error, partial bool) {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	m.st.fault, m.st.partial = f, partial
}

func (m *SpoolFS) check(op, name string) error {
	if m.st.fault != nil {
		if err := m.st.fault(op, name); err != nil {
			return &fs.PathError{Op: op, Path: name, Err: err}
		}
	}
	return nil
}

// Names lists current names with the given prefix and suffix, sorted.
func (m *SpoolFS) Names(prefix, suffix string) []string {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	var out []string
	for n := range m.st.cur {
		if strings.HasPrefix(n, prefix) && strings.HasSuffix(n, suffix) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Get returns a copy of a file's current bytes.
func (m *SpoolFS) Get(name string) []byte {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	if ino := m.st.cur[name]; ino != nil {
		return bytes.Clone(ino.data)
	}
	return nil
}

// Put writes a durable file (as if synced and the directory synced).
func (m *SpoolFS) Put(name string, data []byte) {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	ino := &inode{data: bytes.Clone(data), synced: bytes.Clone(data)}
	m.st.cur[name] = ino
	m.st.durable[name] = ino
}

// Lock implements ports.SpoolFS: one owner per directory, across every handle
// (Handle) of it. The returned unlock releases the lock once; calling it again does
// nothing, so a stale unlock cannot release a later owner's lock.
func (m *SpoolFS) Lock() (func() error, error) {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	if err := m.check("lock", "LOCK"); err != nil {
		return nil, err
	}
	if m.st.locked {
		return nil, fmt.Errorf("memfs: %w", ports.ErrSpoolLocked)
	}
	m.st.locked = true
	var once sync.Once
	return func() error {
		once.Do(func() {
			m.st.mu.Lock()
			m.st.locked = false
			m.st.mu.Unlock()
		})
		return nil
	}, nil
}

// List implements ports.SpoolFS: the files directly in the directory, not those of
// failed/ and not subdirectories.
func (m *SpoolFS) List() ([]string, error) {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	if err := m.check("list", ""); err != nil {
		return nil, err
	}
	var out []string
	for n := range m.st.cur {
		if !strings.HasPrefix(n, failedPrefix) {
			out = append(out, n)
		}
	}
	return out, nil
}

// ListFailed implements ports.SpoolFailedLister: the files of failed/ with their
// current sizes in bytes (written, synced or not, as stat(2) reports them).
func (m *SpoolFS) ListFailed() (map[string]int64, error) {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	if err := m.check("list", failedPrefix); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for n, ino := range m.st.cur {
		if rest, ok := strings.CutPrefix(n, failedPrefix); ok {
			out[rest] = int64(len(ino.data))
		}
	}
	return out, nil
}

// Create implements ports.SpoolFS (O_EXCL: an existing file or subdirectory of that
// name fails with fs.ErrExist).
func (m *SpoolFS) Create(name string) (ports.SpoolFile, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	if err := m.check("create", name); err != nil {
		return nil, err
	}
	if m.st.cur[name] != nil || m.st.dirs[name] {
		return nil, &fs.PathError{Op: "create", Path: name, Err: fs.ErrExist}
	}
	ino := &inode{}
	m.st.cur[name] = ino
	return &spoolFile{fs: m, name: name, ino: ino}, nil
}

// ReadFile implements ports.SpoolFS: the bytes written so far, synced or not.
func (m *SpoolFS) ReadFile(name string) ([]byte, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	if err := m.check("read", name); err != nil {
		return nil, err
	}
	if m.st.dirs[name] {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errIsDir}
	}
	ino := m.st.cur[name]
	if ino == nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
	}
	return bytes.Clone(ino.data), nil
}

// Rename implements ports.SpoolFS, replacing the target file. As rename(2), renaming a
// file onto itself changes nothing and a file cannot replace a subdirectory.
func (m *SpoolFS) Rename(from, to string) error {
	if err := validName(from); err != nil {
		return err
	}
	if err := validName(to); err != nil {
		return err
	}
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	if err := m.check("rename", from); err != nil {
		return err
	}
	ino := m.st.cur[from]
	if ino == nil {
		return &fs.PathError{Op: "rename", Path: from, Err: fs.ErrNotExist}
	}
	if m.st.dirs[to] {
		return &fs.PathError{Op: "rename", Path: to, Err: errIsDir}
	}
	if from == to {
		return nil
	}
	m.st.cur[to] = ino
	delete(m.st.cur, from)
	return nil
}

// Remove implements ports.SpoolFS for files (a subdirectory's name is refused).
func (m *SpoolFS) Remove(name string) error {
	if err := validName(name); err != nil {
		return err
	}
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	if err := m.check("remove", name); err != nil {
		return err
	}
	if m.st.dirs[name] {
		return &fs.PathError{Op: "remove", Path: name, Err: errIsDir}
	}
	if m.st.cur[name] == nil {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	delete(m.st.cur, name)
	return nil
}

// SyncDir implements ports.SpoolFS: the current names become the ones a crash keeps.
func (m *SpoolFS) SyncDir() error {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	if err := m.check("syncdir", ""); err != nil {
		return err
	}
	m.st.durable = maps.Clone(m.st.cur)
	m.st.dirSyncs++
	return nil
}

type spoolFile struct {
	fs     *SpoolFS
	name   string
	ino    *inode
	closed bool // guarded by the store's mutex
}

func (f *spoolFile) Write(p []byte) (int, error) {
	st := f.fs.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if f.closed {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: fs.ErrClosed}
	}
	if err := f.fs.check("write", f.name); err != nil {
		n := 0
		if st.partial {
			n = len(p) / 2
			f.ino.data = append(f.ino.data, p[:n]...)
		}
		return n, err
	}
	f.ino.data = append(f.ino.data, p...)
	return len(p), nil
}

func (f *spoolFile) Sync() error {
	st := f.fs.st
	st.mu.Lock()
	hook := st.syncHook
	closed := f.closed
	err := f.fs.check("sync", f.name)
	st.mu.Unlock()
	if closed {
		return &fs.PathError{Op: "sync", Path: f.name, Err: fs.ErrClosed}
	}
	if err != nil {
		return err
	}
	if hook != nil {
		hook(f.name)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	f.ino.synced = bytes.Clone(f.ino.data)
	st.syncs++
	return nil
}

// Close closes the file; a second Close fails with fs.ErrClosed, as os.File's does.
func (f *spoolFile) Close() error {
	st := f.fs.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	f.closed = true
	return nil
}

// SlowSync makes every fsync take d, like a disk.
func SlowSync(d time.Duration) func(string) { return func(string) { time.Sleep(d) } }

// SetSyncHook sets a function run at every file Sync before the bytes become durable
// (outside the lock): slow fsyncs, or an fsync held while a test crashes the "machine".
func (m *SpoolFS) SetSyncHook(f func(name string)) {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	m.st.syncHook = f
}

// Syncs returns how many file fsyncs and directory fsyncs completed.
func (m *SpoolFS) Syncs() (files, dirs int) {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	return m.st.syncs, m.st.dirSyncs
}

var _ ports.SpoolFS = (*SpoolFS)(nil)
