package httpapi

import (
	"net/http"
	"net/url"
	"time"

	"github.com/gorilla/mux"

	"github.com/queen-go/queen/core/admin"
)

// statusRoutes registers the status routes (docs/api.md §5.11's first rows, §5.12's shared
// state, §5.13's GET /status).
func (a *api) statusRoutes(r *mux.Router) {
	r.HandleFunc("/api/v1/status", a.handleStatus).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/status/queues", a.handleStatusQueues).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/status/queues/{queue:.+}", a.handleStatusQueue).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/system/shared-state", a.handleSharedState).Methods(http.MethodGet)
	r.HandleFunc("/status", a.handleStatusOK).Methods(http.MethodGet)
}

// statusTimeParam reads an optional RFC 3339 timestamp.
func statusTimeParam(q url.Values, name string) (*time.Time, error) {
	s := q.Get(name)
	if s == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, badRequestf("%s must be an RFC 3339 timestamp (e.g. 2026-05-01T10:00:00Z), got %q", name, s)
	}
	if err := checkTime("", name, t); err != nil {
		return nil, err
	}
	return &t, nil
}

// statusQuery reads from, to, queue, namespace and task.
func statusQuery(q url.Values) (admin.StatusQuery, error) {
	sq := admin.StatusQuery{Queue: q.Get("queue"), Namespace: q.Get("namespace"), Task: q.Get("task")}
	var err error
	if sq.From, err = statusTimeParam(q, "from"); err != nil {
		return sq, err
	}
	sq.To, err = statusTimeParam(q, "to")
	return sq, err
}

type statusTimeRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

type statusActiveQueue struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Namespace     string `json:"namespace"`
	Task          string `json:"task"`
	Partitions    int64  `json:"partitions"`
	TotalConsumed int64  `json:"totalConsumed"` // completed: total - pending - dead letters
}

type statusLeases struct {
	Active               int64 `json:"active"`
	PartitionsWithLeases int64 `json:"partitionsWithLeases"`
	TotalBatchSize       int64 `json:"totalBatchSize"`
	TotalAcked           int64 `json:"totalAcked"` // always 0: a lease keeps no count of its acks (Queen's is 0 too)
}

type statusError struct {
	Error string `json:"error"` // "unknown" for dead letters recorded without one
	Count int64  `json:"count"`
}

// statusDeadLetters are the dead letters now: totalMessages and currentMessages are the
// same count (Queen's totalMessages is a lifetime counter).
type statusDeadLetters struct {
	TotalMessages      int64          `json:"totalMessages"`
	CurrentMessages    int64          `json:"currentMessages"`
	AffectedPartitions int64          `json:"affectedPartitions"`
	TopErrors          *[]statusError `json:"topErrors,omitempty"` // with the history: the most frequent texts
}

type statusRequests struct {
	Push int64 `json:"push"`
	Pop  int64 `json:"pop"`
	Ack  int64 `json:"ack"`
}

type statusBatch struct {
	Push float64 `json:"push"`
	Pop  float64 `json:"pop"`
	Ack  float64 `json:"ack"`
}

// statusMessageTotals are the current counts, with the history's requests over the range
// and their messages per request.
type statusMessageTotals struct {
	resStats
	Requests        *statusRequests `json:"requests,omitempty"`
	BatchEfficiency *statusBatch    `json:"batchEfficiency,omitempty"`
}

type statusErrors struct {
	DBErrors    int64 `json:"dbErrors"`
	AckFailed   int64 `json:"ackFailed"`
	DLQMessages int64 `json:"dlqMessages"` // moved to the dead letters in the range
}

// statusHistory is the part of GET /api/v1/status read from the metrics history (when
// the broker has it): the range's throughput, newest bucket first, the brokers of the
// last minutes and the range's errors.
type statusHistory struct {
	BucketMinutes int          `json:"bucketMinutes"`
	PointCount    int          `json:"pointCount"`
	ByQueues      bool         `json:"byQueues"` // the counters are the selected queues', not every queue's
	Throughput    []anaPoint   `json:"throughput"`
	Workers       []anaWorker  `json:"workers"`
	Errors        statusErrors `json:"errors"`
}

