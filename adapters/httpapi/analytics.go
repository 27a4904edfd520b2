package httpapi

import (
	"cmp"
	"math"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/gorilla/mux"

	"github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/ports"
)

// analyticsRoutes registers the history routes (docs/api.md §5.11a).
func (a *api) analyticsRoutes(r *mux.Router) {
	r.HandleFunc("/api/v1/analytics/queue-ops", a.handleQueueOps).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/analytics/queue-lag", a.handleQueueLag).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/analytics/queue-parked-replicas", a.handleParked).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/analytics/retention", a.handleRetention).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/analytics/system-metrics", a.handleSystemMetrics).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/analytics/worker-metrics", a.handleWorkerMetrics).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/analytics/postgres-stats", a.handlePostgresStats).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/status/analytics", a.handleStatusAnalytics).Methods(http.MethodGet)
}

// analyticsQuery reads the history routes' parameters: from, to, interval, queue,
// namespace, task, hostname, workerId (the broker's id), groupBy, perQueue and limit.
// Each route reads the ones it documents; the others are checked and left unused.
func analyticsQuery(q url.Values) (admin.AnalyticsQuery, error) {
	aq := admin.AnalyticsQuery{Interval: q.Get("interval"), Queue: q.Get("queue"), Namespace: q.Get("namespace"),
		Task: q.Get("task"), Hostname: q.Get("hostname"), Broker: q.Get("workerId"), GroupBy: q.Get("groupBy")}
	var err error
	if aq.From, err = statusTimeParam(q, "from"); err != nil {
		return aq, err
	}
	if aq.To, err = statusTimeParam(q, "to"); err != nil {
		return aq, err
	}
	if aq.Limit, err = groupIntParam(q, "limit"); err != nil {
		return aq, err
	}
	switch v := q.Get("perQueue"); v {
	case "", "false", "0", "no":
	case "true", "1", "yes":
		aq.PerQueue = true
	default:
		return aq, badRequestf("perQueue must be true, 1, yes, false, 0 or no, got %q", v)
	}
	return aq, nil
}

// anaRead answers the route's query: read's answer, or the error of the parameters or
// of the read.
func anaRead[T any](a *api, w http.ResponseWriter, r *http.Request, read func(admin.AnalyticsQuery) (T, error)) (T, bool) {
	q, err := analyticsQuery(r.URL.Query())
	var out T
	if err == nil {
		out, err = read(q)
	}
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return out, false
	}
	return out, true
}

// anaRange is an answer's timeRange: the range read, milliseconds.
func anaRange(w admin.Window) statusTimeRange {
	return statusTimeRange{From: resTime(w.From), To: resTime(w.To)}
}

