package spool

import (
	"errors"
	"fmt"
	"io/fs"
	"time"
)

// Batch is a run of consecutive pending records of one file, handed to replay by Next.
type Batch struct {
	File    string   // data file name
	Records []Record // in file order

	st          *fileState
	offs        []int64 // byte offset of each record's frame
	lens        []int64 // frame length of each record
	end         int64   // replay position once the batch is committed
	quarantined []bool
}

// Next returns up to limit records (limit < 1 counts as 1) in FIFO order: the oldest file
// first, records in file order, corrupt regions on the way moved to failed/. When no
// finalized file is pending it finalizes the active file if that holds records. It
// returns a nil batch when nothing is pending. Next does not advance: until Commit, every
// call reads again from the last committed position (skipping quarantined records), and
// the previous batch can no longer be committed.
func (s *Spool) Next(limit int) (*Batch, error) {
	limit = max(limit, 1)
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if s.isClosed() {
		return nil, ErrClosed
	}
	s.cur = nil
	for {
		s.mu.Lock()
		var head *fileState
		if len(s.files) > 0 {
			head = s.files[0]
		}
		final := head != nil && head.final
		records := int64(0)
		if head != nil {
			records = head.records
		}
		s.mu.Unlock()
		if head == nil || (!final && records == 0) {
			return nil, nil
		}
		if !final {
			if err := s.finalizeHead(head); err != nil {
				return nil, fmt.Errorf("spool: next: %w", err)
			}
			continue
		}
		b, err := s.readBatch(head, limit)
		if err != nil {
			return nil, fmt.Errorf("spool: replay %s: %w", head.name(), err)
		}
		if b != nil {
			s.cur = b
			return b, nil
		}
		// Nothing left in the file: every record is committed or quarantined.
		if err := s.retire(head); err != nil {
			return nil, fmt.Errorf("spool: replay %s: %w", head.name(), err)
		}
	}
}

// finalizeHead renames the head file to .buf when it is still .tmp: the active file (it
// stops being active: the next Append starts a new one), or a file whose rename failed
// earlier.
func (s *Spool) finalizeHead(head *fileState) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	final := head.final
	s.mu.Unlock()
	switch {
	case final:
		return nil
	case s.active != nil && s.active.st == head:
		return s.finalizeActive()
	default:
		return s.finalize(head)
	}
}

// readBatch scans head from its position for up to limit records; nil when the file has
// none left.
func (s *Spool) readBatch(head *fileState, limit int) (*Batch, error) {
	if head.data == nil {
		data, err := s.fsys.ReadFile(head.name())
		if err != nil {
			return nil, fmt.Errorf("read: %w", err)
		}
		head.data = data
	}
	s.mu.Lock()
	pos, end := head.pos, head.end
	s.mu.Unlock()
	b := &Batch{File: head.name(), st: head}
	sc := newScanner(head.data, int(pos), int(end))
	for len(b.Records) < limit {
		it, ok := sc.next()
		if !ok {
			break
		}
		off := int64(it.off)
		switch it.kind {
		case itemCorrupt:
			if err := s.quarantineCorrupt(head, it); err != nil {
				return nil, err
			}
		case itemRecord:
			if head.skip[off] {
				continue
			}
			b.Records = append(b.Records, it.f.record())
			b.offs = append(b.offs, off)
			b.lens = append(b.lens, int64(it.n))
		}
	}
	if len(b.Records) == 0 {
		return nil, nil
	}
	b.end = int64(sc.p)
	b.quarantined = make([]bool, len(b.Records))
	return b, nil
}

// quarantineCorrupt writes a corrupt region's raw bytes and reason to failed/, once.
func (s *Spool) quarantineCorrupt(head *fileState, it item) error {
	off := int64(it.off)
	if head.quarantine[off] {
		return nil
	}
	name := fmt.Sprintf("failed/%s-%012d", head.base, off)
	raw := head.data[it.off : it.off+it.n]
	fresh, err := s.writeFailed(name, ".corrupt", [][]byte{raw},
		fmt.Sprintf("corrupt region: %s\nfile: %s\noffset: %d\nbytes: %d\n", it.reason, head.name(), off, it.n))
	if err != nil {
		return fmt.Errorf("quarantine corrupt region at %d: %w", off, err)
	}
	if head.quarantine == nil {
		head.quarantine = map[int64]bool{}
	}
	head.quarantine[off] = true
	s.corrupt.Add(1)
	if fresh {
		s.failedFiles.Add(1)
		s.failedBytes.Add(int64(it.n))
	}
	s.log.Error("spool: corrupt record moved to failed/; replay continues after it",
		"file", head.name(), "offset", off, "bytes", it.n, "reason", it.reason, "failed", name+".corrupt")
	return nil
}

// writeFailed writes failed/<x><ext> (the data) and failed/<x><ext>.reason, reason first so
// a data file in failed/ always has its reason, and syncs the directory. fresh is false
// when the data file already existed (an earlier process quarantined it and crashed
// before its position moved past it).
func (s *Spool) writeFailed(name, ext string, data [][]byte, reason string) (fresh bool, err error) {
	if _, err := s.fsys.ReadFile(name + ext); err == nil {
		return false, s.fsys.SyncDir()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read %s%s: %w", name, ext, err)
	}
	reason += "time: " + s.opts.Now().UTC().Format(time.RFC3339Nano) + "\n"
	if err := s.writeAtomic(name+ext+".reason", []byte(reason)); err != nil {
		return false, err
	}
	if err := s.writeAtomic(name+ext, data...); err != nil {
		return false, err
	}
	if err := s.fsys.SyncDir(); err != nil {
		return false, fmt.Errorf("sync directory: %w", err)
	}
	return true, nil
}

