package spool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/ports"
)

// Record is one spooled push item.
type Record struct {
	Tenant, Queue, Partition, TransactionID, ProducerSub string
	MessageID                                            [16]byte
	TraceID                                              [16]byte
	HasTrace                                             bool
	Encrypted                                            bool   // Payload is an encryption envelope (core/envelope)
	Payload                                              []byte // raw JSON as pushed
}

// Options configure a Spool.
type Options struct {
	// EventsPerFile rotates the active file once it holds this many records
	// (FILE_BUFFER_EVENTS_PER_FILE, default 10000). A file holds more only when a single
	// Append carries more: an Append's records always go to one file.
	EventsPerFile int
	// Logger receives corruption, quarantine and I/O failure reports; nil discards.
	Logger *slog.Logger
	// Now names new files (Unix milliseconds); nil means time.Now.
	Now func() time.Time
}

// DefaultEventsPerFile is the default of Options.EventsPerFile.
const DefaultEventsPerFile = 10000

// ErrClosed is returned by calls made after Close, and by Append before Start.
var ErrClosed = errors.New("spool: not running")

// Stats are the spool's counters. Pending and Failed figures are current values; the
// others count since Open.
type Stats struct {
	PendingRecords int64 // records accepted and not yet committed or quarantined
	PendingFiles   int64 // data files still to replay
	FailedFiles    int64 // quarantined items in failed/ (data files, not .reason files)
	FailedBytes    int64 // their size in bytes
	CorruptRecords int64 // corrupt regions quarantined by replay
	Appended       int64 // records acknowledged durable by Append
	Fsyncs         int64 // group commits: one data-file fsync each
	Replayed       int64 // records committed by Commit
	Quarantined    int64 // records rejected by Quarantine
	// WriteFailedAt is when the last group write failed (a full disk, an I/O error); zero
	// when the last write succeeded or none failed.
	WriteFailedAt time.Time
}

// partKey names a partition.
type partKey struct{ tenant, queue, partition string }

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

// Spool is a spool directory owned by this process. Append is safe for concurrent use;
// Next, Commit and Quarantine are meant for one replay loop at a time (they serialise).
type Spool struct {
	fsys   ports.SpoolFS
	opts   Options
	log    *slog.Logger
	unlock func() error

	// Appends reach the flusher goroutine through reqs; closeMu makes Close wait for
	// Appends that are handing over a request.
	reqs    chan *appendReq
	closeMu sync.RWMutex
	started bool // the flusher runs (Start)
	closed  bool
	quit    chan struct{}
	done    chan struct{}

	// wmu guards the active file and the naming counters: held by the flusher while it
	// writes a group, and by replay and Close to finalize the active file.
	wmu    sync.Mutex
	active *activeFile
	lastMs int64
	seq    int64
	wbuf   []byte

	// mu guards files, pending and the fileState fields it documents; held briefly.
	mu      sync.Mutex
	files   []*fileState // FIFO order; the active file, if any, is last
	pending map[partKey]int64

	// pendingTotal lets Pending answer without the lock in the common case of an empty
	// spool.
	pendingTotal atomic.Int64

	failedFiles, failedBytes, corrupt, appended, fsyncs, replayed, quarantined atomic.Int64
	writeFailedAt                                                              atomic.Int64 // unix ns of the last failed group write; 0 once one succeeds

	// rmu serialises replay (Next, Commit, Quarantine).
	rmu sync.Mutex
	cur *Batch
}

// maxGroupRequests bounds the Appends merged into one write (and one allocation of the
// write buffer); more wait for the next fsync.
const maxGroupRequests = 1024