// anaRound rounds x to digits decimals (Queen's rounding of MB and pool figures).
func anaRound(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

// anaQueueCounts are a queue's (or the selection's) counters with their rates.
type anaQueueCounts struct {
	QueueName         string  `json:"queueName"` // "" when summed over several queues
	PushRequests      int64   `json:"pushRequests"`
	PushMessages      int64   `json:"pushMessages"`
	PopRequests       int64   `json:"popRequests"`
	PopMessages       int64   `json:"popMessages"`
	PopEmpty          int64   `json:"popEmpty"`
	AckRequests       int64   `json:"ackRequests"`
	AckSuccess        int64   `json:"ackSuccess"`
	AckFailed         int64   `json:"ackFailed"`
	DLQCount          int64   `json:"dlqCount"`
	Transactions      int64   `json:"transactions"`
	PartitionsCreated int64   `json:"partitionsCreated"`
	PartitionsDeleted int64   `json:"partitionsDeleted"`
	AvgLagMs          float64 `json:"avgLagMs"`
	MaxLagMs          int64   `json:"maxLagMs"`
	LagCount          int64   `json:"lagCount"`
	PushPerSecond     float64 `json:"pushPerSecond"`
	PopPerSecond      float64 `json:"popPerSecond"`
	AckPerSecond      float64 `json:"ackPerSecond"`
	EmptyPerSecond    float64 `json:"emptyPerSecond"`
	ParkedCount       int64   `json:"parkedCount"` // the most long polls parked at once
}

func anaCounts(p admin.QueuePoint) anaQueueCounts {
	return anaQueueCounts{QueueName: p.Queue, PushRequests: p.PushRequests, PushMessages: p.PushMessages,
		PopRequests: p.PopRequests, PopMessages: p.PopMessages, PopEmpty: p.PopEmpty, AckRequests: p.AckRequests,
		AckSuccess: p.AckSuccess, AckFailed: p.AckFailed, DLQCount: p.DLQMoves, Transactions: p.Transactions,
		PartitionsCreated: p.PartitionsCreated, PartitionsDeleted: p.PartitionsDeleted, AvgLagMs: p.AvgLagMs,
		MaxLagMs: p.LagMaxMs, LagCount: p.LagCount, PushPerSecond: p.PushPerSecond, PopPerSecond: p.PopPerSecond,
		AckPerSecond: p.AckPerSecond, EmptyPerSecond: p.EmptyPerSecond, ParkedCount: p.ParkedMax}
}

type anaQueueOpsPoint struct {
	Bucket string `json:"bucket"`
	anaQueueCounts
}

type anaQueueTotals struct {
	anaQueueCounts
	PartitionCount int64 `json:"partitionCount"` // the queue's partitions now
}

type anaQueueOpsResponse struct {
	TimeRange     statusTimeRange    `json:"timeRange"`
	BucketMinutes int                `json:"bucketMinutes"`
	PointCount    int                `json:"pointCount"`
	Series        []anaQueueOpsPoint `json:"series"` // oldest first
	Queues        []anaQueueTotals   `json:"queues"` // most active first
}

// handleQueueOps is GET /api/v1/analytics/queue-ops (docs/api.md §5.11a).
func (a *api) handleQueueOps(w http.ResponseWriter, r *http.Request) {
	ops, ok := anaRead(a, w, r, func(q admin.AnalyticsQuery) (admin.QueueOps, error) {
		return a.Analytics.QueueOps(r.Context(), a.opts.Tenant, q)
	})
	if !ok {
		return
	}
	out := anaQueueOpsResponse{TimeRange: anaRange(ops.Window), BucketMinutes: ops.Window.BucketMinutes(),
		PointCount: len(ops.Series), Series: make([]anaQueueOpsPoint, len(ops.Series)), Queues: make([]anaQueueTotals, len(ops.Queues))}
	for i, p := range ops.Series {
		out.Series[i] = anaQueueOpsPoint{Bucket: resTime(p.Bucket), anaQueueCounts: anaCounts(p)}
	}
	for i, p := range ops.Queues {
		out.Queues[i] = anaQueueTotals{anaQueueCounts: anaCounts(p), PartitionCount: p.Partitions}
	}
	writeJSON(w, http.StatusOK, out)
}

type anaLagPoint struct {
	QueueName     string  `json:"queueName"`
	PopCount      int64   `json:"popCount"` // messages popped
	AvgLagMs      float64 `json:"avgLagMs"`
	MaxLagMs      int64   `json:"maxLagMs"`
	LagCount      int64   `json:"lagCount"`
	BucketTime    string  `json:"bucketTime"`
	BucketMinutes int     `json:"bucketMinutes"`
}

// handleQueueLag is GET /api/v1/analytics/queue-lag (docs/api.md §5.11a): a bare array,
// newest bucket first, then by queue name.
func (a *api) handleQueueLag(w http.ResponseWriter, r *http.Request) {
	lag, ok := anaRead(a, w, r, func(q admin.AnalyticsQuery) (admin.QueueLag, error) {
		return a.Analytics.QueueLag(r.Context(), a.opts.Tenant, q)
	})
	if !ok {
		return
	}
	out := make([]anaLagPoint, 0, len(lag.Points))
	for _, p := range lag.Points {
		out = append(out, anaLagPoint{QueueName: p.Queue, PopCount: p.PopMessages, AvgLagMs: p.AvgLagMs,
			MaxLagMs: p.LagMaxMs, LagCount: p.LagCount, BucketTime: resTime(p.Bucket),
			BucketMinutes: lag.Window.BucketMinutes()})
	}
	// Newest first: the times have one format, so they sort as text.
	slices.SortStableFunc(out, func(x, y anaLagPoint) int { return cmp.Compare(y.BucketTime, x.BucketTime) })
	writeJSON(w, http.StatusOK, out)
}

type anaParkedPoint struct {
	Bucket      string `json:"bucket"`
	QueueName   string `json:"queueName"`
	Hostname    string `json:"hostname"`
	WorkerID    string `json:"workerId"`    // the broker's id (QUEEN_SERVER_ID)
	ParkedCount int64  `json:"parkedCount"` // the most long polls parked at once
}

type anaReplica struct {
	Hostname string `json:"hostname"`
	WorkerID string `json:"workerId"`
}

type anaParkedResponse struct {
	TimeRange     statusTimeRange  `json:"timeRange"`
	BucketMinutes int              `json:"bucketMinutes"`
	Series        []anaParkedPoint `json:"series"`
	Replicas      []anaReplica     `json:"replicas"`
}

// handleParked is GET /api/v1/analytics/queue-parked-replicas (docs/api.md §5.11a).
func (a *api) handleParked(w http.ResponseWriter, r *http.Request) {
	rep, ok := anaRead(a, w, r, func(q admin.AnalyticsQuery) (admin.ParkedReport, error) {
		return a.Analytics.Parked(r.Context(), a.opts.Tenant, q)
	})
	if !ok {
		return
	}
	out := anaParkedResponse{TimeRange: anaRange(rep.Window), BucketMinutes: rep.Window.BucketMinutes(),
		Series: make([]anaParkedPoint, len(rep.Series)), Replicas: make([]anaReplica, len(rep.Replicas))}
	for i, p := range rep.Series {
		out.Series[i] = anaParkedPoint{Bucket: resTime(p.Bucket), QueueName: p.Queue, Hostname: p.Hostname,
			WorkerID: p.Broker, ParkedCount: p.Parked}
	}
	for i, rp := range rep.Replicas {
		out.Replicas[i] = anaReplica{Hostname: rp.Hostname, WorkerID: rp.Broker}
	}
	writeJSON(w, http.StatusOK, out)
}

type anaRetained struct {
	RetentionMsgs          int64 `json:"retentionMsgs"`
	CompletedRetentionMsgs int64 `json:"completedRetentionMsgs"`
	EvictionMsgs           int64 `json:"evictionMsgs"`
	TotalMsgs              int64 `json:"totalMsgs"`    // the three above
	RowsRemoved            int64 `json:"rowsRemoved"`  // by every job (hash rows, dead letters, traces... too)
	BytesRemoved           int64 `json:"bytesRemoved"` // by every job
	EventCount             int64 `json:"eventCount"`   // runs recorded
}

func anaRetainedOf(p admin.RetentionPoint) anaRetained {
	return anaRetained{RetentionMsgs: p.Retention, CompletedRetentionMsgs: p.Completed, EvictionMsgs: p.Eviction,
		TotalMsgs: p.Total, RowsRemoved: p.Rows, BytesRemoved: p.Bytes, EventCount: p.Events}
}

type anaRetentionPoint struct {
	Bucket string `json:"bucket"`
	anaRetained
}

type anaRetentionRow struct {
	Key    string      `json:"key"`
	Totals anaRetained `json:"totals"`
}

type anaRetentionResponse struct {
	TimeRange     statusTimeRange     `json:"timeRange"`
	BucketMinutes int                 `json:"bucketMinutes"`
	Series        []anaRetentionPoint `json:"series"`
	Totals        anaRetained         `json:"totals"`
	GroupBy       string              `json:"groupBy,omitempty"`
	Rows          []anaRetentionRow   `json:"rows,omitempty"` // with groupBy
}

// handleRetention is GET /api/v1/analytics/retention (docs/api.md §5.11a).
func (a *api) handleRetention(w http.ResponseWriter, r *http.Request) {
	rep, ok := anaRead(a, w, r, func(q admin.AnalyticsQuery) (admin.RetentionReport, error) {
		return a.Analytics.Retention(r.Context(), a.opts.Tenant, q)
	})
	if !ok {
		return
	}
	out := anaRetentionResponse{TimeRange: anaRange(rep.Window), BucketMinutes: rep.Window.BucketMinutes(),
		Series: make([]anaRetentionPoint, len(rep.Series)), Totals: anaRetainedOf(rep.Totals), GroupBy: rep.GroupBy}
	for i, p := range rep.Series {
		out.Series[i] = anaRetentionPoint{Bucket: resTime(p.Bucket), anaRetained: anaRetainedOf(p)}
	}
	if rep.Groups != nil {
		out.Rows = make([]anaRetentionRow, len(rep.Groups))
		for i, g := range rep.Groups {
			out.Rows[i] = anaRetentionRow{Key: g.Key, Totals: anaRetainedOf(g)}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// anaPoint is one point of a throughput series (GET /api/v1/status's throughput, status/
// analytics' dataPoints): the messages of the selection and the brokers' process
// figures. processed counts acknowledgements (success and failed).
type anaPoint struct {
	Timestamp           string  `json:"timestamp,omitempty"` // none in totals
	Ingested            int64   `json:"ingested"`
	Processed           int64   `json:"processed"`
	PopMessages         int64   `json:"popMessages"`
	PopEmpty            int64   `json:"popEmpty"`
	IngestedPerSecond   float64 `json:"ingestedPerSecond"`
	ProcessedPerSecond  float64 `json:"processedPerSecond"`
	PopPerSecond        float64 `json:"popPerSecond"`
	AvgLagMs            float64 `json:"avgLagMs"`
	MaxLagMs            int64   `json:"maxLagMs"`
	DBErrors            int64   `json:"dbErrors"`
	AckFailed           int64   `json:"ackFailed"`
	DLQCount            int64   `json:"dlqCount"`
	Transactions        int64   `json:"transactions"`
	QueenCPUUserPct     float64 `json:"queenCpuUserPct"`
	QueenCPUSysPct      float64 `json:"queenCpuSysPct"`
	QueenRSSMB          float64 `json:"queenRssMb"`
	DBPoolActive        float64 `json:"dbPoolActive"`
	DBPoolIdle          float64 `json:"dbPoolIdle"`
	DBPoolSize          float64 `json:"dbPoolSize"`
	Requests            int64   `json:"requests"`
	AvgRequestLatencyMs float64 `json:"avgRequestLatencyMs"`
	MaxRequestLatencyMs float64 `json:"maxRequestLatencyMs"`
}

func anaPointOf(p admin.ActivityPoint, at time.Time) anaPoint {
	out := anaPoint{Ingested: p.PushMessages, Processed: p.AckSuccess + p.AckFailed,
		PopMessages: p.PopMessages, PopEmpty: p.PopEmpty, IngestedPerSecond: p.PushPerSecond,
		ProcessedPerSecond: p.AckPerSecond, PopPerSecond: p.PopPerSecond, AvgLagMs: p.AvgLagMs, MaxLagMs: p.LagMaxMs,
		DBErrors: p.DBErrors, AckFailed: p.AckFailed, DLQCount: p.DLQMoves, Transactions: p.Transactions,
		QueenCPUUserPct: p.CPUUserPct, QueenCPUSysPct: p.CPUSysPct, QueenRSSMB: anaRound(p.RSSBytes/(1<<20), 1),
		DBPoolActive: anaRound(p.PoolActive, 1), DBPoolIdle: anaRound(p.PoolIdle, 1), DBPoolSize: anaRound(p.PoolSize, 1),
		Requests: p.Requests, AvgRequestLatencyMs: p.AvgLatencyMs, MaxRequestLatencyMs: p.MaxLatencyMs}
	if !at.IsZero() {
		out.Timestamp = resTime(at)
	}
	return out
}

// anaPoints are a series' points, newest first (Queen's order for these series).
func anaPoints(series []admin.ActivityPoint) []anaPoint {
	out := make([]anaPoint, len(series))
	for i, p := range series {
		out[len(series)-1-i] = anaPointOf(p, p.Bucket)
	}
	return out
}

type anaStatusAnalytics struct {
	TimeRange     statusTimeRange `json:"timeRange"`
	BucketMinutes int             `json:"bucketMinutes"`
	PointCount    int             `json:"pointCount"`
	// ByQueues: the counters are the selected queues' (a queue, namespace or task was
	// given), not every queue's.
	ByQueues   bool       `json:"byQueues"`
	DataPoints []anaPoint `json:"dataPoints"` // newest first
	Totals     anaPoint   `json:"totals"`     // over the range, no timestamp
}

// handleStatusAnalytics is GET /api/v1/status/analytics (docs/api.md §5.11a).
func (a *api) handleStatusAnalytics(w http.ResponseWriter, r *http.Request) {
	t, ok := anaRead(a, w, r, func(q admin.AnalyticsQuery) (admin.Throughput, error) {
		return a.Analytics.Throughput(r.Context(), a.opts.Tenant, q)
	})
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, anaStatusAnalytics{TimeRange: anaRange(t.Window), BucketMinutes: t.Window.BucketMinutes(),
		PointCount: len(t.Series), ByQueues: t.ByQueues, DataPoints: anaPoints(t.Series),
		Totals: anaPointOf(t.Totals, time.Time{})})
}

// anaErrorText is a dead letters' error text as Queen reports it ("unknown" for none).
func anaErrorText(e ports.DeadLetterError) string {
	if e.Error == "" {
		return "unknown"
	}
	return e.Error
}