// statusResponse is our answer to GET /api/v1/status (Queen passes its get_status_v3
// through): the current state of the queues selected by queue, namespace and task and,
// with the metrics history, the range's throughput, brokers and errors.
type statusResponse struct {
	TimeRange       statusTimeRange     `json:"timeRange"`
	Queues          []statusActiveQueue `json:"queues"` // the first 100, by name
	QueueCount      int64               `json:"queueCount"`
	PartitionCount  int64               `json:"partitionCount"`
	Messages        statusMessageTotals `json:"messages"`
	Leases          statusLeases        `json:"leases"`
	DeadLetterQueue statusDeadLetters   `json:"deadLetterQueue"`
	StatsAge        int                 `json:"statsAge"` // 0: computed at the request
	*statusHistory
}

// handleStatus is GET /api/v1/status (docs/api.md §5.11, §5.11a).
func (a *api) handleStatus(w http.ResponseWriter, r *http.Request) {
	sq, err := statusQuery(r.URL.Query())
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	st, err := a.Resources.Status(r.Context(), a.opts.Tenant, sq)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	out := statusResponse{TimeRange: statusTimeRange{From: resTime(st.From), To: resTime(st.To)},
		Queues: make([]statusActiveQueue, len(st.Queues.Queues)), QueueCount: st.QueueCount,
		PartitionCount: st.Partitions, Messages: statusMessageTotals{resStats: resStatsOf(st.Messages)},
		Leases: statusLeases{Active: st.Leases.Active, PartitionsWithLeases: st.Leases.Partitions,
			TotalBatchSize: st.Leases.Messages},
		DeadLetterQueue: statusDeadLetters{TotalMessages: st.DeadLetters.Current, CurrentMessages: st.DeadLetters.Current,
			AffectedPartitions: st.DeadLetters.Partitions}}
	for i, q := range st.Queues.Queues {
		out.Queues[i] = statusActiveQueue{ID: q.ID, Name: q.Name, Namespace: q.Namespace, Task: q.Task,
			Partitions: q.Partitions, TotalConsumed: q.Messages.Completed}
	}
	if a.Analytics != nil {
		h, err := a.Analytics.Status(r.Context(), a.opts.Tenant, admin.AnalyticsQuery{From: sq.From, To: sq.To,
			Queue: sq.Queue, Namespace: sq.Namespace, Task: sq.Task})
		if err != nil {
			writeError(w, a.opts.Logger, err)
			return
		}
		out.addHistory(h)
	}
	writeJSON(w, http.StatusOK, out)
}

// addHistory adds the history's parts to the answer.
func (out *statusResponse) addHistory(h admin.StatusHistory) {
	t := h.Totals
	out.statusHistory = &statusHistory{BucketMinutes: h.Window.BucketMinutes(), PointCount: len(h.Series),
		ByQueues: h.ByQueues, Throughput: anaPoints(h.Series), Workers: anaWorkers(h.Workers),
		Errors: statusErrors{DBErrors: t.DBErrors, AckFailed: t.AckFailed, DLQMessages: t.DLQMoves}}
	push, pop, ack := t.BatchEfficiency()
	out.Messages.Requests = &statusRequests{Push: t.PushRequests, Pop: t.PopRequests, Ack: t.AckRequests}
	out.Messages.BatchEfficiency = &statusBatch{Push: push, Pop: pop, Ack: ack}
	top := make([]statusError, len(h.TopErrors))
	for i, e := range h.TopErrors {
		top[i] = statusError{Error: anaErrorText(e), Count: e.Count}
	}
	out.DeadLetterQueue.TopErrors = &top
}

