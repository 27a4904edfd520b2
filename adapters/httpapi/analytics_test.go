package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"

	"github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/ports"
)

// anaReader is a ports.MetricsReader with one minute of history for every read.
type anaReader struct{ at time.Time }

func (r anaReader) QueueSeries(_ context.Context, _ string, span ports.MetricsSpan, _ ports.ResourceFilter, queues []string) ([]ports.QueueBucket, error) {
	at := r.at.Truncate(span.Bucket) // the reader's buckets are aligned
	if queues == nil {
		return []ports.QueueBucket{{Bucket: at, Counters: ports.Counters{PushRequests: 2, PushMessages: 60, PopRequests: 3, PopMessages: 30}}}, nil
	}
	var out []ports.QueueBucket
	for _, q := range queues {
		out = append(out, ports.QueueBucket{Bucket: at, Queue: q, Counters: ports.Counters{PopMessages: 6, LagCount: 6, LagSumMs: 60, LagMaxMs: 20}})
	}
	return out, nil
}

func (r anaReader) QueueTotals(context.Context, string, ports.MetricsSpan, ports.ResourceFilter) ([]ports.QueueTotal, error) {
	return []ports.QueueTotal{{Queue: "q1", Counters: ports.Counters{PopMessages: 6}, Partitions: 3}}, nil
}

func (r anaReader) BrokerSeries(_ context.Context, span ports.MetricsSpan, _ ports.BrokerFilter) ([]ports.BrokerBucket, error) {
	return []ports.BrokerBucket{{Bucket: r.at.Truncate(span.Bucket), Broker: "b1", Hostname: "h1", Port: 6632, Minutes: 1, LastMinute: r.at,
		Counters:  ports.Counters{PushRequests: 2, PushMessages: 60},
		Figures:   ports.BrokerFigures{CPUUserUs: 6e6, Samples: 1, RSS: ports.Gauge{Sum: 64 << 20, Min: 64 << 20, Max: 64 << 20, Last: 64 << 20}},
		PerMinute: ports.MinuteGauges{CPUUserUs: ports.Gauge{Sum: 6e6, Min: 6e6, Max: 6e6, Last: 6e6}}}}, nil
}

func (r anaReader) ParkedSeries(_ context.Context, span ports.MetricsSpan, _ string) ([]ports.ParkedBucket, error) {
	return []ports.ParkedBucket{{Bucket: r.at.Truncate(span.Bucket), Queue: "q1", Broker: "b1", Hostname: "h1", Parked: 2}}, nil
}

func (r anaReader) Retention(_ context.Context, _ string, span ports.MetricsSpan, _ ports.ResourceFilter, key ports.RetentionKey) ([]ports.RetentionRow, []ports.RetentionRow, error) {
	series := []ports.RetentionRow{{Bucket: r.at.Truncate(span.Bucket), Job: ports.JobRetention, Runs: 1, Rows: 5, Bytes: 50}}
	if key == ports.RetentionNoGroups {
		return series, nil, nil
	}
	return series, []ports.RetentionRow{{Key: "q1", Job: ports.JobRetention, Runs: 1, Rows: 5, Bytes: 50}}, nil
}

func (r anaReader) DeadLetterErrors(context.Context, string, ports.ResourceFilter, int) ([]ports.DeadLetterError, error) {
	return []ports.DeadLetterError{{Error: "timeout", Count: 2}, {Count: 1}}, nil
}

func (r anaReader) Lag(context.Context, string) (ports.LagFigures, error) {
	return ports.LagFigures{Positions: 2, OffsetAvg: 3, OffsetMedian: 3, OffsetMax: 4, TimeAvg: 1.5, TimeMax: 2}, nil
}

func (r anaReader) PostgresStats(context.Context, time.Duration) (ports.PostgresStats, error) {
	return ports.PostgresStats{Database: ports.DatabaseFigures{Name: "queen"},
		Settings: []ports.Setting{{Name: "shared_buffers", Value: "128MB", Bytes: 128 << 20}}}, nil
}

// anaResources is a ports.ResourceStore of one tenant without queues.
type anaResources struct{}

func (anaResources) ListQueues(context.Context, string, ports.ResourceFilter, ports.ResourcePage) ([]ports.QueueResource, int64, error) {
	return nil, 0, nil
}

func (anaResources) QueueDetail(context.Context, string, string, ports.ResourcePage) (ports.QueueResourceDetail, bool, error) {
	return ports.QueueResourceDetail{}, false, nil
}

func (anaResources) QueueDepth(context.Context, string, string, string, ports.ResourcePage) (ports.QueueDepthResult, bool, error) {
	return ports.QueueDepthResult{}, false, nil
}

func (anaResources) CountsBy(context.Context, string, ports.ResourceKey, ports.ResourcePage) ([]ports.KeyCounts, error) {
	return nil, nil
}

func (anaResources) Overview(context.Context, string) (ports.ResourceOverview, error) {
	return ports.ResourceOverview{}, nil
}

