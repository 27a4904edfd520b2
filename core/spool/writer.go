package spool

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/queen-go/queen/ports"
)

// activeFile is the file the flusher appends to (Spool.wmu).
type activeFile struct {
	st *fileState
	f  ports.SpoolFile
}

// appendReq is one Append waiting for the flusher.
type appendReq struct {
	buf  []byte    // encoded frames
	keys []partKey // partition of each record
	done chan error
}

// maxGroupRequests bounds the Appends merged into one write (and one allocation of the
// write buffer); more wait for the next fsync.
const maxGroupRequests = 1024

// Append stores recs durably. It returns nil only after every record was written and
// fsynced; the records of all Appends waiting at the same moment share one write and
// one fsync. An error means none of recs may be reported as stored. (After a context
// cancellation or a failed fsync they may nonetheless reach the disk and be replayed
// later: the client was told the push failed, and replay keeps the transactionId, so
// dedup absorbs a retry.)
func (s *Spool) Append(ctx context.Context, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("spool: append: %w", err)
	}
	r := &appendReq{keys: make([]partKey, len(recs)), done: make(chan error, 1)}
	size := 0
	for i := range recs {
		n := bodySize(&recs[i])
		if n > MaxRecordBytes {
			return fmt.Errorf("spool: append: record %d: %w: %d body bytes (max %d)", i, ErrRecordTooLarge, n, MaxRecordBytes)
		}
		size += FrameHeaderSize + n
	}
	r.buf = make([]byte, 0, size)
	for i := range recs {
		var err error
		if r.buf, err = appendFrame(r.buf, &recs[i]); err != nil {
			return fmt.Errorf("spool: append: record %d: %w", i, err)
		}
		r.keys[i] = partKey{recs[i].Tenant, recs[i].Queue, recs[i].Partition}
	}
	s.closeMu.RLock()
	if s.closed || !s.started {
		s.closeMu.RUnlock()
		return ErrClosed
	}
	// Counted before the write so that a push racing this one sees the partition as
	// pending and spools behind it; the flusher takes the count back on failure.
	s.mu.Lock()
	for _, k := range r.keys {
		s.addPending(k, 1)
	}
	s.mu.Unlock()
	s.reqs <- r
	s.closeMu.RUnlock()
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("spool: append: %w", ctx.Err())
	}
}

// run is the flusher: it takes every request waiting at the moment and commits them as
// one group.
func (s *Spool) run() {
	defer close(s.done)
	group := make([]*appendReq, 0, 64)
	for {
		select {
		case r := <-s.reqs:
			group = append(group[:0], r)
		case <-s.quit:
			// Close stopped new Appends; commit the ones already handed over.
			group = group[:0]
			for {
				select {
				case r := <-s.reqs:
					group = append(group, r)
					continue
				default:
				}
				break
			}
			if len(group) > 0 {
				s.writeGroup(group)
			}
			return
		}
	drain:
		for len(group) < maxGroupRequests {
			select {
			case r := <-s.reqs:
				group = append(group, r)
			default:
				break drain
			}
		}
		s.writeGroup(group)
		clear(group)
	}
}

// writeGroup writes and fsyncs the group's records, rotating the active file as needed,
// and answers every request.
func (s *Spool) writeGroup(group []*appendReq) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for i := 0; i < len(group); {
		if s.active != nil && s.active.st.written >= int64(s.opts.EventsPerFile) {
			if err := s.finalizeActive(); err != nil {
				s.log.Error("spool: cannot finalize the active file; replay will retry", "err", err)
			}
		}
		if s.active == nil {
			if err := s.createActive(); err != nil {
				s.fail(group[i:], fmt.Errorf("spool: append: %w", err))
				return
			}
		}
		a := s.active
		// Take whole requests up to the rotation threshold (at least one).
		j, n := i, int64(0)
		for j < len(group) && (j == i || a.st.written+n+int64(len(group[j].keys)) <= int64(s.opts.EventsPerFile)) {
			n += int64(len(group[j].keys))
			j++
		}
		buf := s.wbuf[:0]
		if j-i == 1 {
			buf = group[i].buf
		} else {
			for _, r := range group[i:j] {
				buf = append(buf, r.buf...)
			}
			s.wbuf = buf[:0]
			if cap(s.wbuf) > 16<<20 {
				s.wbuf = nil // do not keep a burst's buffer forever
			}
		}
		if err := s.writeSync(a, buf); err != nil {
			s.log.Error("spool: append failed; abandoning the active file", "file", a.st.name(), "err", err)
			s.abandonActive()
			s.fail(group[i:], fmt.Errorf("spool: append %s: %w", a.st.name(), err))
			return
		}
		a.st.size += int64(len(buf))
		a.st.written += n
		s.mu.Lock()
		for _, r := range group[i:j] {
			for _, k := range r.keys {
				a.st.count(k, 1)
			}
		}
		s.mu.Unlock()
		s.appended.Add(n)
		s.fsyncs.Add(1)
		s.writeFailedAt.Store(0)
		for _, r := range group[i:j] {
			r.done <- nil
		}
		i = j
	}
}

