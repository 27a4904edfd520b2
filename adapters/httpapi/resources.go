package httpapi

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/ports"
)

// resTimeFormat is the admin routes' timestamp: milliseconds, UTC (docs/api.md §1: most
// admin answers use milliseconds).
const resTimeFormat = "2006-01-02T15:04:05.000Z"

// resourcesRoutes registers the resources routes (docs/api.md §5.7) and the status routes
// (§5.11's first rows, §5.12's shared state, §5.13's GET /status; status_routes.go).
func (a *api) resourcesRoutes(r *mux.Router) {
	r.HandleFunc("/api/v1/resources/queues", a.handleResQueues).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/resources/overview", a.handleResOverview).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/resources/namespaces", a.handleResNamespaces).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/resources/tasks", a.handleResTasks).Methods(http.MethodGet)
	// A queue name may contain '/' (sent as %2F, matched decoded, as DELETE does): the
	// depth route takes only a path whose last '/' was sent as a slash, so a queue named
	// "a/depth" (".../a%2Fdepth") is a queue, not the depth of "a".
	r.Path("/api/v1/resources/queues/{queue:.+}/depth").Methods(http.MethodGet).
		MatcherFunc(resLiteralSuffix("/depth")).HandlerFunc(a.handleResDepth)
	r.HandleFunc("/api/v1/resources/queues/{queue:.+}", a.handleResQueue).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/stats/refresh", a.handleStatsRefresh).Methods(http.MethodPost)
	a.statusRoutes(r)
}

// resLiteralSuffix matches requests whose path, as sent (escaped), ends in suffix.
func resLiteralSuffix(suffix string) mux.MatcherFunc {
	return func(r *http.Request, _ *mux.RouteMatch) bool {
		return strings.HasSuffix(r.URL.EscapedPath(), suffix)
	}
}

// resPage reads limit and offset (absent: the route's defaults, decided by the service).
func resPage(q url.Values) (admin.PageQuery, error) {
	var p admin.PageQuery
	if q.Get("limit") != "" {
		n, err := intParam(q, "limit", 0)
		if err != nil {
			return p, err
		}
		p.Limit = &n
	}
	var err error
	p.Offset, err = intParam(q, "offset", 0)
	return p, err
}

func resTime(t time.Time) string { return t.UTC().Format(resTimeFormat) }

func resTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := resTime(*t)
	return &s
}

// resQueueMessages is a queue's "messages" in the listing.
type resQueueMessages struct {
	Total      int64 `json:"total"`
	Pending    int64 `json:"pending"`
	Processing int64 `json:"processing"`
}

type resSegments struct {
	Segments int64 `json:"segments"` // an estimate (core/admin Resources)
	Messages int64 `json:"messages"`
}

type resQueue struct {
	ID            string           `json:"id"`
	Name          string           `json:"name"`
	Namespace     string           `json:"namespace"`
	Task          string           `json:"task"`
	CreatedAt     string           `json:"createdAt"`
	Partitions    int64            `json:"partitions"`
	RetainedBytes int64            `json:"retainedBytes"` // an estimate (core/admin Resources)
	Messages      resQueueMessages `json:"messages"`
	Segments      resSegments      `json:"segments"`
}

type resQueuesResponse struct {
	Queues []resQueue `json:"queues"`
	// Pagination is the paging applied (a limit above the maximum is clamped) and the
	// queues matching, as GET /api/v1/status/queues has it; Queen does not send it (it
	// lists every queue).
	Pagination statusPagination `json:"pagination"`
}

