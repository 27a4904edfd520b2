package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/bench/load"
)

// TestPipelineVerified runs the ordered pipeline (two flows, a first stage
// that re-emits, five fan-out groups per flow) at a low rate for about 15 s against a
// broker wired as queen-server, and requires the verifier's PASS: no gap below the
// frontier, no order violation, on every stage. This checks ordering and loss end to end
// on every change. It drives the broker with the load tool's client library and its
// verifier (bench/load, bench/verify), which speak HTTP only: the one exception to the
// import rule of this package.
func TestPipelineVerified(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("15 s end-to-end run")
	}
	runPipeline(t, startBroker(t, nil))
}

// TestPipelineVerifiedOnShards is TestPipelineVerified on a broker of three shards, with
// the pipeline's stages placed on several of them: every hand-over between stages on
// different shards crosses databases, and the verifier must still pass.
func TestPipelineVerifiedOnShards(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("15 s end-to-end run")
	}
	shards := newShardSet(t)
	b := startBrokerOn(t, shards.urls[0], shards.env(nil))
	queues := runPipeline(t, b)
	on := map[int]bool{}
	for _, q := range queues {
		on[shards.shardOf(t, q)] = true
	}
	if len(on) < 2 {
		t.Fatalf("the pipeline's queues %v all landed on one shard", queues)
	}
}

// runPipeline runs the ordered pipeline against b, requires the verifier's PASS, and
// returns the names of the queues it used.
func runPipeline(t *testing.T, b *broker) []string {
	t.Helper()
	out := &testWriter{t: t}
	cfg := load.PipelineConfig{
		Common:   load.Common{URL: b.URL, Duration: 8 * time.Second, Out: out},
		Dir:      t.TempDir(),
		Prefix:   "cm",
		Entities: 20, Rate: 60, Ramp: 2 * time.Second, Fanout: 5,
		WorkMin: 10 * time.Millisecond, WorkMax: 30 * time.Millisecond,
		PopBatch: 100, PopParts: 10, Consumers: 1, Producers: 4, Drain: 3 * time.Second,
		DedupWindow: 300, CompletedRetention: 300, LeaseTime: 60,
	}
	sum, rep, err := load.RunPipeline(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sum.Print(out)
	t.Log("\n" + rep.Table())
	if !rep.Pass || rep.Total.Gaps != 0 || rep.Total.Violations != 0 {
		t.Fatalf("pipeline verdict: %s", rep.VerdictLine())
	}
	if sum.Totals["events"] < 100 || sum.Totals["ota"] == 0 || sum.Totals["otap"] == 0 {
		t.Fatalf("the pipeline barely ran: %v", sum.Totals)
	}
	if len(rep.Stages) != 12 {
		t.Fatalf("%d stages verified, want 12", len(rep.Stages))
	}
	// The pipeline's stage queues (bench/load's pipeline names them after the prefix).
	return []string{cfg.Prefix + "-avail", cfg.Prefix + "-ota-sync", cfg.Prefix + "-prices", cfg.Prefix + "-ota-prices"}
}

// testWriter sends progress lines to the test log (shown with -v or on failure).
type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