func (s *Spool) writeSync(a *activeFile, buf []byte) error {
	if _, err := a.f.Write(buf); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("fsync: %w", err)
	}
	return nil
}

// fail answers requests with err and takes back their pending counts.
func (s *Spool) fail(reqs []*appendReq, err error) {
	s.writeFailedAt.Store(time.Now().UnixNano())
	s.mu.Lock()
	for _, r := range reqs {
		for _, k := range r.keys {
			s.addPending(k, -1)
		}
	}
	s.mu.Unlock()
	for _, r := range reqs {
		r.done <- err
	}
}

// createActive starts a new active file: header written and fsynced, directory entry
// fsynced, before any record goes in. Called with wmu held.
func (s *Spool) createActive() error {
	ms := max(s.opts.Now().UnixMilli(), s.lastMs)
	s.lastMs = ms
	s.seq++
	st := &fileState{base: fmt.Sprintf("queen-%013d-%08d", ms, s.seq), ms: ms, seq: s.seq}
	name := st.name()
	f, err := s.fsys.Create(name)
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	err = func() error {
		if _, err := f.Write(appendHeader(nil)); err != nil {
			return fmt.Errorf("write header of %s: %w", name, err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("sync header of %s: %w", name, err)
		}
		if err := s.fsys.SyncDir(); err != nil {
			return fmt.Errorf("sync directory for %s: %w", name, err)
		}
		return nil
	}()
	if err != nil {
		_ = f.Close()
		_ = s.fsys.Remove(name)
		return err
	}
	st.size = HeaderSize
	s.mu.Lock()
	s.files = append(s.files, st)
	s.mu.Unlock()
	s.active = &activeFile{st: st, f: f}
	return nil
}

// finalizeActive closes the active file and renames it to .buf (its records are already
// durable). Called with wmu held. On a rename error the file stays .tmp and not active:
// replay retries the rename.
func (s *Spool) finalizeActive() error {
	a := s.active
	s.active = nil
	if err := a.f.Close(); err != nil {
		s.log.Warn("spool: close of the active file failed", "file", a.st.name(), "err", err)
	}
	s.mu.Lock()
	empty := a.st.records == 0 && a.st.written == 0
	s.mu.Unlock()
	if empty {
		s.dropFile(a.st)
		if err := s.fsys.Remove(a.st.name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove empty %s: %w", a.st.name(), err)
		}
		return nil
	}
	return s.finalize(a.st)
}

// abandonActive stops appending to the active file after a failed write or fsync: the
// bytes after the last acknowledged record are of unknown state, so the file's valid
// length is fixed in memory (and, best effort, in its position file) and it is
// finalized; the next Append starts a new file. Called with wmu held.
func (s *Spool) abandonActive() {
	a := s.active
	s.active = nil
	_ = a.f.Close()
	if a.st.written == 0 {
		s.dropFile(a.st)
		if err := s.fsys.Remove(a.st.name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Error("spool: cannot remove an abandoned empty file", "file", a.st.name(), "err", err)
		}
		return
	}
	s.mu.Lock()
	a.st.end = a.st.size
	s.mu.Unlock()
	if err := s.writeAtomic(a.st.base+".pos", position{end: a.st.size}.encode()); err != nil {
		s.log.Error("spool: cannot persist the valid length of an abandoned file; after a restart its unacknowledged tail may replay",
			"file", a.st.name(), "end", a.st.size, "err", err)
	}
	if err := s.finalize(a.st); err != nil {
		s.log.Error("spool: cannot finalize an abandoned file; replay will retry", "file", a.st.name(), "err", err)
	}
}
