package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestRequireSyncReplicationSpoolsWithoutAStandby: the test cluster has no standby, so a
// broker told to answer queued only with a synchronous standby attached spools every
// push (buffered), replays nothing, says why on GET /ready (still ready: the spool takes
// them) and exports queen_pg_sync_replication 0; a broker not told so commits as usual.
func TestRequireSyncReplicationSpoolsWithoutAStandby(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		require string
		status  string
		pushes  string // GET /ready's "pushes" ("" = absent)
	}{
		{"required: spooled", "true", "buffered", "spooled: QUEEN_REQUIRE_SYNC_REPLICATION: pushes go to the spool: no standby"},
		{"not required: queued", "false", "queued", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, map[string]string{"QUEEN_REQUIRE_SYNC_REPLICATION": tt.require})
			if res := b.pushN(t, "repl.q", "p1", "r", 3); res[0].Status != tt.status || res[2].Status != tt.status {
				t.Fatalf("pushes answered %+v, want %s", res, tt.status)
			}
			code, raw := b.get(t, "/ready")
			var ready map[string]string
			if err := json.Unmarshal(raw, &ready); err != nil || code != http.StatusOK {
				t.Fatalf("GET /ready: %d %s (%v)", code, raw, err)
			}
			if got := ready["pushes"]; !strings.HasPrefix(got, tt.pushes) || (tt.pushes == "") != (got == "") {
				t.Fatalf("GET /ready pushes %q, want %q...", got, tt.pushes)
			}
			if v := b.metric(t, "queen_pg_sync_replication"); v != 0 {
				t.Fatalf("queen_pg_sync_replication %v without a standby, want 0", v)
			}
			if tt.status != "buffered" {
				return
			}
			// The replay waits too: the spool keeps the three records, the database has none.
			if p := b.pop(t, "/api/v1/pop/queue/repl.q?wait=false&batch=10"); p != nil && len(p.Messages) > 0 {
				t.Fatalf("popped %d messages while pushes are held", len(p.Messages))
			}
			if pending, _, _ := b.bufferStatus(t); pending != 3 {
				t.Fatalf("%d records spooled, want the 3 pushed", pending)
			}
		})
	}
}
