package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

func TestMaintenanceRoutes(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	get := func(path string) map[string]any {
		t.Helper()
		code, body := b.get(t, path)
		var m map[string]any
		if code != http.StatusOK || json.Unmarshal(body, &m) != nil {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		return m
	}
	m := get("/api/v1/system/maintenance")
	for _, k := range []string{"maintenanceMode", "popMaintenanceMode", "bufferedMessages", "bufferHealthy", "bufferStats"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("GET maintenance without %q: %v", k, m)
		}
	}
	if m["maintenanceMode"] != false || m["popMaintenanceMode"] != false {
		t.Fatalf("flags on at start: %v", m)
	}
	tests := []struct {
		name, path, body string
		code             int
		want             string
	}{
		{"missing enabled", "/api/v1/system/maintenance", `{}`, 400, "enabled (boolean) is required"},
		{"not a boolean", "/api/v1/system/maintenance", `{"enabled":"yes"}`, 400, "enabled (boolean) is required"},
		{"not JSON", "/api/v1/system/maintenance/pop", `{`, 400, "enabled (boolean) is required"},
		{"push on", "/api/v1/system/maintenance", `{"enabled":true}`, 200, "Maintenance mode ENABLED"},
		{"pop on", "/api/v1/system/maintenance/pop", `{"enabled":true}`, 200, `"popMaintenanceMode":true`},
	}
	for _, tt := range tests {
		post := b.post
		if tt.code >= 400 {
			post = b.postBad
		}
		code, body := post(t, tt.path, tt.body)
		if code != tt.code || !strings.Contains(string(body), tt.want) {
			t.Fatalf("%s: %d %s, want %d containing %q", tt.name, code, body, tt.code, tt.want)
		}
	}
	// Push maintenance spools; pop maintenance claims nothing.
	if res := b.push(t, map[string]any{"queue": "paused", "payload": 1}); res[0].Status != "buffered" {
		t.Fatalf("push during maintenance: %q, want buffered", res[0].Status)
	}
	if p := b.pop(t, "/api/v1/pop/queue/paused"); p != nil {
		t.Fatalf("pop during pop maintenance: %+v", p)
	}
	m = get("/api/v1/system/maintenance")
	if m["maintenanceMode"] != true || m["popMaintenanceMode"] != true {
		t.Fatalf("flags after turning them on: %v", m)
	}
	if p := get("/api/v1/system/maintenance/pop"); p["popMaintenanceMode"] != true {
		t.Fatalf("pop maintenance: %v", p)
	}
	// The flags are in the database: another broker on it sees them.
	other := startBrokerOn(t, b.DB, nil)
	code, body := other.get(t, "/api/v1/system/maintenance")
	if code != 200 || !strings.Contains(string(body), `"maintenanceMode":true`) {
		t.Fatalf("second broker: %d %s", code, body)
	}
	if st := get("/api/v1/status/buffers"); st["dbHealthy"] == nil || st["pending"] == nil {
		t.Fatalf("status/buffers: %v", st)
	}
	// Both turned off on the other broker: this broker sees it within a refresh, replays
	// its spool and delivers the message.
	for _, path := range []string{"/api/v1/system/maintenance/pop", "/api/v1/system/maintenance"} {
		if code, body := other.post(t, path, `{"enabled":false}`); code != 200 {
			t.Fatalf("%s off: %d %s", path, code, body)
		}
	}
	eventually(t, 10*time.Second, "the message to be delivered once maintenance ended", func() bool {
		return b.pop(t, "/api/v1/pop/queue/paused") != nil
	})
}

// Under push maintenance nothing reaches the database: an item the spool could not take
// is not accepted anywhere, and the request answers 500 with the per-item array
// (docs/api.md §5.1), so clients retry it.
func TestMaintenancePushSpoolFailureAnswers500(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	setMaintenance(t, b, true)
	// The spool directory goes away under the broker: every spool write fails from now on.
	if err := os.RemoveAll(b.Spool); err != nil {
		t.Fatal(err)
	}
	code, body := b.post(t, "/api/v1/push", `{"items":[{"queue":"full","payload":1}]}`)
	var res []pushResult
	if err := json.Unmarshal(body, &res); err != nil || len(res) != 1 {
		t.Fatalf("status %d, body %s: %v", code, body, err)
	}
	if code != http.StatusInternalServerError || res[0].Status != "failed" {
		t.Fatalf("status %d, item %+v; want 500 with the item failed", code, res[0])
	}
	// With its directory gone the spool may fail to close: that is the point here.
	if err := b.stop(); err != nil {
		t.Logf("stop without a spool directory: %v", err)
	}
}