// statusMessages are a queue's counts in the status listing (docs/api.md §5.11).
type statusMessages struct {
	Total      int64 `json:"total"`
	Pending    int64 `json:"pending"`
	Processing int64 `json:"processing"`
	Completed  int64 `json:"completed"`
	DeadLetter int64 `json:"deadLetter"`
}

type statusQueue struct {
	ID         string         `json:"id"`
	Name       string         `json:"name"`
	Namespace  string         `json:"namespace"`
	Task       string         `json:"task"`
	CreatedAt  string         `json:"createdAt"`
	Partitions int64          `json:"partitions"`
	Messages   statusMessages `json:"messages"`
}

type statusPagination struct {
	Limit  int   `json:"limit"`
	Offset int   `json:"offset"`
	Total  int64 `json:"total"` // queues matching the filters, all pages
}

type statusQueuesResponse struct {
	Queues     []statusQueue    `json:"queues"`
	Pagination statusPagination `json:"pagination"`
}

// handleStatusQueues is GET /api/v1/status/queues (docs/api.md §5.11): limit (100) and offset.
func (a *api) handleStatusQueues(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sq, err := statusQuery(q)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	if sq.Page, err = resPage(q); err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	list, err := a.Resources.StatusQueues(r.Context(), a.opts.Tenant, sq)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	out := statusQueuesResponse{Queues: make([]statusQueue, len(list.Queues)),
		Pagination: statusPagination{Limit: list.Limit, Offset: list.Offset, Total: list.Matching}}
	for i, s := range list.Queues {
		m := s.Messages
		out.Queues[i] = statusQueue{ID: s.ID, Name: s.Name, Namespace: s.Namespace, Task: s.Task,
			CreatedAt: resTime(s.CreatedAt), Partitions: s.Partitions,
			Messages: statusMessages{Total: m.Total, Pending: m.Pending, Processing: m.Processing,
				Completed: m.Completed, DeadLetter: m.DeadLetter}}
	}
	writeJSON(w, http.StatusOK, out)
}

type statusQueueConfig struct {
	LeaseTime       int  `json:"leaseTime"`
	RetryLimit      int  `json:"retryLimit"`
	RetryDelay      int  `json:"retryDelay"`
	TTL             int  `json:"ttl"`
	MaxQueueSize    int  `json:"maxQueueSize"`
	DeadLetterQueue bool `json:"deadLetterQueue"`
}

type statusQueueInfo struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Namespace string            `json:"namespace"`
	Task      string            `json:"task"`
	Priority  int               `json:"priority"`
	CreatedAt string            `json:"createdAt"`
	Config    statusQueueConfig `json:"config"`
}

type statusCursor struct {
	TotalConsumed   int64 `json:"totalConsumed"`   // retained messages acked, summed over groups
	BatchesConsumed int64 `json:"batchesConsumed"` // always 0: no batch counter is kept
}

type statusPartition struct {
	ID            string       `json:"id"`
	Name          string       `json:"name"`
	CreatedAt     string       `json:"createdAt"`
	Messages      resStats     `json:"messages"`
	Stats         resStats     `json:"stats"`
	Cursor        statusCursor `json:"cursor"`
	LastActivity  *string      `json:"lastActivity"`
	OldestMessage *string      `json:"oldestMessage"`
	NewestMessage *string      `json:"newestMessage"`
}

type statusTotals struct {
	Messages resStats `json:"messages"`
}

type statusQueueResponse struct {
	Queue      statusQueueInfo   `json:"queue"`
	Partitions []statusPartition `json:"partitions"`
	Totals     statusTotals      `json:"totals"`
}

