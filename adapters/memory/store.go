package memory

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/ports"
)

// DefaultWindow is the dedup window of queues the test did not configure (3600 s).
const DefaultWindow = 3600 * time.Second

// Store is an in-memory ports.SegmentStore, ports.QueueSettings, ports.ConsumeStore and
// ports.TransactionStore over one shared state: pops read what pushes stored, acks move
// the cursors pops created, and a transaction commits pushes and acks together. Its
// rules are those of the SQL functions (schema/002_push.sql, 004_pop.sql, 005_ack.sql),
// checked by the conformance suites of ports/porttest against both.
type Store struct {
	// Now is the clock (default time.Now); tests may replace it before use.
	Now func() time.Time
	// BeforePush, when set, runs at the start of every PushSegments call with its
	// segments; returning an error fails the whole bundle (nothing is stored). Tests use
	// it to block, count or fail bundles.
	BeforePush func(segs []ports.Segment) error
	// AdminFault, when set, runs at the start of every call of the admin ports the store
	// implements (ResourceStore, GroupStore, MessageStore, TraceStore) with the method's
	// name ("ListQueues", "SeekGroup", ...), of its RetentionStore with the method's name
	// prefixed "Retention." ("Retention.Trim": MessageStore has a PurgeDeadLetters too),
	// and once more in MoveDeadLetter, after the move succeeded and before the row is
	// deleted, with "MoveDeadLetter/remove". An error fails the call at that point, with
	// nothing further changed. Tests use it to fail, count or block calls.
	AdminFault func(op string) error
	// Shard is the shard the store plays among several (core/shard) [0]: partition ids
	// name it, as a shard's PostgreSQL mints them. Set it before use.
	Shard int

	mu         sync.Mutex
	windows    map[string]time.Duration // tenant\x1fqueue -> dedup window
	encrypted  map[string]bool          // tenant\x1fqueue -> encryption flag
	queues     map[string]*queue        // tenant\x1fqueue
	partitions map[string]*partition    // tenant\x1fqueue\x1fpartition
	byID       map[string]*partition
	consumers  map[string]*consumer // partition id\x1fgroup
	held       map[string]int       // partition id\x1fgroup -> HoldCursor holds not released
	dead       []ports.DeadLetter   // dead letters in the order they were written
	traces     []*trace             // trace events, every tenant's, in the order recorded
	moving     map[string]*rowLock  // dead-letter rows a MoveDeadLetter claims, by id
	bundles    int
	ids        int    // queues, partitions, dead letters, traces ever created: ids are never reused
	seq        uint64 // segments ever committed: the commit order "new" subscriptions cut at
	leading    bool   // a RetentionStore.Lead runs (the advisory lock of the SQL store)
	// orphans are the queues of partitions DropEmptyPartitions deleted while dead letters
	// still named them: in SQL a dead letter keeps its queue (dlq.queue_id) when its
	// partition goes, so retention and queue deletion must still reach it. Nil until used.
	orphans map[string]*queue
	// streams is the ports.StreamStore state (streams.go); nil until used.
	streams *streams
	// prepared are the ports.TwoPhaseStore transactions prepared and not resolved
	// (twophase.go), by gid; nil until used.
	prepared map[string]preparedTxn
	// retained is the metrics history retention purges (retention_history.go); nil until
	// used.
	retained *retainedHistory
}

// queue is a queue row: created by the first push, pop or configuration naming it.
type queue struct {
	key        string // tenant\x1fqueue
	id         string
	created    time.Time
	tenant     string
	name       string
	namespace  string
	task       string
	configured bool // false while only a push or pop created it: leases are then 60 s
	opts       ports.QueueOptions
	groups     map[string]subscription // named groups, recorded at their first contact
}

type partition struct {
	id       string
	name     string
	queueKey string // tenant\x1fqueue
	q        *queue
	created  time.Time
	last     int64
	// logStart and txnsStart are the retention watermarks (Trim): the first offset still
	// retained, and the first whose transaction-id hash is. Readers honour them; the
	// segments below stay stored, as in SQL until retention deletes them.
	logStart, txnsStart int64
	lastWrite           time.Time // commit time of the last push (the wildcard scan reads newest first)
	segs                []stored
}

type stored struct {
	ports.StoredSegment
	hashes  []byte
	seq     uint64 // position in the store's commit order
	removed bool   // the segment is gone, its hash sidecar entry stays (as in SQL)
	// hashGone: the hash sidecar entry is gone (retention deleted the log_txns row; its
	// hashes are nil), the segment may stay. Readers of the sidecar skip it; an entry
	// with both gone is dropped from the partition.
	hashGone bool
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{
		Now:        time.Now,
		windows:    make(map[string]time.Duration),
		encrypted:  make(map[string]bool),
		queues:     make(map[string]*queue),
		partitions: make(map[string]*partition),
		byID:       make(map[string]*partition),
		consumers:  make(map[string]*consumer),
		held:       make(map[string]int),
		moving:     make(map[string]*rowLock),
	}
}

