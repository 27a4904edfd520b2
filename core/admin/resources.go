package admin

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/queen-go/queen/core/loglimit"
	"github.com/queen-go/queen/core/names"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/ports"
)

// ResourcesOptions tunes Resources; zero values take the defaults in brackets.
type ResourcesOptions struct {
	// QueuesLimit is the page size of GET /api/v1/resources/queues without a limit
	// [MaxLimit: every queue, as Queen lists them, up to the clamp].
	QueuesLimit int
	// StatusQueuesLimit is the page size of GET /api/v1/status/queues without a limit,
	// and the number of queues GET /api/v1/status lists [100, docs/api.md §5.11].
	StatusQueuesLimit int
	// PartitionsLimit is the number of partitions a queue detail or depth read lists
	// without a limit [1000].
	PartitionsLimit int
	// MaxLimit bounds every page: a larger limit is clamped to it [1000].
	MaxLimit int
	// EstimateTTL is how long one read of the storage totals serves the size estimates
	// of the queue listings [30 s].
	EstimateTTL time.Duration
	// Maintenance reports the maintenance flags for the shared state [nil: both off].
	Maintenance MaintenanceFlags
	// Hotlist and Peers report this broker's hot-list and peer hints for the shared
	// state [nil: reported off].
	Hotlist func() HotlistState
	Peers   func() PeersState
	// ShareWindow is how long one computation of a tenant-wide listing (queue lists,
	// the overview) serves every caller with the same query (see listing) [0: off;
	// the server passes QUEEN_ADMIN_SHARE_MS].
	ShareWindow time.Duration
	Now         func() time.Time // [time.Now]
	Logger      *slog.Logger
}

