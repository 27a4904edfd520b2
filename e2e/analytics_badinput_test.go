package e2e

import (
	"testing"
)

// TestAnalyticsBadInput: every history route answers a parameter it cannot read with a
// 400 whose error names the parameter (docs/api.md §5.11a): a time that is not RFC 3339,
// a range backwards or longer than the history keeps, an interval off the ladder, a
// limit below 1, a groupBy or perQueue it does not know, a NUL byte in a name.
func TestAnalyticsBadInput(t *testing.T) {
	t.Parallel()
	b := startBroker(t, anaEnv("ana-bad"))
	ranged := []string{"/api/v1/analytics/queue-ops", "/api/v1/analytics/queue-lag",
		"/api/v1/analytics/queue-parked-replicas", "/api/v1/analytics/retention", "/api/v1/analytics/system-metrics",
		"/api/v1/analytics/worker-metrics", "/api/v1/status/analytics"}
	withStatus := append([]string{"/api/v1/status"}, ranged...)
	perQueue := []string{"/api/v1/analytics/queue-ops", "/api/v1/analytics/queue-lag", "/api/v1/analytics/queue-parked-replicas"}
	tests := []struct {
		name, query, param string
		routes             []string
	}{
		{"from not a time", "from=yesterday", "from", withStatus},
		{"to not a date", "to=2026-13-01T00:00:00Z", "to", withStatus},
		{"to without a zone", "to=2026-05-01T10:00:00", "to", withStatus},
		{"from after to", "from=2026-05-02T00:00:00Z&to=2026-05-01T00:00:00Z", "from", withStatus},
		{"from equal to to", "from=2026-05-01T00:00:00Z&to=2026-05-01T00:00:00Z", "from", withStatus},
		{"a range past the history", "from=2025-01-01T00:00:00Z&to=2026-05-01T00:00:00Z", "from", withStatus},
		{"interval off the ladder", "interval=7m", "interval", ranged},
		{"interval not a duration", "interval=fortnight", "interval", ranged},
		{"interval negative", "interval=-60", "interval", ranged},
		{"limit 0", "limit=0", "limit", perQueue},
		{"limit not a number", "limit=many", "limit", perQueue},
		{"perQueue not a boolean", "perQueue=maybe", "perQueue", perQueue[:1]},
		{"groupBy unknown", "groupBy=color", "groupBy", []string{"/api/v1/analytics/retention"}},
		{"queue with a NUL byte", "queue=a%00b", "queue", append([]string{"/api/v1/status"}, ranged[:4]...)},
		{"namespace with a NUL byte", "namespace=a%00b", "namespace", []string{"/api/v1/status",
			"/api/v1/analytics/queue-ops", "/api/v1/status/analytics"}},
		{"task with a NUL byte", "task=a%00b", "task", []string{"/api/v1/status", "/api/v1/analytics/queue-ops",
			"/api/v1/status/analytics"}},
		{"workerId with a NUL byte", "workerId=a%00b", "workerId", ranged[4:6]},
		{"hostname with a NUL byte", "hostname=a%00b", "hostname", ranged[4:6]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, route := range tt.routes {
				b.resBadRequest(t, route+"?"+tt.query, tt.param)
			}
		})
	}
}