// handleStatusQueue is GET /api/v1/status/queues/{queue} (docs/api.md §5.11): includePartitions
// is checked (true or false) and changes nothing; limit and offset page the partitions.
func (a *api) handleStatusQueue(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch v := q.Get("includePartitions"); v {
	case "", "true", "false":
	default:
		writeError(w, a.opts.Logger, badRequestf("includePartitions must be true or false, got %q", v))
		return
	}
	d, ok := a.queueDetail(w, r, q)
	if !ok {
		return
	}
	c := d.Config
	out := statusQueueResponse{
		Queue: statusQueueInfo{ID: c.ID, Name: c.Name, Namespace: c.Namespace, Task: c.Task, Priority: c.Priority,
			CreatedAt: resTime(d.CreatedAt), Config: statusQueueConfig{LeaseTime: c.LeaseTime, RetryLimit: c.RetryLimit,
				RetryDelay: c.RetryDelay, TTL: c.TTL, MaxQueueSize: c.MaxSize, DeadLetterQueue: c.DeadLetterQueue}},
		Partitions: make([]statusPartition, len(d.Page)),
		Totals:     statusTotals{Messages: resStatsOf(d.Totals)},
	}
	for i, p := range d.Page {
		s := resStatsOf(p.Messages)
		out.Partitions[i] = statusPartition{ID: p.ID, Name: p.Name, CreatedAt: resTime(p.CreatedAt), Messages: s, Stats: s,
			Cursor: statusCursor{TotalConsumed: p.Consumed}, LastActivity: resTimePtr(p.LastActivity),
			OldestMessage: resTimePtr(p.Oldest), NewestMessage: resTimePtr(p.Newest)}
	}
	writeJSON(w, http.StatusOK, out)
}

type sharedStateHotlist struct {
	Enabled     bool   `json:"enabled"`
	Queues      int    `json:"queues"`
	Rings       int    `json:"rings"`
	Ready       int    `json:"ready"`
	Wheel       int    `json:"wheel"`
	MarksLocal  uint64 `json:"marksLocal"`
	MarksRemote uint64 `json:"marksRemote"`
	Reseeds     uint64 `json:"reseeds"`
}

type sharedStatePeers struct {
	Enabled  bool   `json:"enabled"`
	Sent     uint64 `json:"sent"`
	Received uint64 `json:"received"`
	Dropped  uint64 `json:"dropped"`
	Batches  uint64 `json:"batches"`
	Failures uint64 `json:"failures"`
}

// sharedStateResponse keeps docs/api.md §5.12's keys (enabled, reason, maintenance_mode,
// pop_maintenance_mode) and adds this broker's hot-list and peer hints.
type sharedStateResponse struct {
	Enabled            bool               `json:"enabled"`
	Reason             string             `json:"reason"`
	MaintenanceMode    bool               `json:"maintenance_mode"`
	PopMaintenanceMode bool               `json:"pop_maintenance_mode"`
	Hotlist            sharedStateHotlist `json:"hotlist"`
	PeerHints          sharedStatePeers   `json:"peerHints"`
}

// handleSharedState is GET /api/v1/system/shared-state (docs/api.md §5.12).
func (a *api) handleSharedState(w http.ResponseWriter, r *http.Request) {
	s := a.Resources.SharedState(r.Context())
	h, p := s.Hotlist, s.Peers
	writeJSON(w, http.StatusOK, sharedStateResponse{Enabled: s.Enabled, Reason: s.Reason,
		MaintenanceMode: s.MaintenanceMode, PopMaintenanceMode: s.PopMaintenanceMode,
		Hotlist: sharedStateHotlist{Enabled: h.Enabled, Queues: h.Queues, Rings: h.Rings, Ready: h.Ready, Wheel: h.Wheel,
			MarksLocal: h.MarksLocal, MarksRemote: h.MarksRemote, Reseeds: h.Reseeds},
		PeerHints: sharedStatePeers{Enabled: p.Enabled, Sent: p.Sent, Received: p.Received, Dropped: p.Dropped,
			Batches: p.Batches, Failures: p.Failures}})
}

// handleStatusOK is GET /status (docs/api.md §5.13).
func (a *api) handleStatusOK(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Status string `json:"status"`
		Engine string `json:"engine"`
	}{"ok", "segments-go"})
}