// handleResQueues is GET /api/v1/resources/queues (docs/api.md §5.7): namespace, task, limit
// (default: every queue, up to the maximum page) and offset are honoured; stats is
// checked.
func (a *api) handleResQueues(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page, err := resPage(q)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	list, err := a.Resources.Queues(r.Context(), a.opts.Tenant, admin.QueueQuery{
		Namespace: q.Get("namespace"), Task: q.Get("task"), Stats: q.Get("stats"), Page: page})
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	out := resQueuesResponse{Queues: make([]resQueue, len(list.Queues)),
		Pagination: statusPagination{Limit: list.Limit, Offset: list.Offset, Total: list.Matching}}
	for i, s := range list.Queues {
		out.Queues[i] = resQueue{ID: s.ID, Name: s.Name, Namespace: s.Namespace, Task: s.Task,
			CreatedAt: resTime(s.CreatedAt), Partitions: s.Partitions, RetainedBytes: s.RetainedBytes,
			Messages: resQueueMessages{Total: s.Messages.Total, Pending: s.Messages.Pending, Processing: s.Messages.Processing},
			Segments: resSegments{Segments: s.Segments, Messages: s.Messages.Total}}
	}
	writeJSON(w, http.StatusOK, out)
}

// resStats are the counts of a partition or a queue in a detail (docs/api.md §5.7).
type resStats struct {
	Total      int64  `json:"total"`
	Pending    int64  `json:"pending"`
	Processing int64  `json:"processing"`
	Completed  int64  `json:"completed"`
	Failed     *int64 `json:"failed"` // always null: no counter of failures is kept
	DeadLetter int64  `json:"deadLetter"`
}

func resStatsOf(s admin.MessageStats) resStats {
	return resStats{Total: s.Total, Pending: s.Pending, Processing: s.Processing, Completed: s.Completed,
		DeadLetter: s.DeadLetter}
}

// resOptions are the 21 options of docs/api.md §5.6 in its order: namespace and task, then
// the others (embedded, so encoded inline).
type resOptions struct {
	Namespace string `json:"namespace"`
	Task      string `json:"task"`
	ports.QueueOptions
}

type resPartition struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	CreatedAt     string   `json:"createdAt"`
	Stats         resStats `json:"stats"`
	OldestMessage *string  `json:"oldestMessage"`
	NewestMessage *string  `json:"newestMessage"`
}

type resQueueDetail struct {
	ID         string         `json:"id"`
	Name       string         `json:"name"`
	Namespace  string         `json:"namespace"`
	Task       string         `json:"task"`
	CreatedAt  string         `json:"createdAt"`
	Options    resOptions     `json:"options"`
	Partitions []resPartition `json:"partitions"`
	Totals     resStats       `json:"totals"`
	Segments   resSegments    `json:"segments"`
}

// handleResQueue is GET /api/v1/resources/queues/{queue} (docs/api.md §5.7); limit and
// offset page the partitions (the totals cover all of them).
func (a *api) handleResQueue(w http.ResponseWriter, r *http.Request) {
	d, ok := a.queueDetail(w, r, r.URL.Query())
	if !ok {
		return
	}
	c := d.Config
	out := resQueueDetail{ID: c.ID, Name: c.Name, Namespace: c.Namespace, Task: c.Task, CreatedAt: resTime(d.CreatedAt),
		Options:    resOptions{Namespace: c.Namespace, Task: c.Task, QueueOptions: c.QueueOptions},
		Partitions: make([]resPartition, len(d.Page)), Totals: resStatsOf(d.Totals),
		Segments: resSegments{Segments: d.Segments, Messages: d.Totals.Total}}
	for i, p := range d.Page {
		out.Partitions[i] = resPartition{ID: p.ID, Name: p.Name, CreatedAt: resTime(p.CreatedAt),
			Stats: resStatsOf(p.Messages), OldestMessage: resTimePtr(p.Oldest), NewestMessage: resTimePtr(p.Newest)}
	}
	writeJSON(w, http.StatusOK, out)
}

// queueDetail reads the detail of the route's {queue}, its partitions paged by q's limit
// and offset: the one read behind the two detail routes (resources and status). An
// error is answered, and ok is false.
func (a *api) queueDetail(w http.ResponseWriter, r *http.Request, q url.Values) (d admin.QueueDetail, ok bool) {
	page, err := resPage(q)
	if err == nil {
		d, err = a.Resources.Queue(r.Context(), a.opts.Tenant, mux.Vars(r)["queue"], page)
	}
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return admin.QueueDetail{}, false
	}
	return d, true
}

