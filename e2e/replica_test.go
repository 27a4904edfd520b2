package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
)

// TestReadsFromAReplica: a broker whose QUEEN_PG_READ_URL names a streaming standby (as a
// multi-host URL preferring it, the primary second) answers the admin listings, status
// and analytics from it once it replays the broker's commits, exports
// queen_pg_replica_lag_seconds, and keeps answering them when the standby goes away: the
// URL's next host is the primary itself, which lags 0.
func TestReadsFromAReplica(t *testing.T) {
	t.Parallel()
	primary := pgtest.NewCluster(t) // a standby copies the whole cluster: a small one of the test's own
	standby := pgtest.NewStandby(t, primary)
	b := startBrokerOn(t, primary, map[string]string{
		"DB_POOL_SIZE":          "8", // the test's own cluster takes 20 connections
		"QUEEN_PG_READ_URL":     preferStandby(t, standby.URL, primary),
		"QUEEN_READ_MAX_LAG_MS": "60000",
	})
	b.pushN(t, "replica.orders", "p1", "r", 3)

	listed := func() bool {
		code, raw := b.get(t, "/api/v1/resources/queues")
		var out struct {
			Queues []struct {
				Name string `json:"name"`
			} `json:"queues"`
		}
		if code != http.StatusOK || json.Unmarshal(raw, &out) != nil {
			t.Fatalf("GET /api/v1/resources/queues: %d %s", code, raw)
		}
		return slices.ContainsFunc(out.Queues, func(q struct {
			Name string `json:"name"`
		}) bool {
			return q.Name == "replica.orders"
		})
	}
	eventually(t, 30*time.Second, "the queue listed from the standby", listed)
	// The listing may have come from the primary: the reads wait there until the lag's
	// first measurement (every second) finds the standby.
	eventually(t, 30*time.Second, "queen_pg_replica_lag_seconds exported", func() bool {
		code, raw := b.get(t, "/metrics/prometheus")
		return code == http.StatusOK && strings.Contains(string(raw), "\nqueen_pg_replica_lag_seconds ")
	})
	if lag := b.metric(t, "queen_pg_replica_lag_seconds"); lag < 0 || lag > 60 {
		t.Fatalf("queen_pg_replica_lag_seconds %v", lag)
	}
	for _, path := range []string{"/api/v1/resources/queues/replica.orders", "/api/v1/status",
		"/api/v1/resources/overview", "/api/v1/messages?queue=replica.orders", "/api/v1/consumer-groups",
		"/api/v1/analytics/queue-ops", "/api/v1/dlq"} {
		if code, raw := b.get(t, path); code != http.StatusOK {
			t.Errorf("GET %s from the standby: %d %s", path, code, raw)
		}
	}

	standby.Stop(t)
	if !listed() {
		t.Fatal("the queue is missing from the listing once the standby went away")
	}
	eventually(t, 30*time.Second, "queen_pg_replica_lag_seconds 0 from the primary", func() bool {
		code, raw := b.get(t, "/metrics/prometheus")
		return code == http.StatusOK && strings.Contains(string(raw), "\nqueen_pg_replica_lag_seconds 0\n")
	})
	if !listed() {
		t.Fatal("the queue is missing from the listing answered by the primary")
	}
}

// preferStandby is a multi-host URL naming the standby, then the primary, that takes a
// standby when one answers.
func preferStandby(t *testing.T, standby, primary string) string {
	t.Helper()
	s, err := url.Parse(standby)
	if err != nil {
		t.Fatal(err)
	}
	p, err := url.Parse(primary)
	if err != nil {
		t.Fatal(err)
	}
	s.Host += "," + p.Host
	q := s.Query()
	q.Set("target_session_attrs", "prefer-standby")
	s.RawQuery = q.Encode()
	return s.String()
}
