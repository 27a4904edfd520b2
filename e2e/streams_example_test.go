package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStreamsExample runs examples/streams against a broker: every message is processed
// and the sums in the sink add up to the source's amounts.
func TestStreamsExample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs examples/streams")
	}
	t.Parallel()
	runStreamsExample(t, startBroker(t, nil))
}

// TestStreamsExampleOnShards is TestStreamsExample on a broker of three shards: the
// query's source and sink live on one shard (a registration places the sink with its
// source), which need not be the catalogue.
func TestStreamsExampleOnShards(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs examples/streams")
	}
	t.Parallel()
	shards := newShardSet(t)
	runStreamsExample(t, startBrokerOn(t, shards.urls[0], shards.env(nil)))
	if src, sink := shards.shardOf(t, "example.events"), shards.shardOf(t, "example.sums"); src != sink || src == 0 {
		t.Fatalf("source on shard %d, sink on shard %d: want both on one shard other than the catalogue", src, sink)
	}
}

// runStreamsExample runs examples/streams against b: every message is processed and the
// sums in the sink add up to the source's amounts.
func runStreamsExample(t *testing.T, b *broker) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "streams-example")
	if out, err := exec.Command("go", "build", "-o", bin, "../examples/streams").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "-url", b.URL, "-messages", "300").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "processed 300 messages") {
		t.Fatalf("example: %v\n%s", err, out)
	}
	total := 0.0
	for _, raw := range b.sinkPayloads(t, "example.sums", "check") {
		var w struct{ Sum float64 }
		if err := json.Unmarshal([]byte(raw), &w); err != nil {
			t.Fatal(err)
		}
		total += w.Sum
	}
	// Amounts are i % 10 for i in [0, 300): 30 rounds of 0..9.
	if total != 30*45 {
		t.Fatalf("sum of the windows %v, want %d\n%s", total, 30*45, out)
	}
}
