package spool

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
)

// recover rebuilds the state from the directory (Open).
func (s *Spool) recover() error {
	names, err := s.fsys.List()
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	byBase := map[string]*fileState{}
	hasPos := map[string]bool{}
	hasBuf := map[string]bool{}
	for _, n := range names {
		if base, _, _, ext, ok := parseName(n); ok && ext == ".buf" {
			hasBuf[base] = true
		}
	}
	dirChanged := false
	for _, n := range names {
		base, ms, seq, ext, ok := parseName(n)
		if !ok {
			continue // LOCK, or a file that is not ours
		}
		s.lastMs, s.seq = max(s.lastMs, ms), max(s.seq, seq)
		switch ext {
		case ".tmp":
			if hasBuf[base] {
				s.log.Error("spool: both .tmp and .buf exist; leaving the .tmp alone", "file", n)
				continue
			}
			if err := s.fsys.Rename(n, base+".buf"); err != nil {
				return fmt.Errorf("finalize %s: %w", n, err)
			}
			dirChanged = true
			byBase[base] = &fileState{base: base, ms: ms, seq: seq, final: true}
		case ".buf":
			byBase[base] = &fileState{base: base, ms: ms, seq: seq, final: true}
		case ".pos":
			hasPos[base] = true
		case ".pos~":
			if err := s.fsys.Remove(n); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove %s: %w", n, err)
			}
			dirChanged = true
		}
	}
	for base := range hasPos {
		if byBase[base] == nil {
			if err := s.fsys.Remove(base + ".pos"); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove orphan position %s.pos: %w", base, err)
			}
			dirChanged = true
		}
	}
	files := make([]*fileState, 0, len(byBase))
	for _, f := range byBase {
		files = append(files, f)
	}
	slices.SortFunc(files, compareFiles)
	for _, f := range files {
		keep, changed, err := s.recoverFile(f, hasPos[f.base])
		if err != nil {
			return err
		}
		dirChanged = dirChanged || changed
		if keep {
			s.files = append(s.files, f)
		}
	}
	if dirChanged {
		if err := s.fsys.SyncDir(); err != nil {
			return fmt.Errorf("sync directory: %w", err)
		}
	}
	return nil
}

// recoverFile reads one data file's position and records; keep is false when the file
// had nothing left and was removed (or moved to failed/).
func (s *Spool) recoverFile(f *fileState, hasPos bool) (keep, changed bool, err error) {
	name := f.name()
	data, err := s.fsys.ReadFile(name)
	if err != nil {
		return false, false, fmt.Errorf("read %s: %w", name, err)
	}
	if hasPos {
		b, err := s.fsys.ReadFile(f.base + ".pos")
		if err != nil {
			return false, false, fmt.Errorf("read %s.pos: %w", f.base, err)
		}
		p, err := decodePosition(b)
		switch {
		case err != nil:
			s.log.Error("spool: ignoring a damaged position file; the file replays from its start",
				"file", f.base+".pos", "err", err)
		case p.offset > int64(len(data)) || (p.end > 0 && (p.end > int64(len(data)) || p.offset > p.end)):
			s.log.Error("spool: ignoring a position beyond the file; the file replays from its start",
				"file", f.base+".pos", "offset", p.offset, "end", p.end, "size", len(data))
		default:
			f.pos, f.end = p.offset, p.end
		}
	}
	if f.pos == 0 {
		if st, reason := checkHeader(data); st == headerUnsupported {
			// A newer format: keep it whole for an operator (or a newer broker) instead of
			// guessing at its records.
			if err := s.quarantineWhole(f, data, reason); err != nil {
				return false, false, err
			}
			return false, true, nil
		}
	}
	sc := newScanner(data, int(f.pos), int(f.end))
	for {
		it, ok := sc.next()
		if !ok {
			break
		}
		switch it.kind {
		case itemRecord:
			k := partKey{string(it.f.tenant), string(it.f.queue), string(it.f.partition)}
			f.count(k, 1)
			s.addPending(k, 1)
		case itemCorrupt:
			f.damaged = true
		}
	}
	if f.records > 0 || f.damaged {
		return true, false, nil
	}
	if err := s.removeFile(f, hasPos); err != nil {
		return false, false, err
	}
	return false, true, nil
}

// quarantineWhole moves a data file this version cannot read to failed/.
func (s *Spool) quarantineWhole(f *fileState, data []byte, reason string) error {
	s.log.Error("spool: moving a file of an unsupported format to failed/", "file", f.name(), "reason", reason)
	if err := s.writeAtomic("failed/"+f.base+".buf.reason", []byte(reason+"\n")); err != nil {
		return fmt.Errorf("quarantine %s: %w", f.name(), err)
	}
	if err := s.fsys.Rename(f.name(), "failed/"+f.base+".buf"); err != nil {
		return fmt.Errorf("quarantine %s: %w", f.name(), err)
	}
	if err := s.fsys.Remove(f.base + ".pos"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("quarantine %s: remove position: %w", f.name(), err)
	}
	s.failedFiles.Add(1)
	s.failedBytes.Add(int64(len(data)))
	return nil
}