type resDepthPartition struct {
	Partition  string `json:"partition"`
	Pending    int64  `json:"pending"`
	Processing int64  `json:"processing"`
	Ready      int64  `json:"ready"`
}

type resDepth struct {
	Queue             string              `json:"queue"`
	Group             *string             `json:"group"` // null: every group (the worst cursor)
	Pending           int64               `json:"pending"`
	Processing        int64               `json:"processing"`
	Ready             int64               `json:"ready"`
	PartitionsPending int64               `json:"partitionsPending"`
	PartitionsReady   int64               `json:"partitionsReady"`
	Conflation        bool                `json:"conflation"` // no conflating groups here
	EffectivePending  int64               `json:"effectivePending"`
	EffectiveReady    int64               `json:"effectiveReady"`
	Partitions        []resDepthPartition `json:"partitions"`
}

// handleResDepth is GET /api/v1/resources/queues/{queue}/depth?group= (docs/api.md §5.7);
// limit and offset page the partitions.
func (a *api) handleResDepth(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page, err := resPage(q)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	d, err := a.Resources.Depth(r.Context(), a.opts.Tenant, mux.Vars(r)["queue"], q.Get("group"), page)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	out := resDepth{Queue: d.Queue, Pending: d.Pending, Processing: d.Processing, Ready: d.Ready,
		PartitionsPending: d.PartitionsPending, PartitionsReady: d.PartitionsReady,
		EffectivePending: d.Pending, EffectiveReady: d.Ready, Partitions: make([]resDepthPartition, len(d.Partitions))}
	if d.Group != "" {
		out.Group = &d.Group
	}
	for i, p := range d.Partitions {
		out.Partitions[i] = resDepthPartition{Partition: p.Partition, Pending: p.Pending, Processing: p.Processing, Ready: p.Ready}
	}
	writeJSON(w, http.StatusOK, out)
}

type resKeyMessages struct {
	Total   int64 `json:"total"`
	Pending int64 `json:"pending"`
}

type resNamespace struct {
	Namespace  string         `json:"namespace"`
	Queues     int64          `json:"queues"`
	Partitions int64          `json:"partitions"`
	Messages   resKeyMessages `json:"messages"`
}

type resTask struct {
	Task       string         `json:"task"`
	Queues     int64          `json:"queues"`
	Partitions int64          `json:"partitions"`
	Messages   resKeyMessages `json:"messages"`
}

func resNamespaces(ks []admin.KeyTotals) []resNamespace {
	out := make([]resNamespace, len(ks))
	for i, k := range ks {
		out[i] = resNamespace{Namespace: k.Name, Queues: k.Queues, Partitions: k.Partitions,
			Messages: resKeyMessages{Total: k.Total, Pending: k.Pending}}
	}
	return out
}

// handleResNamespaces is GET /api/v1/resources/namespaces (docs/api.md §5.7).
func (a *api) handleResNamespaces(w http.ResponseWriter, r *http.Request) {
	page, err := resPage(r.URL.Query())
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	ks, err := a.Resources.Namespaces(r.Context(), a.opts.Tenant, page)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Namespaces []resNamespace `json:"namespaces"`
	}{resNamespaces(ks)})
}

// handleResTasks is GET /api/v1/resources/tasks (docs/api.md §5.7).
func (a *api) handleResTasks(w http.ResponseWriter, r *http.Request) {
	page, err := resPage(r.URL.Query())
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	ks, err := a.Resources.Tasks(r.Context(), a.opts.Tenant, page)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	out := make([]resTask, len(ks))
	for i, k := range ks {
		out[i] = resTask{Task: k.Name, Queues: k.Queues, Partitions: k.Partitions,
			Messages: resKeyMessages{Total: k.Total, Pending: k.Pending}}
	}
	writeJSON(w, http.StatusOK, struct {
		Tasks []resTask `json:"tasks"`
	}{out})
}

// statsRefreshMessage says what POST /api/v1/stats/refresh did (docs/api.md §5.12).
const statsRefreshMessage = "Counts are computed on every read here (watermark arithmetic), so there are no " +
	"statistics to recompute; the shared listing answers and the size estimates were dropped, so the next " +
	"reads compute them afresh."