// Open takes ownership of the directory (ports.ErrSpoolLocked, wrapped, when another
// owner has it), finalizes active files a dead process left, removes half-written
// position files and orphan positions, and scans every pending file to rebuild the
// per-partition pending counts and the replay position. Replay works at once; Append
// needs the group-commit flusher, which Start launches.
func Open(fsys ports.SpoolFS, opts Options) (*Spool, error) {
	if opts.EventsPerFile <= 0 {
		opts.EventsPerFile = DefaultEventsPerFile
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	unlock, err := fsys.Lock()
	if err != nil {
		return nil, fmt.Errorf("spool: open: %w", err)
	}
	s := &Spool{
		fsys: fsys, opts: opts, log: opts.Logger, unlock: unlock,
		reqs:    make(chan *appendReq, maxGroupRequests),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
		pending: make(map[partKey]int64),
	}
	// Counted before recover, which may add a file of an unsupported format.
	if l, ok := fsys.(ports.SpoolFailedLister); ok {
		failed, err := l.ListFailed()
		if err != nil {
			s.log.Warn("spool: cannot list failed/", "err", err)
		}
		for name, size := range failed {
			if !strings.HasSuffix(name, ".reason") && !strings.HasSuffix(name, "~") {
				s.failedFiles.Add(1)
				s.failedBytes.Add(size)
			}
		}
	}
	if err := s.recover(); err != nil {
		_ = unlock()
		return nil, fmt.Errorf("spool: open: %w", err)
	}
	return s, nil
}

// Start launches the group-commit flusher that Append hands its records to. It does
// nothing after the first call or after Close.
func (s *Spool) Start() {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.started || s.closed {
		return
	}
	s.started = true
	go s.run()
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

func compareFiles(a, b *fileState) int {
	if c := cmp.Compare(a.ms, b.ms); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
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

// addPending adds n records of partition k to the pending counts. Called with mu held.
func (s *Spool) addPending(k partKey, n int64) {
	v := s.pending[k] + n
	if v <= 0 {
		delete(s.pending, k)
	} else {
		s.pending[k] = v
	}
	s.pendingTotal.Add(n)
}

// Pending reports whether records of the partition are spooled (or being spooled) and
// not yet committed or quarantined by replay. The push path spools a partition's new
// pushes while this is true, so they replay behind the older ones.
func (s *Spool) Pending(tenant, queue, partition string) bool {
	if s.pendingTotal.Load() == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending[partKey{tenant, queue, partition}] > 0
}

// Empty reports whether nothing is left to replay: no pending record and no file
// (a file whose only content is a corrupt region still needs a replay pass to move it
// to failed/).
func (s *Spool) Empty() bool {
	if s.pendingTotal.Load() != 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.files {
		if f.final || f.records > 0 {
			return false
		}
	}
	return true
}

// Stats returns the counters.
func (s *Spool) Stats() Stats {
	st := Stats{
		PendingRecords: s.pendingTotal.Load(),
		FailedFiles:    s.failedFiles.Load(),
		FailedBytes:    s.failedBytes.Load(),
		CorruptRecords: s.corrupt.Load(),
		Appended:       s.appended.Load(),
		Fsyncs:         s.fsyncs.Load(),
		Replayed:       s.replayed.Load(),
		Quarantined:    s.quarantined.Load(),
	}
	if ns := s.writeFailedAt.Load(); ns != 0 {
		st.WriteFailedAt = time.Unix(0, ns)
	}
	s.mu.Lock()
	for _, f := range s.files {
		if f.final || f.records > 0 {
			st.PendingFiles++
		}
	}
	s.mu.Unlock()
	return st
}

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

// dropFile forgets a file.
func (s *Spool) dropFile(st *fileState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files = slices.DeleteFunc(s.files, func(f *fileState) bool { return f == st })
}

// Close commits the Appends already accepted, finalizes the active file and releases
// the directory lock. Later calls return ErrClosed.
func (s *Spool) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return ErrClosed
	}
	s.closed = true
	close(s.quit)
	started := s.started
	s.closeMu.Unlock()
	if started {
		<-s.done
	}
	s.rmu.Lock()
	defer s.rmu.Unlock()
	s.wmu.Lock()
	var errs []error
	if s.active != nil {
		if err := s.finalizeActive(); err != nil {
			errs = append(errs, fmt.Errorf("spool: close: %w", err))
		}
	}
	s.wmu.Unlock()
	if err := s.unlock(); err != nil {
		errs = append(errs, fmt.Errorf("spool: close: unlock: %w", err))
	}
	return errors.Join(errs...)
}

func (s *Spool) isClosed() bool {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	return s.closed
}