func (anaResources) Status(context.Context, string, ports.ResourceFilter) (ports.ResourceStatus, error) {
	return ports.ResourceStatus{DeadLetters: ports.DeadLetterSummary{Current: 3, Partitions: 1}}, nil
}

func (anaResources) StorageTotals(context.Context) (ports.StorageTotals, error) {
	return ports.StorageTotals{}, nil
}

// anaAPI is the handler with the analytics over anaReader (one minute of history at
// 10:29, the clock at 10:30:20) and the resources over a store without queues.
func anaAPI(t *testing.T) http.Handler {
	t.Helper()
	now := time.Date(2026, 3, 2, 10, 30, 20, 0, time.UTC)
	clock := func() time.Time { return now }
	return New(Services{DB: pinger{},
		Resources: admin.NewResources(anaResources{}, admin.ResourcesOptions{Now: clock}),
		Analytics: admin.NewAnalytics(anaReader{at: now.Truncate(time.Minute).Add(-time.Minute)}, admin.AnalyticsOptions{Now: clock}),
	}, Options{})
}

func anaGet(t *testing.T, h http.Handler, target string) (int, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec.Code, rec.Body.Bytes()
}

// TestAnalyticsBadParameters: every history route answers a parameter it cannot read
// 400, naming the parameter.
func TestAnalyticsBadParameters(t *testing.T) {
	t.Parallel()
	h := anaAPI(t)
	routes := []string{"/api/v1/analytics/queue-ops", "/api/v1/analytics/queue-lag", "/api/v1/analytics/queue-parked-replicas",
		"/api/v1/analytics/retention", "/api/v1/analytics/system-metrics", "/api/v1/analytics/worker-metrics",
		"/api/v1/status/analytics", "/api/v1/status"}
	// limit and perQueue are read by the per-queue series only.
	perQueue := map[string]bool{"/api/v1/analytics/queue-ops": true, "/api/v1/analytics/queue-lag": true,
		"/api/v1/analytics/queue-parked-replicas": true}
	tests := []struct {
		name, query, param string
	}{
		{"from not a time", "from=yesterday", "from"},
		{"to not a time", "to=2026-13-01T00:00:00Z", "to"},
		{"from after to", "from=2026-03-02T11:00:00Z&to=2026-03-02T10:00:00Z", "from"},
		{"from equal to to", "from=2026-03-02T10:00:00Z&to=2026-03-02T10:00:00Z", "from"},
		{"more than 90 days", "from=2025-01-01T00:00:00Z&to=2026-03-02T10:00:00Z", "from"},
		{"an interval off the ladder", "interval=7", "interval"},
		{"an interval that is no interval", "interval=fortnightly", "interval"},
		{"a limit that is no number", "limit=ten", "limit"},
		{"a limit below 1", "limit=0", "limit"},
		{"perQueue neither true nor false", "perQueue=maybe", "perQueue"},
	}
	for _, route := range routes {
		for _, tt := range tests {
			switch {
			case route == "/api/v1/status" && tt.param != "from" && tt.param != "to":
				continue // the status route reads from, to and the queue filters only
			case !perQueue[route] && tt.query == "limit=0":
				continue // a limit the route does not use need only be a number
			}
			t.Run(route+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				code, body := anaGet(t, h, route+"?"+tt.query)
				if code != http.StatusBadRequest || !strings.Contains(string(body), tt.param) {
					t.Fatalf("%d %s, want 400 naming %s", code, body, tt.param)
				}
			})
		}
	}
	code, body := anaGet(t, h, "/api/v1/analytics/retention?groupBy=partition")
	if code != http.StatusBadRequest || !strings.Contains(string(body), "groupBy") {
		t.Fatalf("groupBy partition: %d %s", code, body)
	}
}