func (o *ResourcesOptions) defaults() {
	if o.MaxLimit <= 0 {
		o.MaxLimit = 1000
	}
	if o.QueuesLimit <= 0 {
		o.QueuesLimit = o.MaxLimit
	}
	if o.StatusQueuesLimit <= 0 {
		o.StatusQueuesLimit = 100
	}
	if o.PartitionsLimit <= 0 {
		o.PartitionsLimit = 1000
	}
	o.QueuesLimit = min(o.QueuesLimit, o.MaxLimit)
	o.StatusQueuesLimit = min(o.StatusQueuesLimit, o.MaxLimit)
	o.PartitionsLimit = min(o.PartitionsLimit, o.MaxLimit)
	if o.EstimateTTL <= 0 {
		o.EstimateTTL = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// MaintenanceFlags is this broker's copy of the maintenance flags (core/maintenance's
// Flags): Refresh re-reads them from the database.
type MaintenanceFlags interface {
	Refresh(ctx context.Context) error
	Push() bool
	Pop() bool
}

// HotlistState is what the shared state says of this broker's hot-list.
type HotlistState struct {
	Enabled                          bool
	Queues, Rings, Ready, Wheel      int    // live queues and rings; ready and wheeled slots
	MarksLocal, MarksRemote, Reseeds uint64 // marks from local commits and peers' hints; reseeds run
}

// PeersState is what the shared state says of the hints exchanged with the other
// brokers on the database.
type PeersState struct {
	Enabled                                    bool
	Sent, Received, Dropped, Batches, Failures uint64
}

// Resources is the admin API's read side of queues (docs/api.md §5.7, §5.11, §5.12's shared
// state): listings and details of queues and partitions, their depth, the namespaces and
// tasks, the system overview and the status routes.
//
// # Counts
//
// Every count is watermark arithmetic over partition and cursor rows, computed by the
// store (ports.WatermarkCounts): per partition total = last_offset - log_start + 1,
// pending = last_offset - max(worst committed, log_start - 1) with worst the lowest
// named group's cursor (the queue-mode cursor only when no named group has one),
// processing = the live leased spans, capped at pending. This service derives the rest:
// completed = total - pending - dead letters (never below 0), ready = pending -
// processing. Nothing reads message data, so a listing costs the same on an empty queue
// and on a full one.
//
// # Estimates
//
// A queue listing reports retainedBytes and a segment count. Neither is kept per queue
// and counting them would read every segment row, so both are estimates: the segment
// table's size on disk and its live row count, as PostgreSQL's own bookkeeping gives
// them, apportioned to each queue by its share of the retained messages (a queue with
// retained messages has between 1 and that many segments; the estimate is clamped
// there). One read of those totals serves EstimateTTL.
//
// # Pages
//
// Every listing is a page: a limit above MaxLimit is clamped to it (the listing says
// what it applied); a negative limit or offset is an *InputError naming the
// parameter. Queue and depth details list one page of partitions, in name order; their
// totals cover every partition.
type Resources struct {
	store ports.ResourceStore
	opts  ResourcesOptions

	mu         sync.Mutex
	storage    ports.StorageTotals
	storageAt  time.Time
	storageSet bool

	lists    *listing[QueueListing]
	overview *listing[SystemOverview]
}

// NewResources returns the service over store.
func NewResources(store ports.ResourceStore, opts ResourcesOptions) *Resources {
	opts.defaults()
	return &Resources{store: store, opts: opts,
		lists:    newListing[QueueListing](opts.ShareWindow, opts.Now),
		overview: newListing[SystemOverview](opts.ShareWindow, opts.Now)}
}

// Forget drops the shared listings: the next call of each reads again.
func (s *Resources) Forget() {
	s.lists.forget()
	s.overview.forget()
}

// QueueChanged hears of a configure or deletion this broker made: the listings show it
// at once.
func (s *Resources) QueueChanged(notify.QueueChange) { s.Forget() }

// GroupChanged hears of a group deletion or seek this broker made (the overview counts
// groups; the queue listings count their cursors).
func (s *Resources) GroupChanged(notify.GroupChange) { s.Forget() }

// PageQuery is the paging of a listing as the client gave it.
type PageQuery struct {
	Limit  *int // nil: the route's default
	Offset int
}

// page validates q, fills in the default limit and clamps it to MaxLimit.
func (s *Resources) page(q PageQuery, def int) (ports.ResourcePage, error) {
	limit := def
	if q.Limit != nil {
		limit = *q.Limit
	}
	if limit < 0 {
		return ports.ResourcePage{}, inputErrorf("limit", "limit must not be negative, got %d", limit)
	}
	limit = min(limit, s.opts.MaxLimit)
	if q.Offset < 0 {
		return ports.ResourcePage{}, inputErrorf("offset", "offset must not be negative, got %d", q.Offset)
	}
	return ports.ResourcePage{Limit: limit, Offset: q.Offset}, nil
}

// MessageStats are the message counts of a queue or a partition.
type MessageStats struct {
	Total      int64 // retained
	Pending    int64 // after the worst cursor (leased ones included)
	Processing int64 // inside live leases
	Completed  int64 // total - pending - deadLetter, not below 0
	DeadLetter int64
}

func resourceStats(c ports.WatermarkCounts) MessageStats {
	return MessageStats{Total: c.Total, Pending: c.Pending, Processing: c.Processing,
		Completed: max(c.Total-c.Pending-c.DeadLetter, 0), DeadLetter: c.DeadLetter}
}

// QueueSummary is one queue of a listing.
type QueueSummary struct {
	ID, Name, Namespace, Task string
	CreatedAt                 time.Time
	Partitions                int64
	Messages                  MessageStats
	// RetainedBytes and Segments are estimates (see Resources).
	RetainedBytes, Segments int64
}

// QueueListing is one page of queues.
type QueueListing struct {
	Queues        []QueueSummary
	Matching      int64 // queues matching the filters, all pages
	Limit, Offset int
}

// QueueQuery selects the queues of GET /api/v1/resources/queues.
type QueueQuery struct {
	Namespace, Task string
	// Stats is the client's stats parameter: "" or "live", or "cached" (Queen's
	// skip-live-enrichment; every answer here is live, so it changes nothing).
	Stats string
	Page  PageQuery
}

// Queues lists one page of the tenant's queues in name order.
func (s *Resources) Queues(ctx context.Context, tenant string, q QueueQuery) (QueueListing, error) {
	switch q.Stats {
	case "", "live", "cached":
	default:
		return QueueListing{}, inputErrorf("stats", `stats must be "cached" or "live", got %q`, q.Stats)
	}
	p, err := s.page(q.Page, s.opts.QueuesLimit)
	if err != nil {
		return QueueListing{}, err
	}
	return s.list(ctx, tenant, ports.ResourceFilter{Namespace: q.Namespace, Task: q.Task}, p)
}

// list reads one page and its estimates: two statements at most (the storage totals
// only once per EstimateTTL).
func (s *Resources) list(ctx context.Context, tenant string, f ports.ResourceFilter, p ports.ResourcePage) (QueueListing, error) {
	key := fmt.Sprintf("%s\x1f%q\x1f%q\x1f%q\x1f%d\x1f%d", tenant, f.Queue, f.Namespace, f.Task, p.Limit, p.Offset)
	return s.lists.get(ctx, key, func(ctx context.Context) (QueueListing, error) { return s.readList(ctx, tenant, f, p) })
}

func (s *Resources) readList(ctx context.Context, tenant string, f ports.ResourceFilter, p ports.ResourcePage) (QueueListing, error) {
	rows, matching, err := s.store.ListQueues(ctx, tenant, f, p)
	if err != nil {
		return QueueListing{}, err
	}
	out := QueueListing{Queues: make([]QueueSummary, len(rows)), Matching: matching, Limit: p.Limit, Offset: p.Offset}
	if len(rows) == 0 {
		return out, nil
	}
	st, err := s.storageTotals(ctx)
	if err != nil {
		return QueueListing{}, err
	}
	for i, r := range rows {
		bytes, segs := resourceEstimate(st, r.Counts.Total)
		out.Queues[i] = QueueSummary{ID: r.ID, Name: r.Name, Namespace: r.Namespace, Task: r.Task,
			CreatedAt: r.CreatedAt, Partitions: r.Partitions, Messages: resourceStats(r.Counts),
			RetainedBytes: bytes, Segments: segs}
	}
	return out, nil
}

// storageTotals returns the segment table's totals, read at most once per EstimateTTL.
// The lock is held across the read on purpose: when the totals are due, concurrent
// listings wait for one read instead of each running its own.
func (s *Resources) storageTotals(ctx context.Context) (ports.StorageTotals, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	if s.storageSet && now.Sub(s.storageAt) < s.opts.EstimateTTL {
		return s.storage, nil
	}
	st, err := s.store.StorageTotals(ctx)
	if err != nil {
		return ports.StorageTotals{}, err
	}
	s.storage, s.storageAt, s.storageSet = st, now, true
	return st, nil
}

// resourceEstimate apportions the segment table's bytes and rows to a queue by its
// share of all retained messages. The segment count is clamped to what it can be: at
// least 1 segment holds retained messages, at most one per message.
func resourceEstimate(st ports.StorageTotals, messages int64) (bytes, segments int64) {
	if messages <= 0 {
		return 0, 0
	}
	share := 1.0 // the totals may be older than the queue's count: never more than all
	if st.Messages > messages {
		share = float64(messages) / float64(st.Messages)
	}
	if st.Messages > 0 {
		bytes = int64(share * float64(max(st.SegmentBytes, 0)))
		segments = int64(share*float64(max(st.Segments, 0)) + 0.5)
	}
	return bytes, min(max(segments, 1), messages)
}

// PartitionSummary is one partition of a queue detail.
type PartitionSummary struct {
	ID, Name  string
	CreatedAt time.Time
	Messages  MessageStats
	// Consumed is the retained messages acknowledged, summed over every group.
	Consumed int64
	// LastActivity is the latest pop or ack of any group (nil: none); Oldest and Newest
	// the commit times of the first and last retained segments (nil: nothing retained).
	LastActivity, Oldest, Newest *time.Time
}

// QueueDetail is one queue with one page of its partitions.
type QueueDetail struct {
	Config     ports.QueueConfig
	CreatedAt  time.Time
	Partitions int64        // all of them
	Totals     MessageStats // over all of them
	// Segments is an estimate (see Resources); Totals.Total is the exact message count.
	Segments      int64
	Page          []PartitionSummary
	Limit, Offset int
}

// Queue returns the queue named name with one page of its partitions; an error wrapping
// ErrNotFound ("Queue not found") when there is none.
func (s *Resources) Queue(ctx context.Context, tenant, name string, pq PageQuery) (QueueDetail, error) {
	p, err := s.page(pq, s.opts.PartitionsLimit)
	if err != nil {
		return QueueDetail{}, err
	}
	if names.Check(name) != nil {
		return QueueDetail{}, notFound("Queue not found") // no queue can have that name
	}
	d, found, err := s.store.QueueDetail(ctx, tenant, name, p)
	if err != nil {
		return QueueDetail{}, err
	}
	if !found {
		return QueueDetail{}, notFound("Queue not found")
	}
	out := QueueDetail{Config: d.Config, CreatedAt: d.CreatedAt, Partitions: d.Partitions, Totals: resourceStats(d.Totals),
		Page: make([]PartitionSummary, len(d.Page)), Limit: p.Limit, Offset: p.Offset}
	if d.Totals.Total > 0 {
		st, err := s.storageTotals(ctx)
		if err != nil {
			return QueueDetail{}, err
		}
		_, out.Segments = resourceEstimate(st, d.Totals.Total)
	}
	for i, r := range d.Page {
		out.Page[i] = PartitionSummary{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt, Messages: resourceStats(r.Counts),
			Consumed: r.Consumed, LastActivity: r.LastActivity, Oldest: r.Oldest, Newest: r.Newest}
	}
	return out, nil
}

// DepthPartition is one partition of a depth read.
type DepthPartition struct {
	Partition                  string
	Pending, Processing, Ready int64
}

// QueueDepth is the backlog of a queue for one group or for the worst cursor.
type QueueDepth struct {
	Queue, Group               string // Group "" = every group (the worst cursor)
	Pending, Processing, Ready int64
	// PartitionsPending have pending messages; PartitionsReady have some outside live
	// leases.
	PartitionsPending, PartitionsReady int64
	Partitions                         []DepthPartition // one page, in name order
	Limit, Offset                      int
}

// Depth reads the backlog of the queue named name: for group's own cursors, or with
// group "" for the worst cursor of every group. An error wrapping ErrNotFound when there
// is no such queue.
func (s *Resources) Depth(ctx context.Context, tenant, name, group string, pq PageQuery) (QueueDepth, error) {
	if group != "" {
		if err := names.Check(group); err != nil {
			return QueueDepth{}, inputErrorf("group", "group %v", err)
		}
	}
	p, err := s.page(pq, s.opts.PartitionsLimit)
	if err != nil {
		return QueueDepth{}, err
	}
	if names.Check(name) != nil {
		return QueueDepth{}, notFound("Queue not found")
	}
	d, found, err := s.store.QueueDepth(ctx, tenant, name, group, p)
	if err != nil {
		return QueueDepth{}, err
	}
	if !found {
		return QueueDepth{}, notFound("Queue not found")
	}
	out := QueueDepth{Queue: name, Group: group, Pending: d.Totals.Pending, Processing: d.Totals.Processing,
		Ready:             max(d.Totals.Pending-d.Totals.Processing, 0),
		PartitionsPending: d.PartitionsPending, PartitionsReady: d.PartitionsReady,
		Partitions: make([]DepthPartition, len(d.Page)), Limit: p.Limit, Offset: p.Offset}
	for i, r := range d.Page {
		out.Partitions[i] = DepthPartition{Partition: r.Name, Pending: r.Counts.Pending, Processing: r.Counts.Processing,
			Ready: max(r.Counts.Pending-r.Counts.Processing, 0)}
	}
	return out, nil
}

// KeyTotals are the queues of one namespace or task.
type KeyTotals struct {
	Name               string
	Queues, Partitions int64
	Total, Pending     int64
}

func resourceKeyTotals(rows []ports.KeyCounts) []KeyTotals {
	out := make([]KeyTotals, len(rows))
	for i, r := range rows {
		out[i] = KeyTotals{Name: r.Key, Queues: r.Queues, Partitions: r.Partitions, Total: r.Counts.Total,
			Pending: r.Counts.Pending}
	}
	return out
}

// Namespaces lists one page of the tenant's namespaces in name order (queues without
// one are not listed).
func (s *Resources) Namespaces(ctx context.Context, tenant string, pq PageQuery) ([]KeyTotals, error) {
	return s.countsBy(ctx, tenant, ports.ByNamespace, pq)
}

// Tasks lists one page of the tenant's tasks in name order (queues without one are not
// listed).
func (s *Resources) Tasks(ctx context.Context, tenant string, pq PageQuery) ([]KeyTotals, error) {
	return s.countsBy(ctx, tenant, ports.ByTask, pq)
}

func (s *Resources) countsBy(ctx context.Context, tenant string, key ports.ResourceKey, pq PageQuery) ([]KeyTotals, error) {
	p, err := s.page(pq, s.opts.MaxLimit)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.CountsBy(ctx, tenant, key, p)
	if err != nil {
		return nil, err
	}
	return resourceKeyTotals(rows), nil
}

// SystemOverview is the tenant at a glance.
type SystemOverview struct {
	Queues, Partitions, Namespaces, Tasks int64
	ConsumerGroups                        int64 // distinct named groups subscribed anywhere
	Messages                              MessageStats
	ByNamespace                           []KeyTotals // the first MaxLimit namespaces
	At                                    time.Time
}

// Overview sums the tenant: two statements.
func (s *Resources) Overview(ctx context.Context, tenant string) (SystemOverview, error) {
	return s.overview.get(ctx, tenant, func(ctx context.Context) (SystemOverview, error) { return s.readOverview(ctx, tenant) })
}

func (s *Resources) readOverview(ctx context.Context, tenant string) (SystemOverview, error) {
	o, err := s.store.Overview(ctx, tenant)
	if err != nil {
		return SystemOverview{}, err
	}
	ns, err := s.store.CountsBy(ctx, tenant, ports.ByNamespace, ports.ResourcePage{Limit: s.opts.MaxLimit})
	if err != nil {
		return SystemOverview{}, err
	}
	return SystemOverview{Queues: o.Queues, Partitions: o.Partitions, Namespaces: o.Namespaces, Tasks: o.Tasks,
		ConsumerGroups: o.ConsumerGroups, Messages: resourceStats(o.Counts), ByNamespace: resourceKeyTotals(ns),
		At: s.opts.Now()}, nil
}

// StatusQuery selects the queues of the status routes. From and To (nil: the last hour)
// bound a time range the broker keeps no history for: they are checked and echoed, and
// every count is the current one.
type StatusQuery struct {
	From, To               *time.Time
	Queue, Namespace, Task string
	Page                   PageQuery // GET /api/v1/status/queues only
}

func (s *Resources) statusRange(q StatusQuery) (from, to time.Time, err error) {
	to = s.opts.Now().UTC()
	if q.To != nil {
		to = q.To.UTC()
	}
	from = to.Add(-time.Hour)
	if q.From != nil {
		from = q.From.UTC()
	}
	if from.After(to) {
		return from, to, inputErrorf("from", "from (%s) is after to (%s)", from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano))
	}
	return from, to, nil
}

// StatusReport is GET /api/v1/status: the current state of the selected queues.
type StatusReport struct {
	From, To    time.Time // the range asked for (no counter is kept over time)
	QueueCount  int64
	Partitions  int64
	Messages    MessageStats
	Leases      ports.LeaseSummary
	DeadLetters ports.DeadLetterSummary
	Queues      QueueListing // the first StatusQueuesLimit of them
}

// Status reports the selected queues: two statements (three when the size estimates
// are due).
func (s *Resources) Status(ctx context.Context, tenant string, q StatusQuery) (StatusReport, error) {
	from, to, err := s.statusRange(q)
	if err != nil {
		return StatusReport{}, err
	}
	f := ports.ResourceFilter{Queue: q.Queue, Namespace: q.Namespace, Task: q.Task}
	st, err := s.store.Status(ctx, tenant, f)
	if err != nil {
		return StatusReport{}, err
	}
	list, err := s.list(ctx, tenant, f, ports.ResourcePage{Limit: s.opts.StatusQueuesLimit})
	if err != nil {
		return StatusReport{}, err
	}
	return StatusReport{From: from, To: to, QueueCount: st.Queues, Partitions: st.Partitions,
		Messages: resourceStats(st.Counts), Leases: st.Leases, DeadLetters: st.DeadLetters, Queues: list}, nil
}

// StatusQueues lists one page of the selected queues (GET /api/v1/status/queues).
func (s *Resources) StatusQueues(ctx context.Context, tenant string, q StatusQuery) (QueueListing, error) {
	if _, _, err := s.statusRange(q); err != nil {
		return QueueListing{}, err
	}
	p, err := s.page(q.Page, s.opts.StatusQueuesLimit)
	if err != nil {
		return QueueListing{}, err
	}
	return s.list(ctx, tenant, ports.ResourceFilter{Queue: q.Queue, Namespace: q.Namespace, Task: q.Task}, p)
}

// SharedState is GET /api/v1/system/shared-state: what this broker shares with the
// others on its database.
type SharedState struct {
	// Enabled: the brokers tell each other of their commits (peer hints); Reason says
	// how, or why not.
	Enabled                             bool
	Reason                              string
	MaintenanceMode, PopMaintenanceMode bool // re-read from the database
	Hotlist                             HotlistState
	Peers                               PeersState
}

// The reasons of SharedState.
const (
	ReasonPeerHints         = "peer_hints_listen_notify" // hints over PostgreSQL LISTEN/NOTIFY
	ReasonPeerHintsDisabled = "peer_hints_disabled"      // QUEEN_PEER_HINTS=false
)

// SharedState reports the peer hints, the hot-list and the maintenance flags, re-read
// from the database first (when that fails, the last known flags, and the failure is
// logged).
func (s *Resources) SharedState(ctx context.Context) SharedState {
	var out SharedState
	if m := s.opts.Maintenance; m != nil {
		if err := m.Refresh(ctx); err != nil {
			s.opts.Logger.Warn("shared state: maintenance flags unreadable, answering the last known ones", loglimit.Cause("maintenance flags unreadable"), "err", err)
		}
		out.MaintenanceMode, out.PopMaintenanceMode = m.Push(), m.Pop()
	}
	if s.opts.Hotlist != nil {
		out.Hotlist = s.opts.Hotlist()
	}
	if s.opts.Peers != nil {
		out.Peers = s.opts.Peers()
	}
	out.Enabled = out.Peers.Enabled
	out.Reason = ReasonPeerHintsDisabled
	if out.Enabled {
		out.Reason = ReasonPeerHints
	}
	return out
}