// newID returns a fresh id shaped like a UUID, kind telling queues, partitions, dead
// letters and traces apart; later ids of a kind compare greater as strings. Callers hold
// s.mu.
func (s *Store) newID(kind string) string {
	s.ids++
	if kind == idPartition && s.Shard > 0 {
		// As a shard's PostgreSQL mints them (queen.new_partition_id): version 8, the
		// shard number in the first two bytes.
		return fmt.Sprintf("%04x0000-0000-8000-%s-%012d", s.Shard, kind, s.ids)
	}
	return fmt.Sprintf("00000000-0000-4000-%s-%012d", kind, s.ids)
}

// The kinds of newID.
const (
	idPartition  = "8000"
	idDeadLetter = "9000"
	idQueue      = "a000"
	idTrace      = "b000"
	idStream     = "c000"
)

// defaultOptions are the options of a queue created by a push or a pop, before any
// configure: the column defaults of queen.queues, which core/queues states once.
func defaultOptions() ports.QueueOptions { return queues.Defaults("").QueueOptions }

// queueOf returns the queue row, creating it as log_queue_id_v1 does: a dotted name
// gives the namespace (first part) and the task (second part). j, when not nil, records
// the creation so a rolled-back transaction can undo it. Callers hold s.mu.
func (s *Store) queueOf(tenant, name string, j *journal) *queue {
	key := tenant + "\x1f" + name
	if q := s.queues[key]; q != nil {
		return q
	}
	q := &queue{key: key, id: s.newID(idQueue), created: s.Now(), tenant: tenant, name: name, opts: defaultOptions(),
		groups: make(map[string]subscription)}
	if parts := strings.Split(name, "."); len(parts) > 1 {
		q.namespace, q.task = parts[0], parts[1]
	}
	s.queues[key] = q
	if j != nil {
		j.queues = append(j.queues, key)
	}
	return q
}

// SetQueueConfig configures a queue as a replace-mode /api/v1/configure would: every
// option takes cfg's value (cfg.Name names the queue; cfg.ID is ignored), the queue is
// created when needed and marked configured. The dedup window and the encryption flag
// follow cfg too.
func (s *Store) SetQueueConfig(tenant string, cfg ports.QueueConfig) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queueOf(tenant, cfg.Name, nil)
	q.namespace, q.task, q.opts, q.configured = cfg.Namespace, cfg.Task, cfg.QueueOptions, true
	s.windows[q.key] = time.Duration(cfg.DedupWindowSeconds) * time.Second
	s.encrypted[q.key] = cfg.EncryptionEnabled
}

// QueueConfig returns a queue's configuration with its id (and the dedup window and
// encryption flag SetWindow and SetEncryption may have changed since); ok is false when no push,
// pop or configuration created it.
func (s *Store) QueueConfig(tenant, name string) (cfg ports.QueueConfig, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[tenant+"\x1f"+name]
	if q == nil {
		return ports.QueueConfig{}, false
	}
	return s.configOf(q), true
}

// configOf is the queue's row as the admin reads see it: its id, names and options, the
// dedup window and encryption flag included. Callers hold s.mu.
func (s *Store) configOf(q *queue) ports.QueueConfig {
	cfg := ports.QueueConfig{ID: q.id, Name: q.name, Namespace: q.namespace, Task: q.task, QueueOptions: q.opts}
	cfg.DedupWindowSeconds = int(s.window(q.key) / time.Second)
	cfg.EncryptionEnabled = s.encrypted[q.key]
	return cfg
}

// window is the queue's dedup window (DefaultWindow unless SetWindow or SetQueueConfig
// said otherwise). Callers hold s.mu.
func (s *Store) window(queueKey string) time.Duration {
	if w, ok := s.windows[queueKey]; ok {
		return w
	}
	return DefaultWindow
}

// SetWindow sets a queue's dedup window (0 disables dedup).
func (s *Store) SetWindow(tenant, queue string, w time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.windows[tenant+"\x1f"+queue] = w
}

// SetEncryption sets a queue's encryption flag.
func (s *Store) SetEncryption(tenant, queue string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.encrypted[tenant+"\x1f"+queue] = on
}

// Bundles is the number of PushSegments calls that committed.
func (s *Store) Bundles() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bundles
}

