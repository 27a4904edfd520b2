package spool

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

// fileState is one data file. Fields are guarded by Spool.mu unless noted.
type fileState struct {
	base    string // "queen-<ms>-<seq>"
	ms, seq int64
	final   bool              // renamed to .buf
	records int64             // valid records not yet committed or quarantined
	parts   map[partKey]int64 // records by partition: what retiring the file takes off Pending
	written int64             // records written to the active file (rotation); flusher only
	size    int64             // bytes written to the active file; flusher only
	pos     int64             // replay position: 0 = header not read yet
	end     int64             // valid length, 0 = the whole file
	damaged bool              // holds corrupt regions not yet quarantined (Open found them)

	// Replay-only state (Spool.rmu).
	data       []byte         // cached content of a final file while it is the head
	skip       map[int64]bool // offsets quarantined but not yet passed by a Commit
	quarantine map[int64]bool // corrupt regions already written to failed/
}

func (f *fileState) name() string {
	if f.final {
		return f.base + ".buf"
	}
	return f.base + ".tmp"
}

// parseName splits "queen-<ms>-<seq><ext>" into its parts; ok is false for any other name.
func parseName(name string) (base string, ms, seq int64, ext string, ok bool) {
	dot := strings.IndexByte(name, '.')
	if dot < 0 {
		return "", 0, 0, "", false
	}
	base, ext = name[:dot], name[dot:]
	rest, found := strings.CutPrefix(base, "queen-")
	if !found {
		return "", 0, 0, "", false
	}
	msStr, seqStr, found := strings.Cut(rest, "-")
	if !found {
		return "", 0, 0, "", false
	}
	ms, err1 := strconv.ParseInt(msStr, 10, 64)
	seq, err2 := strconv.ParseInt(seqStr, 10, 64)
	if err1 != nil || err2 != nil || ms < 0 || seq < 0 {
		return "", 0, 0, "", false
	}
	return base, ms, seq, ext, true
}

func compareFiles(a, b *fileState) int {
	if c := cmp.Compare(a.ms, b.ms); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// removeFile deletes a finished data file, then its position (in that order: a crash in
// between leaves an orphan position, never a file that would replay from its start).
// The caller syncs the directory.
func (s *Spool) removeFile(f *fileState, hasPos bool) error {
	if err := s.fsys.Remove(f.name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", f.name(), err)
	}
	if hasPos {
		if err := s.fsys.Remove(f.base + ".pos"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s.pos: %w", f.base, err)
		}
	}
	return nil
}

// writeAtomic writes name through name+"~": create, write, fsync, close, rename. The
// caller syncs the directory.
func (s *Spool) writeAtomic(name string, parts ...[]byte) (err error) {
	tmp := name + "~"
	if err := s.fsys.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", tmp, err)
	}
	f, err := s.fsys.Create(tmp)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = s.fsys.Remove(tmp)
		}
	}()
	for _, p := range parts {
		if _, err := f.Write(p); err != nil {
			return fmt.Errorf("write %s: %w", tmp, err)
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		f = nopFile{}
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	f = nopFile{}
	if err := s.fsys.Rename(tmp, name); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return nil
}

type nopFile struct{}

func (nopFile) Write(p []byte) (int, error) { return len(p), nil }
func (nopFile) Sync() error                 { return nil }
func (nopFile) Close() error                { return nil }

// count adds n records of partition k to the file. Called with Spool.mu held.
func (f *fileState) count(k partKey, n int64) {
	if f.parts == nil {
		f.parts = make(map[partKey]int64)
	}
	if v := f.parts[k] + n; v != 0 {
		f.parts[k] = v
	} else {
		delete(f.parts, k)
	}
	f.records += n
}

// finalize renames a written, inactive .tmp file to .buf and syncs the directory.
func (s *Spool) finalize(st *fileState) error {
	if err := s.fsys.Rename(st.base+".tmp", st.base+".buf"); err != nil {
		return fmt.Errorf("finalize %s.tmp: %w", st.base, err)
	}
	s.mu.Lock()
	st.final = true
	s.mu.Unlock()
	if err := s.fsys.SyncDir(); err != nil {
		return fmt.Errorf("finalize %s: sync directory: %w", st.base, err)
	}
	return nil
}

// dropFile forgets a file.
func (s *Spool) dropFile(st *fileState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files = slices.DeleteFunc(s.files, func(f *fileState) bool { return f == st })
}
