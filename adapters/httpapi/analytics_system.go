package httpapi

import (
	"net/http"

	"github.com/queen-go/queen/core/admin"
)

// The brokers' history (system-metrics, worker-metrics) and postgres-stats (docs/api.md
// §5.11a). Where Queen reports a figure of its own runtime that a Go broker has no
// counterpart for (event-loop lag, thread pools, job queue, backoff), the field is left
// out; docs/api.md lists what stands in its place.

// anaLeaf is a gauge over a bucket: average, least, most, latest.
type anaLeaf struct {
	Avg  float64 `json:"avg"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	Last float64 `json:"last"`
}

func anaLeafOf(l admin.Leaf) anaLeaf {
	return anaLeaf{Avg: l.Avg, Min: l.Min, Max: l.Max, Last: l.Last}
}

type anaCPU struct {
	User   anaLeaf `json:"user_us"`   // hundredths of a percent of one core (1523 = 15.23 %)
	System anaLeaf `json:"system_us"` // the same
}

type anaMemory struct {
	RSS     anaLeaf `json:"rss_bytes"`
	Virtual anaLeaf `json:"virtual_bytes"`
}

type anaDatabase struct {
	PoolSize   anaLeaf `json:"pool_size"`
	PoolIdle   anaLeaf `json:"pool_idle"`
	PoolActive anaLeaf `json:"pool_active"`
}

type anaRuntime struct {
	Goroutines anaLeaf `json:"goroutines"`
}

type anaSpool struct {
	Pending anaLeaf `json:"pending"` // spooled records not yet replayed
}

type anaRequests struct {
	Count        int64   `json:"count"`
	AvgLatencyMs float64 `json:"avgLatencyMs"`
	MaxLatencyMs float64 `json:"maxLatencyMs"`
}

type anaMetrics struct {
	CPU      anaCPU      `json:"cpu"`
	Memory   anaMemory   `json:"memory"`
	Database anaDatabase `json:"database"`
	Runtime  anaRuntime  `json:"runtime"`
	Spool    anaSpool    `json:"spool"`
	Requests anaRequests `json:"requests"`
}

type anaSystemPoint struct {
	Timestamp   string     `json:"timestamp"`
	SampleCount int64      `json:"sampleCount"`
	Minutes     int64      `json:"minutes"` // minute rows of the bucket (0: the broker wrote none)
	Metrics     anaMetrics `json:"metrics"`
}

type anaSystemReplica struct {
	Hostname   string           `json:"hostname"`
	Port       int              `json:"port"`
	WorkerID   string           `json:"workerId"` // the broker's id (QUEEN_SERVER_ID)
	TimeSeries []anaSystemPoint `json:"timeSeries"`
}

type anaSystemResponse struct {
	TimeRange     statusTimeRange    `json:"timeRange"`
	BucketMinutes int                `json:"bucketMinutes"`
	ReplicaCount  int                `json:"replicaCount"`
	PointCount    int                `json:"pointCount"`
	Replicas      []anaSystemReplica `json:"replicas"`
}

// handleSystemMetrics is GET /api/v1/analytics/system-metrics (docs/api.md §5.11a): every
// broker's points, oldest first.
func (a *api) handleSystemMetrics(w http.ResponseWriter, r *http.Request) {
	rep, ok := anaRead(a, w, r, func(q admin.AnalyticsQuery) (admin.SystemReport, error) {
		return a.Analytics.System(r.Context(), q)
	})
	if !ok {
		return
	}
	out := anaSystemResponse{TimeRange: anaRange(rep.Window), BucketMinutes: rep.Window.BucketMinutes(),
		ReplicaCount: len(rep.Replicas), Replicas: make([]anaSystemReplica, len(rep.Replicas))}
	for i, s := range rep.Replicas {
		rp := anaSystemReplica{Hostname: s.Hostname, Port: s.Port, WorkerID: s.Broker, TimeSeries: make([]anaSystemPoint, len(s.Points))}
		for j, p := range s.Points {
			rp.TimeSeries[j] = anaSystemPoint{Timestamp: resTime(p.Bucket), SampleCount: p.Samples, Minutes: p.Minutes,
				Metrics: anaMetrics{CPU: anaCPU{User: anaLeafOf(p.CPUUser), System: anaLeafOf(p.CPUSys)},
					Memory:   anaMemory{RSS: anaLeafOf(p.RSS), Virtual: anaLeafOf(p.Virtual)},
					Database: anaDatabase{PoolSize: anaLeafOf(p.PoolSize), PoolIdle: anaLeafOf(p.PoolIdle), PoolActive: anaLeafOf(p.PoolActive)},
					Runtime:  anaRuntime{Goroutines: anaLeafOf(p.Goroutines)}, Spool: anaSpool{Pending: anaLeafOf(p.SpoolPending)},
					Requests: anaRequests{Count: p.Requests, AvgLatencyMs: p.AvgLatencyMs, MaxLatencyMs: p.MaxLatencyMs}}}
		}
		out.PointCount += len(rp.TimeSeries)
		out.Replicas[i] = rp
	}
	writeJSON(w, http.StatusOK, out)
}

// anaWorkerPoint is one bucket of the brokers' activity: Queen's fields, free slots as
// the pool's idle connections, and request latency where Queen has event-loop lag.
type anaWorkerPoint struct {
	Timestamp           string  `json:"timestamp"`
	PushMessages        int64   `json:"pushMessages"`
	PopMessages         int64   `json:"popMessages"`
	AckMessages         int64   `json:"ackMessages"` // success and failed
	PushRequests        int64   `json:"pushRequests"`
	PopRequests         int64   `json:"popRequests"`
	AckRequests         int64   `json:"ackRequests"`
	PushPerSecond       float64 `json:"pushPerSecond"`
	PopPerSecond        float64 `json:"popPerSecond"`
	AckPerSecond        float64 `json:"ackPerSecond"`
	AvgLagMs            float64 `json:"avgLagMs"`
	MaxLagMs            int64   `json:"maxLagMs"`
	LagCount            int64   `json:"lagCount"`
	DBErrors            int64   `json:"dbErrors"`
	AckSuccess          int64   `json:"ackSuccess"`
	AckFailed           int64   `json:"ackFailed"`
	DLQCount            int64   `json:"dlqCount"`
	AvgFreeSlots        float64 `json:"avgFreeSlots"`  // idle database connections, average
	MinFreeSlots        int64   `json:"minFreeSlots"`  // the fewest idle at a sample
	DBConnections       float64 `json:"dbConnections"` // the pools' size, average
	Requests            int64   `json:"requests"`
	AvgRequestLatencyMs float64 `json:"avgRequestLatencyMs"`
	MaxRequestLatencyMs float64 `json:"maxRequestLatencyMs"`
	MaxGoroutines       int64   `json:"maxGoroutines"`
	MaxSpoolPending     int64   `json:"maxSpoolPending"`
}

func anaWorkerPointOf(p admin.ActivityPoint) anaWorkerPoint {
	return anaWorkerPoint{Timestamp: resTime(p.Bucket), PushMessages: p.PushMessages, PopMessages: p.PopMessages,
		AckMessages: p.AckSuccess + p.AckFailed, PushRequests: p.PushRequests, PopRequests: p.PopRequests,
		AckRequests: p.AckRequests, PushPerSecond: p.PushPerSecond, PopPerSecond: p.PopPerSecond,
		AckPerSecond: p.AckPerSecond, AvgLagMs: p.AvgLagMs, MaxLagMs: p.LagMaxMs, LagCount: p.LagCount,
		DBErrors: p.DBErrors, AckSuccess: p.AckSuccess, AckFailed: p.AckFailed, DLQCount: p.DLQMoves,
		AvgFreeSlots: p.PoolIdle, MinFreeSlots: p.PoolIdleMin, DBConnections: p.PoolSize, Requests: p.Requests,
		AvgRequestLatencyMs: p.AvgLatencyMs, MaxRequestLatencyMs: p.MaxLatencyMs, MaxGoroutines: p.GoroutinesMax,
		MaxSpoolPending: p.SpoolPendingMax}
}

// anaWorker is one broker over the recent minutes.
type anaWorker struct {
	Hostname            string  `json:"hostname"`
	WorkerID            string  `json:"workerId"` // the broker's id (QUEEN_SERVER_ID)
	Port                int     `json:"port"`
	FreeSlots           int64   `json:"freeSlots"`         // the fewest idle database connections
	DBConnections       float64 `json:"dbConnections"`     // its pool's size, average
	MessagesProcessed   int64   `json:"messagesProcessed"` // pushed and acknowledged
	Requests            int64   `json:"requests"`
	AvgRequestLatencyMs float64 `json:"avgRequestLatencyMs"`
	MaxRequestLatencyMs float64 `json:"maxRequestLatencyMs"`
	MaxGoroutines       int64   `json:"maxGoroutines"`
	LastSeen            string  `json:"lastSeen"` // its latest minute row
}

func anaWorkers(ws []admin.WorkerSummary) []anaWorker {
	out := make([]anaWorker, len(ws))
	for i, s := range ws {
		out[i] = anaWorker{Hostname: s.Hostname, WorkerID: s.Broker, Port: s.Port, FreeSlots: s.PoolIdleMin,
			DBConnections: s.PoolSize, MessagesProcessed: s.PushMessages + s.AckSuccess + s.AckFailed,
			Requests: s.Requests, AvgRequestLatencyMs: s.AvgLatencyMs, MaxRequestLatencyMs: s.MaxLatencyMs,
			MaxGoroutines: s.GoroutinesMax, LastSeen: resTime(s.LastSeen)}
	}
	return out
}

type anaWorkerQueue struct {
	QueueName string  `json:"queueName"`
	PopCount  int64   `json:"popCount"` // messages popped
	AvgLagMs  float64 `json:"avgLagMs"`
	MaxLagMs  int64   `json:"maxLagMs"`
}

// anaSummary are the range's totals (Queen's lifetime totals: here, the history the
// range covers).
type anaSummary struct {
	TotalPushMessages int64 `json:"totalPushMessages"`
	TotalPopMessages  int64 `json:"totalPopMessages"`
	TotalAckMessages  int64 `json:"totalAckMessages"`
	TotalPushRequests int64 `json:"totalPushRequests"`
	TotalPopRequests  int64 `json:"totalPopRequests"`
	TotalAckRequests  int64 `json:"totalAckRequests"`
	TotalDBErrors     int64 `json:"totalDbErrors"`
	TotalAckFailed    int64 `json:"totalAckFailed"`
	TotalDLQ          int64 `json:"totalDlq"`
}

type anaWorkerResponse struct {
	TimeRange     statusTimeRange  `json:"timeRange"`
	BucketMinutes int              `json:"bucketMinutes"`
	PointCount    int              `json:"pointCount"`
	TimeSeries    []anaWorkerPoint `json:"timeSeries"` // newest first
	Workers       []anaWorker      `json:"workers"`
	Queues        []anaWorkerQueue `json:"queues"` // the most popped first
	Summary       anaSummary       `json:"summary"`
}

// handleWorkerMetrics is GET /api/v1/analytics/worker-metrics (docs/api.md §5.11a).
func (a *api) handleWorkerMetrics(w http.ResponseWriter, r *http.Request) {
	m, ok := anaRead(a, w, r, func(q admin.AnalyticsQuery) (admin.WorkerMetrics, error) {
		return a.Analytics.Workers(r.Context(), a.opts.Tenant, q)
	})
	if !ok {
		return
	}
	out := anaWorkerResponse{TimeRange: anaRange(m.Window), BucketMinutes: m.Window.BucketMinutes(),
		PointCount: len(m.Series), TimeSeries: make([]anaWorkerPoint, len(m.Series)), Workers: anaWorkers(m.Workers),
		Queues: make([]anaWorkerQueue, len(m.Queues))}
	for i, p := range m.Series {
		out.TimeSeries[len(m.Series)-1-i] = anaWorkerPointOf(p)
	}
	for i, q := range m.Queues {
		out.Queues[i] = anaWorkerQueue{QueueName: q.Queue, PopCount: q.PopMessages, AvgLagMs: q.AvgLagMs, MaxLagMs: q.LagMaxMs}
	}
	s := m.Summary
	out.Summary = anaSummary{TotalPushMessages: s.PushMessages, TotalPopMessages: s.PopMessages,
		TotalAckMessages: s.AckSuccess + s.AckFailed, TotalPushRequests: s.PushRequests, TotalPopRequests: s.PopRequests,
		TotalAckRequests: s.AckRequests, TotalDBErrors: s.DBErrors, TotalAckFailed: s.AckFailed, TotalDLQ: s.DLQMoves}
	writeJSON(w, http.StatusOK, out)
}