// DeleteSegment removes the segment covering off, as retention would: its hashes stay
// (the sidecar has its own watermark), so the frames still deduplicate.
func (s *Store) DeleteSegment(partitionID string, off int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byID[partitionID]
	if p == nil {
		return
	}
	for i, sg := range p.segs {
		if off >= sg.BaseOffset && off < sg.BaseOffset+int64(sg.Count) {
			p.segs[i].removed = true
			return
		}
	}
}

// EncryptionEnabled implements ports.QueueSettings.
func (s *Store) EncryptionEnabled(_ context.Context, tenant, queue string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.encrypted[tenant+"\x1f"+queue], nil
}

// PushSegments implements ports.SegmentStore.
func (s *Store) PushSegments(_ context.Context, segs []ports.Segment) ([]ports.SegmentResult, error) {
	if s.BeforePush != nil {
		if err := s.BeforePush(segs); err != nil {
			return nil, err
		}
	}
	if err := checkSegments(segs); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	out := make([]ports.SegmentResult, len(segs))
	for i, sg := range segs {
		out[i] = s.pushOne(sg, now, nil)
	}
	s.bundles++
	return out, nil
}

// checkSegments refuses segments the SQL allocator refuses (log_push_multi_v3's guards).
func checkSegments(segs []ports.Segment) error {
	for _, sg := range segs {
		if sg.Count < 1 || len(sg.Hashes) != 16*sg.Count {
			return fmt.Errorf("memory: segment of %d frames with %d hash bytes: %w", sg.Count, len(sg.Hashes), ports.ErrInvalid)
		}
	}
	return nil
}

// partitionOf returns the partition row, creating it (and its queue) empty as the push
// function provisions it. j, when not nil, records the creation. Callers hold s.mu.
func (s *Store) partitionOf(tenant, queue, name string, j *journal) *partition {
	key := tenant + "\x1f" + queue + "\x1f" + name
	p := s.partitions[key]
	if p == nil {
		q := s.queueOf(tenant, queue, j)
		// last_write_at starts at the creation time (the column's default): an empty
		// partition is idle from then, for DropEmptyPartitions.
		now := s.Now()
		p = &partition{id: s.newID(idPartition), name: name, last: -1, queueKey: q.key, q: q, created: now,
			lastWrite: now}
		s.partitions[key] = p
		s.byID[p.id] = p
		if j != nil {
			j.partitions = append(j.partitions, key)
		}
	}
	return p
}

// pushOne is the allocator: probe, then append. j, when not nil, records what it changes
// so a rolled-back transaction can undo it. Callers hold s.mu.
func (s *Store) pushOne(sg ports.Segment, now time.Time, j *journal) ports.SegmentResult {
	tenant := sg.Tenant
	if tenant == "" {
		tenant = ports.DefaultTenant
	}
	if sg.Plain && s.encrypted[tenant+"\x1f"+sg.Queue] {
		// log_push_multi_v4's guard: plaintext for a queue that encrypts is refused
		// before anything is provisioned or allocated.
		return ports.SegmentResult{Status: ports.SegmentEncrypted}
	}
	p := s.partitionOf(tenant, sg.Queue, sg.Partition, j)
	w := s.window(p.queueKey)
	if w > 0 {
		verified := sg.Verified
		if verified > p.last {
			verified = -1 // not this partition's history (see log_push_multi_v3)
		}
		// Hashes below the sidecar's watermark are no longer retained: they match nothing.
		verified = max(verified, p.txnsStart-1)
		if dups := p.probe(sg.Hashes, now.Add(-w), verified); len(dups) > 0 {
			return ports.SegmentResult{Status: ports.SegmentDuplicate, PartitionID: p.id, Dups: dups}
		}
	}
	if j != nil {
		j.touch(p)
	}
	base := p.last + 1
	p.last += int64(sg.Count)
	p.lastWrite = now
	s.seq++
	p.segs = append(p.segs, stored{
		StoredSegment: ports.StoredSegment{BaseOffset: base, Count: sg.Count, CreatedAt: now, Blob: bytes.Clone(sg.Blob)},
		hashes:        bytes.Clone(sg.Hashes),
		seq:           s.seq,
	})
	return ports.SegmentResult{Status: ports.SegmentQueued, PartitionID: p.id, BaseOffset: base, CreatedAt: now, Window: w}
}