// retire deletes a file with nothing left to replay, then its position.
func (s *Spool) retire(head *fileState) error {
	if err := s.removeFile(head, true); err != nil {
		return err
	}
	if err := s.fsys.SyncDir(); err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	head.data = nil
	s.mu.Lock()
	// Records counted but never read back: acknowledged records that rotted on disk
	// (they went to failed/ as corrupt regions). Without this their partitions would
	// stay pending forever and keep spooling.
	for k, n := range head.parts {
		s.log.Error("spool: records of a replayed file were unreadable", "file", head.name(),
			"tenant", k.tenant, "queue", k.queue, "partition", k.partition, "records", n)
		s.addPending(k, -n)
	}
	head.parts, head.records = nil, 0
	s.mu.Unlock()
	s.dropFile(head)
	return nil
}

// Commit records that the batch's records (except quarantined ones) are in the
// database: it persists the position durably, takes the records off the pending counts
// and deletes the file once every record in it is done. On an error the batch is
// nevertheless done in memory (Next moves on; the next Commit persists the position
// again): the records are in the database, and replaying them at once would only make
// duplicates. Only a crash before the position reaches the disk replays them again.
func (s *Spool) Commit(b *Batch) error {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if s.isClosed() {
		return ErrClosed
	}
	if b == nil || b != s.cur {
		return errors.New("spool: commit: not the current batch (Next was called again, or it was committed)")
	}
	s.cur = nil
	st := b.st
	n := int64(0)
	s.mu.Lock()
	for i := range b.Records {
		if !b.quarantined[i] {
			r := &b.Records[i]
			k := partKey{r.Tenant, r.Queue, r.Partition}
			s.addPending(k, -1)
			st.count(k, -1)
			n++
		}
	}
	st.pos = b.end
	end := st.end
	s.mu.Unlock()
	s.replayed.Add(n)
	for off := range st.skip {
		if off < b.end {
			delete(st.skip, off)
		}
	}
	for off := range st.quarantine {
		if off < b.end {
			delete(st.quarantine, off)
		}
	}
	fileEnd := int64(len(st.data))
	if end > 0 {
		fileEnd = min(fileEnd, end)
	}
	if b.end >= fileEnd {
		err := s.retire(st)
		if err == nil {
			return nil
		}
		s.log.Error("spool: cannot delete a replayed file; keeping its position instead", "file", st.name(), "err", err)
	}
	if err := s.writeAtomic(st.base+".pos", position{offset: b.end, end: end}.encode()); err != nil {
		return fmt.Errorf("spool: commit %s: %w", st.name(), err)
	}
	if err := s.fsys.SyncDir(); err != nil {
		return fmt.Errorf("spool: commit %s: sync directory: %w", st.name(), err)
	}
	return nil
}

// Quarantine moves record i of b, which failed permanently, to failed/ with its reason;
// it no longer counts as pending and Next no longer returns it. The caller then Commits
// the batch for the other records.
func (s *Spool) Quarantine(b *Batch, i int, reason error) error {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if s.isClosed() {
		return ErrClosed
	}
	if b == nil || b != s.cur {
		return errors.New("spool: quarantine: not the current batch (Next was called again, or it was committed)")
	}
	if i < 0 || i >= len(b.Records) {
		return fmt.Errorf("spool: quarantine: record %d of a batch of %d", i, len(b.Records))
	}
	if b.quarantined[i] {
		return nil
	}
	st := b.st
	off, n := b.offs[i], b.lens[i]
	name := fmt.Sprintf("failed/%s-%012d", st.base, off)
	r := &b.Records[i]
	text := fmt.Sprintf("rejected: %v\nfile: %s\noffset: %d\ntenant: %s\nqueue: %s\npartition: %s\ntransactionId: %s\n",
		reason, st.name(), off, r.Tenant, r.Queue, r.Partition, r.TransactionID)
	// The data file is a valid one-record spool file: moved back into the directory
	// under a queen-... name, it would replay.
	fresh, err := s.writeFailed(name, ".rejected", [][]byte{appendHeader(nil), st.data[off : off+n]}, text)
	if err != nil {
		return fmt.Errorf("spool: quarantine %s at %d: %w", st.name(), off, err)
	}
	b.quarantined[i] = true
	if st.skip == nil {
		st.skip = map[int64]bool{}
	}
	st.skip[off] = true
	s.mu.Lock()
	k := partKey{r.Tenant, r.Queue, r.Partition}
	s.addPending(k, -1)
	st.count(k, -1)
	s.mu.Unlock()
	s.quarantined.Add(1)
	if fresh {
		s.failedFiles.Add(1)
		s.failedBytes.Add(HeaderSize + n)
	}
	s.log.Error("spool: record quarantined", "file", st.name(), "offset", off, "queue", r.Queue,
		"partition", r.Partition, "transactionId", r.TransactionID, "reason", reason, "failed", name+".rejected")
	return nil
}
