package memory

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queen-go/queen/ports"
)

// SpoolFS is an in-memory ports.SpoolFS for core tests that models what survives a crash: every file keeps
// its written bytes and its synced bytes apart, and the directory keeps its current names
// and its synced names apart. crash returns the state a machine would reboot with:
// synced names, each with its synced bytes. Every operation can be made to fail.
type SpoolFS struct {
	st *spoolStore
}

type spoolStore struct {
	mu      sync.Mutex
	cur     map[string]*inode // names now
	durable map[string]*inode // names as of the last SyncDir
	locked  bool

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
	return &SpoolFS{st: &spoolStore{cur: map[string]*inode{}, durable: map[string]*inode{}}}
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
	return n
}

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

func (m *SpoolFS) List() ([]string, error) {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	if err := m.check("list", ""); err != nil {
		return nil, err
	}
	var out []string
	for n := range m.st.cur {
		if !strings.HasPrefix(n, "failed/") {
			out = append(out, n)
		}
	}
	return out, nil
}

func (m *SpoolFS) ListFailed() (map[string]int64, error) {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	out := map[string]int64{}
	for n, ino := range m.st.cur {
		if rest, ok := strings.CutPrefix(n, "failed/"); ok {
			out[rest] = int64(len(ino.data))
		}
	}
	return out, nil
}

func (m *SpoolFS) Create(name string) (ports.SpoolFile, error) {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	if err := m.check("create", name); err != nil {
		return nil, err
	}
	if m.st.cur[name] != nil {
		return nil, &fs.PathError{Op: "create", Path: name, Err: fs.ErrExist}
	}
	ino := &inode{}
	m.st.cur[name] = ino
	return &spoolFile{fs: m, name: name, ino: ino}, nil
}

func (m *SpoolFS) ReadFile(name string) ([]byte, error) {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	if err := m.check("read", name); err != nil {
		return nil, err
	}
	ino := m.st.cur[name]
	if ino == nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
	}
	return bytes.Clone(ino.data), nil
}

func (m *SpoolFS) Rename(from, to string) error {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	if err := m.check("rename", from); err != nil {
		return err
	}
	ino := m.st.cur[from]
	if ino == nil {
		return &fs.PathError{Op: "rename", Path: from, Err: fs.ErrNotExist}
	}
	m.st.cur[to] = ino
	delete(m.st.cur, from)
	return nil
}

func (m *SpoolFS) Remove(name string) error {
	m.st.mu.Lock()
	defer m.st.mu.Unlock()
	if err := m.check("remove", name); err != nil {
		return err
	}
	if m.st.cur[name] == nil {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	delete(m.st.cur, name)
	return nil
}

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
	closed bool
}

func (f *spoolFile) Write(p []byte) (int, error) {
	st := f.fs.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if f.closed {
		return 0, fs.ErrClosed
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
	err := f.fs.check("sync", f.name)
	st.mu.Unlock()
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

func (f *spoolFile) Close() error {
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