// probe finds incoming hashes stored at or after cutoff at offsets above verified,
// earliest occurrence first.
func (p *partition) probe(hashes []byte, cutoff time.Time, verified int64) []ports.Dup {
	var dups []ports.Dup
	for i := 0; i*16 < len(hashes); i++ {
		h := hashes[i*16 : i*16+16]
	search:
		for _, sg := range p.segs {
			if sg.hashGone || sg.CreatedAt.Before(cutoff) || sg.BaseOffset+int64(sg.Count)-1 <= verified {
				continue
			}
			for k := range sg.Count {
				if bytes.Equal(sg.hashes[k*16:k*16+16], h) {
					dups = append(dups, ports.Dup{Index: i, Offset: sg.BaseOffset + int64(k)})
					break search
				}
			}
		}
	}
	return dups
}

// SegmentAt implements ports.SegmentStore.
func (s *Store) SegmentAt(_ context.Context, partitionID string, off int64) (ports.StoredSegment, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byID[partitionID]
	if p == nil {
		return ports.StoredSegment{}, false, nil
	}
	for _, sg := range p.segs {
		if !sg.removed && off >= sg.BaseOffset && off < sg.BaseOffset+int64(sg.Count) {
			return sg.StoredSegment, true, nil
		}
	}
	return ports.StoredSegment{}, false, nil
}

// Segments returns a copy of a partition's stored segments in offset order.
func (s *Store) Segments(tenant, queue, partition string) []ports.StoredSegment {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.partitions[tenant+"\x1f"+queue+"\x1f"+partition]
	if p == nil {
		return nil
	}
	var out []ports.StoredSegment
	for _, sg := range p.segs {
		if !sg.removed {
			out = append(out, sg.StoredSegment)
		}
	}
	return out
}

// Age makes everything stored in the partition older by d: its segments, their hash
// sidecar entries and its last write (which windowBuffer and the wildcard scan read).
func (s *Store) Age(partitionID string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.byID[partitionID]; p != nil {
		for i := range p.segs {
			p.segs[i].CreatedAt = p.segs[i].CreatedAt.Add(-d)
		}
		p.lastWrite = p.lastWrite.Add(-d)
	}
}

// Trim advances the partition's retention watermarks as retention does: offsets below
// logStart are no longer retained (log_start), transaction-id hashes below txnsStart
// no longer match (txns_start). Watermarks never move back; the segments stay stored
// (readers honour the watermarks), as they do in SQL until retention deletes them.
func (s *Store) Trim(partitionID string, logStart, txnsStart int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.byID[partitionID]; p != nil {
		p.logStart, p.txnsStart = max(p.logStart, logStart), max(p.txnsStart, txnsStart)
	}
}

// DeleteQueue deletes the tenant's queue as ports.QueueAdmin's DeleteQueue does: its
// partitions with their segments and cursors, its subscriptions and dead letters, its
// dedup window and encryption flag. Traces stay (they expire on their own, and read
// without a queue and partition name). It reports whether the queue existed.
func (s *Store) DeleteQueue(tenant, queue string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := tenant + "\x1f" + queue
	q := s.queues[key]
	if q == nil {
		return false
	}
	gone := make(map[string]bool)
	for k, p := range s.partitions {
		if p.q == q {
			gone[p.id] = true
			delete(s.partitions, k)
			delete(s.byID, p.id)
		}
	}
	for pid, oq := range s.orphans { // dropped partitions' dead letters go with their queue
		if oq == q {
			gone[pid] = true
			delete(s.orphans, pid)
		}
	}
	for k := range s.consumers {
		if pid, _, _ := strings.Cut(k, "\x1f"); gone[pid] {
			delete(s.consumers, k)
		}
	}
	s.dead = slices.DeleteFunc(s.dead, func(d ports.DeadLetter) bool { return gone[d.PartitionID] })
	s.dropStreamState(gone)
	delete(s.queues, key)
	delete(s.windows, key)
	delete(s.encrypted, key)
	return true
}

// RecentHashes implements ports.SegmentStore.
func (s *Store) RecentHashes(_ context.Context, partitionID string, maxSegments int) (ports.RecentHashes, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byID[partitionID]
	if p == nil {
		return ports.RecentHashes{LastOffset: -1}, nil
	}
	window := s.window(p.queueKey)
	out := ports.RecentHashes{LastOffset: p.last, Window: window}
	cutoff := s.Now().Add(-window)
	for _, sg := range p.segs {
		if !sg.hashGone && !sg.CreatedAt.Before(cutoff) {
			out.Segments = append(out.Segments, ports.HashedSegment{
				BaseOffset: sg.BaseOffset, CreatedAt: sg.CreatedAt, Hashes: bytes.Clone(sg.hashes)})
		}
	}
	if len(out.Segments) > maxSegments {
		out.Segments, out.TooLarge = nil, true
	}
	return out, nil
}
