package spool

import (
	"errors"
	"fmt"
	"log/slog"
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

// PendingRecords is the records accepted and not yet committed or quarantined
// (Stats().PendingRecords, read alone: the metrics history samples it).
func (s *Spool) PendingRecords() int64 { return s.pendingTotal.Load() }

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