// TestAnalyticsAnswers checks the shapes the dashboards read (docs/api.md §5.11a).
func TestAnalyticsAnswers(t *testing.T) {
	t.Parallel()
	h := anaAPI(t)
	get := func(target string, v any) {
		t.Helper()
		code, body := anaGet(t, h, target)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", target, code, body)
		}
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("%s: %v in %s", target, err, body)
		}
	}

	var lag []map[string]any
	get("/api/v1/analytics/queue-lag", &lag)
	if len(lag) != 61 || lag[0]["bucketTime"] != "2026-03-02T10:30:00.000Z" || lag[1]["avgLagMs"] != 10.0 || lag[1]["queueName"] != "q1" {
		t.Fatalf("queue-lag: a bare array, newest first, zero-filled: %d points, %v %v", len(lag), lag[0], lag[1])
	}

	var ops struct {
		BucketMinutes int              `json:"bucketMinutes"`
		Series        []map[string]any `json:"series"`
		Queues        []map[string]any `json:"queues"`
	}
	get("/api/v1/analytics/queue-ops?interval=5", &ops)
	if ops.BucketMinutes != 5 || len(ops.Series) != 13 || ops.Series[11]["pushPerSecond"] != 0.2 || ops.Queues[0]["partitionCount"] != 3.0 {
		t.Fatalf("queue-ops: %d minutes, %d points, %v, %v", ops.BucketMinutes, len(ops.Series), ops.Series[11], ops.Queues)
	}

	var sys struct {
		Replicas []struct {
			WorkerID   string `json:"workerId"`
			TimeSeries []struct {
				Metrics struct {
					CPU struct {
						User map[string]float64 `json:"user_us"`
					} `json:"cpu"`
				} `json:"metrics"`
			} `json:"timeSeries"`
		} `json:"replicas"`
	}
	get("/api/v1/analytics/system-metrics", &sys)
	if len(sys.Replicas) != 1 || sys.Replicas[0].WorkerID != "b1" || sys.Replicas[0].TimeSeries[59].Metrics.CPU.User["avg"] != 1000 {
		t.Fatalf("system-metrics: %+v", sys)
	}

	var status map[string]any
	get("/api/v1/status", &status)
	dlq := status["deadLetterQueue"].(map[string]any)
	top := dlq["topErrors"].([]any)
	if dlq["totalMessages"] != 3.0 || dlq["currentMessages"] != 3.0 || len(top) != 2 || top[1].(map[string]any)["error"] != "unknown" {
		t.Fatalf("status deadLetterQueue: %v", dlq)
	}
	tp := status["throughput"].([]any)
	msgs := status["messages"].(map[string]any)
	if len(tp) != 61 || status["pointCount"] != 61.0 || tp[1].(map[string]any)["ingestedPerSecond"] != 1.0 ||
		msgs["batchEfficiency"].(map[string]any)["push"] != 30.0 || len(status["workers"].([]any)) != 1 {
		t.Fatalf("status history: %d points, %v, messages %v", len(tp), tp[1], msgs)
	}

	var overview map[string]any
	get("/api/v1/resources/overview", &overview)
	if overview["lag"].(map[string]any)["offset"].(map[string]any)["max"] != 4.0 || overview["throughput"] == nil {
		t.Fatalf("overview: %v", overview)
	}

	var pg map[string]any
	get("/api/v1/analytics/postgres-stats", &pg)
	if _, ok := pg["bufferUsage"]; ok || pg["bufferConfig"].(map[string]any)["sharedBuffersSize"] != "128MB" {
		t.Fatalf("postgres-stats: bufferUsage only with pg_buffercache: %v", pg)
	}

	var ret map[string]any
	get("/api/v1/analytics/retention?groupBy=queue", &ret)
	if rows := ret["rows"].([]any); len(rows) != 1 || ret["totals"].(map[string]any)["retentionMsgs"] != 5.0 {
		t.Fatalf("retention: %v", ret)
	}
}

func TestAnaSize(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		b    int64
		want string
	}{{0, "0 bytes"}, {10239, "10239 bytes"}, {10240, "10 kB"}, {8 << 20, "8192 kB"}, {10 << 20, "10 MB"}, {3 << 30, "3072 MB"}, {20 << 40, "20 TB"}} {
		if got := anaSize(tt.b); got != tt.want {
			t.Errorf("anaSize(%d) = %q, want %q", tt.b, got, tt.want)
		}
	}
}

// TestAnalyticsAnswersMatchOpenAPI: every history answer, and the status and overview
// answers with their history parts, validate against docs/openapi.yaml (the e2e harness
// checks every answer of a running broker the same way).
func TestAnalyticsAnswersMatchOpenAPI(t *testing.T) {
	t.Parallel()
	_, m := openAPIModel(t)
	v := validator.NewValidatorFromV3Model(m, config.WithoutSecurityValidation(), config.WithFormatAssertions())
	h := anaAPI(t)
	for _, target := range []string{
		"/api/v1/analytics/queue-ops", "/api/v1/analytics/queue-ops?perQueue=true&limit=5&interval=15m",
		"/api/v1/analytics/queue-lag?queue=q1", "/api/v1/analytics/queue-lag",
		"/api/v1/analytics/queue-parked-replicas", "/api/v1/analytics/retention", "/api/v1/analytics/retention?groupBy=task",
		"/api/v1/analytics/system-metrics?hostname=h1", "/api/v1/analytics/worker-metrics?workerId=b1",
		"/api/v1/analytics/postgres-stats", "/api/v1/status/analytics?namespace=ns", "/api/v1/status/analytics",
		"/api/v1/status", "/api/v1/status?queue=q1", "/api/v1/resources/overview",
		"/api/v1/analytics/queue-ops?interval=7", "/api/v1/analytics/retention?groupBy=partition",
	} {
		t.Run(target, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, target, nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			check := v.ValidateHttpRequestResponse
			if rec.Code == http.StatusBadRequest {
				check = v.ValidateHttpResponse // the request is bad on purpose; its refusal is checked
			}
			if ok, errs := check(req, rec.Result()); !ok {
				for _, e := range errs {
					t.Errorf("%s: %s", e.Message, e.Reason)
					for _, se := range e.SchemaValidationErrors {
						t.Errorf("  at %s: %s", se.FieldPath, se.Reason)
					}
				}
				t.Logf("answer %d: %.600s", rec.Code, rec.Body)
			}
		})
	}
}