// statsRefreshed answers POST /api/v1/stats/refresh: Queen's engine and queuesUpdated,
// and what this broker did.
type statsRefreshed struct {
	Engine        string `json:"engine"`        // "segments", as Queen answers
	QueuesUpdated int64  `json:"queuesUpdated"` // the tenant's queues, which the next reads count afresh
	Refreshed     bool   `json:"refreshed"`     // always true: the cached answers are gone
	RefreshedAt   string `json:"refreshedAt"`
	Message       string `json:"message"`
}

// handleStatsRefresh is POST /api/v1/stats/refresh (ADMIN): the body is ignored.
func (a *api) handleStatsRefresh(w http.ResponseWriter, r *http.Request) {
	res, err := a.Resources.Refresh(r.Context(), a.opts.Tenant)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	writeJSON(w, http.StatusOK, statsRefreshed{Engine: "segments", QueuesUpdated: res.Queues, Refreshed: true,
		RefreshedAt: resTime(time.Now()), Message: statsRefreshMessage})
}

// resOverview is our answer to GET /api/v1/resources/overview (Queen answers its
// get_system_overview_v3, which docs/api.md does not detail): the tenant's queues,
// partitions, namespaces, tasks and named consumer groups, its message counts, and the
// same per namespace; with the metrics history, the recent throughput and the groups'
// lag. statsAge is 0: everything is computed at the request.
type resOverview struct {
	Queues         int64          `json:"queues"`
	Partitions     int64          `json:"partitions"`
	Namespaces     int64          `json:"namespaces"`
	Tasks          int64          `json:"tasks"`
	ConsumerGroups int64          `json:"consumerGroups"`
	Messages       resStats       `json:"messages"`
	ByNamespace    []resNamespace `json:"byNamespace"`
	Throughput     *resThroughput `json:"throughput,omitempty"`
	Lag            *resLag        `json:"lag,omitempty"`
	Timestamp      string         `json:"timestamp"`
	StatsAge       int            `json:"statsAge"`
}

// resThroughput is the messages pushed and acknowledged per second over the last five
// whole minutes.
type resThroughput struct {
	IngestedPerSecond  float64 `json:"ingestedPerSecond"`
	ProcessedPerSecond float64 `json:"processedPerSecond"`
}

type resLagFigures struct {
	Avg    float64 `json:"avg"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// resLag is how far behind the consumer groups are, over every (group, partition) of
// the tenant's queues: time in seconds (the oldest unconsumed message's age, 0 when
// none waits), offset in messages.
type resLag struct {
	Time      resLagFigures `json:"time"`
	Offset    resLagFigures `json:"offset"`
	Positions int64         `json:"positions"` // (group, partition) pairs counted
}

// handleResOverview is GET /api/v1/resources/overview.
func (a *api) handleResOverview(w http.ResponseWriter, r *http.Request) {
	o, err := a.Resources.Overview(r.Context(), a.opts.Tenant)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	out := resOverview{Queues: o.Queues, Partitions: o.Partitions, Namespaces: o.Namespaces,
		Tasks: o.Tasks, ConsumerGroups: o.ConsumerGroups, Messages: resStatsOf(o.Messages),
		ByNamespace: resNamespaces(o.ByNamespace), Timestamp: resTime(o.At)}
	if a.Analytics != nil {
		h, err := a.Analytics.Overview(r.Context(), a.opts.Tenant)
		if err != nil {
			writeError(w, a.opts.Logger, err)
			return
		}
		l := h.Lag
		out.Throughput = &resThroughput{IngestedPerSecond: h.IngestedPerSecond, ProcessedPerSecond: h.ProcessedPerSecond}
		out.Lag = &resLag{Time: resLagFigures{Avg: l.TimeAvg, Median: l.TimeMedian, Max: l.TimeMax},
			Offset: resLagFigures{Avg: l.OffsetAvg, Median: l.OffsetMedian, Max: l.OffsetMax}, Positions: l.Positions}
	}
	writeJSON(w, http.StatusOK, out)
}
