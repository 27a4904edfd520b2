package faults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/bench/load"
	"github.com/queen-go/queen/internal/netproxy"
)

// shardRig is a broker on three shards (QUEEN_SHARDS): shard 0, the catalogue, a
// database on the package's cluster, shards 1 and 2 databases on clusters of their own,
// which the test can crash; the broker reaches each through a proxy the test can cut or
// freeze.
type shardRig struct {
	urls     []string // the shards' databases, directly
	clusters []*cluster
	proxies  []*netproxy.Proxy // the broker's way to each shard
	broker   *brokerProc
	api      *api
}

func startShardRig(t *testing.T, env map[string]string) *shardRig {
	t.Helper()
	r := &shardRig{urls: []string{pg.newDatabase(t)}, clusters: []*cluster{pg}}
	for n := 1; n <= 2; n++ {
		c, err := startCluster(filepath.Join(t.TempDir(), "pg"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := c.stop(); err != nil && !strings.Contains(err.Error(), "not running") {
				t.Logf("stop shard %d's cluster: %v", n, err)
			}
		})
		r.clusters = append(r.clusters, c)
		r.urls = append(r.urls, c.newDatabase(t))
	}
	var proxied []string
	for n, c := range r.clusters {
		p, err := netproxy.Start("127.0.0.1:" + strconv.Itoa(c.port))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		r.proxies = append(r.proxies, p)
		proxied = append(proxied, strings.Replace(r.urls[n], ":"+strconv.Itoa(c.port)+"/", ":"+strconv.Itoa(p.Port())+"/", 1))
	}
	vars := map[string]string{"QUEEN_PG_URL": "", "QUEEN_SHARDS": strings.Join(proxied, " "), "DB_POOL_SIZE": "12"}
	for k, v := range env {
		vars[k] = v
	}
	r.broker = startBroker(t, r.urls[0], vars)
	r.api = newAPI(t, r.broker)
	return r
}

// drop tears down shard n's proxied connections, with the bytes a freeze held (they
// must not reach the database after the broker died), and lets new ones through.
func (r *shardRig) drop(t *testing.T, n int) {
	t.Helper()
	r.proxies[n].Cut()
	r.proxies[n].Thaw()
	if err := r.proxies[n].Restore(); err != nil {
		t.Fatal(err)
	}
}

// queueOn configures queues named prefix-0, prefix-1, ... until one is placed on shard n,
// and returns its name.
func (r *shardRig) queueOn(t *testing.T, n int, prefix string) string {
	t.Helper()
	for i := range 64 {
		q := fmt.Sprintf("%s-%d", prefix, i)
		r.api.configure(q, nil)
		if queryInt(t, r.urls[0], `SELECT shard FROM queen.placements WHERE queue = $1`, q) == int64(n) {
			return q
		}
	}
	t.Fatalf("no queue %s-* placed on shard %d in 64 tries", prefix, n)
	return ""
}

// TestFaultShardStopped: shard 2's PostgreSQL crashes under load on a queue of shard 1
// and one of shard 2. Shard 1's pushes keep answering queued throughout; shard 2's are
// spooled (buffered) and replayed in order once it is back; both loads pass the
// verifier and the invariants on their own shard.
func TestFaultShardStopped(t *testing.T) {
	rig := startShardRig(t, nil)
	qa, qb := rig.queueOn(t, 1, "s1"), rig.queueOn(t, 2, "s2")
	runs := map[string]*load.FaultRun{}
	for _, q := range []string{qa, qb} {
		run, err := load.StartFaultLoad(rig.broker.URL, load.L1(q, ciRate/2))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(run.Stop)
		runs[q] = run
	}
	time.Sleep(sized(5*time.Second, 20*time.Second))
	down := time.Now()
	rig.clusters[2].crash(t)
	time.Sleep(sized(8*time.Second, 30*time.Second))
	up := time.Now()
	rig.clusters[2].restart(t)
	time.Sleep(sized(4*time.Second, 10*time.Second))

	// Shard 1 did not notice: queued answers all along, none buffered.
	if gap := longestWithoutQueued(runs[qa].PushSamples(down, up), down); gap > 3*time.Second {
		t.Errorf("shard 1's pushes went %v without a queued answer while shard 2 was down", gap)
	}
	buffered := func(q string) (n int) {
		for _, s := range runs[q].PushSamples(down, up) {
			if s.Buffered {
				n++
			}
		}
		return n
	}
	if n := buffered(qa); n > 0 {
		t.Errorf("%d pushes to shard 1 were buffered while only shard 2 was down", n)
	}
	if n := buffered(qb); n == 0 {
		t.Errorf("no push to shard 2 was buffered while it was down")
	}
	// Recovered: shard 1 never lost its queued answers; shard 2's came back this long
	// after its PostgreSQL did.
	recovery := map[int]time.Duration{1: 0, 2: recoveredAfter(t, runs[qb], up)}
	for n, q := range map[int]string{1: qa, 2: qb} {
		r := runs[q]
		took := r.Drain(rig.broker.spoolEmpty, 3*time.Minute)
		rep := r.Verify()
		for _, err := range r.Errors() {
			t.Error(err)
		}
		pass := rep.Pass && len(rig.broker.spoolBacklog()) == 0 && len(rig.broker.quarantined()) == 0
		record(fmt.Sprintf("shard 2 of 3 crashed (8 s): queue on shard %d", n), rep, recovery[n], pass)
		t.Logf("shard %d: drain %v, push errors %d\n%s", n, took.Round(time.Millisecond), r.PushErrors(), rep)
		if !rep.Pass {
			t.Errorf("verifier FAIL on shard %d:\n%s", n, rep)
		}
		checkInvariants(t, rig.urls[n], q, load.L1(q, 1).Groups)
	}
	if b := rig.broker.spoolBacklog(); len(b) > 0 {
		t.Errorf("spool not empty after the drain: %v", b)
	}
}

// txnAnswer is the answer of POST /api/v1/transaction.
type txnAnswer struct {
	Success bool   `json:"success"`
	Error   string `json:"error"`
}

// crossShardTxn acks the popped message of shard 1's queue and pushes txn to shard 2's
// queue in one transaction.
func crossShardTxn(qb, txn string, p *popped) map[string]any {
	m := p.Messages[0]
	return map[string]any{"operations": []any{
		map[string]any{"type": "ack", "transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": m.LeaseID},
		map[string]any{"type": "push", "queue": qb, "payload": map[string]any{"moved": true}, "transactionId": txn},
	}}
}

// TestFaultShardKilledBetweenPrepareAndCommit: a transaction acks on shard 1 and pushes
// on shard 2; the broker prepares both parts and is SIGKILLed before it finishes, then
// restarted; the transaction resolves exactly once either way:
//
//   - before the decision (the catalogue frozen): the recovery records an abort and rolls
//     both parts back once they are older than the statement timeout; the client's retry
//     then commits once;
//   - after the decision, with shard 1's part committed and shard 2's COMMIT PREPARED
//     held (shard 2 frozen): the recovery reads the decision and commits shard 2's part.
func TestFaultShardKilledBetweenPrepareAndCommit(t *testing.T) {
	for _, tt := range []struct {
		name    string
		decided bool
	}{
		{"before the decision: rolled back, then retried", false},
		{"after the decision: committed by the recovery", true},
	} {
		t.Run(tt.name, func(t *testing.T) { killMidTransaction(t, tt.decided) })
	}
}

func killMidTransaction(t *testing.T, decided bool) {
	rig := startShardRig(t, nil)
	qa, qb := rig.queueOn(t, 1, "t1"), rig.queueOn(t, 2, "t2")
	rig.api.push(item(qa, "", "input"))
	p := rig.api.pop(qa + "?batch=1&leaseSeconds=120")
	if p == nil || len(p.Messages) != 1 {
		t.Fatalf("pop the input: %+v", p)
	}
	prepared := func(n int) int64 {
		return queryInt(t, rig.urls[n], `SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'queen:%'`)
	}

	rig.proxies[0].Freeze() // the decision waits
	answered := make(chan int, 1)
	go func() {
		// Its answer never comes: the broker dies first (a transport error, not a status).
		answered <- rig.api.callQuiet(http.MethodPost, "/api/v1/transaction", crossShardTxn(qb, "output", p))
	}()
	waitFor(t, 30*time.Second, "both parts prepared", func() bool { return prepared(1) == 1 && prepared(2) == 1 })
	if decided {
		rig.proxies[2].Freeze() // shard 2's COMMIT PREPARED waits
		rig.proxies[0].Thaw()   // the decision goes through, then shard 1's commit
		waitFor(t, 30*time.Second, "the decision recorded and shard 1's part committed", func() bool {
			return queryInt(t, rig.urls[0], `SELECT count(*) FROM queen.xact_decisions WHERE commit`) == 1 && prepared(1) == 0
		})
	}
	rig.broker.kill()
	<-answered
	rig.drop(t, 0)
	rig.drop(t, 2)
	if decided && prepared(2) != 1 {
		t.Fatal("shard 2's part was resolved before the restart: the recovery would have nothing to do")
	}
	killed := time.Now()
	rig.broker.start()

	waitFor(t, time.Minute, "the prepared parts resolved", func() bool { return prepared(1) == 0 && prepared(2) == 0 })
	recovery := time.Since(killed)
	want := map[bool]int64{false: 0, true: 1}[decided]
	if n := storedCopies(t, rig.urls[2], qb); n != want {
		t.Fatalf("the transaction's push is stored %d times, want %d", n, want)
	}
	if !decided {
		if n := queryInt(t, rig.urls[0], `SELECT count(*) FROM queen.xact_decisions WHERE NOT commit`); n != 1 {
			t.Errorf("%d abort decisions recorded, want 1 (the recovery's)", n)
		}
		// The input's lease survived the rollback: the retry commits, once.
		var ans txnAnswer
		if code := rig.api.call(http.MethodPost, "/api/v1/transaction", crossShardTxn(qb, "output", p), &ans); code != http.StatusOK || !ans.Success {
			t.Fatalf("retry of the transaction: %d %+v", code, ans)
		}
		if n := storedCopies(t, rig.urls[2], qb); n != 1 {
			t.Errorf("the retried push is stored %d times, want 1", n)
		}
	}
	if again := rig.api.pop(qa + "?batch=1"); again != nil {
		t.Errorf("the input was delivered again after the transaction committed: %+v", again)
	}
	fault := map[bool]string{false: "before", true: "after"}[decided]
	recordTargeted("broker SIGKILL between PREPARE and COMMIT PREPARED, "+fault+" the decision (3 shards)", 1, 1, recovery, !t.Failed())
}

// storedCopies counts the messages stored in queue on db (the queues these tests count
// receive only the message they look for).
func storedCopies(t *testing.T, db, queue string) int64 {
	return queryInt(t, db, `SELECT coalesce(sum(lp.last_offset + 1), 0) FROM queen.log_partitions lp
		JOIN queen.queues q ON q.id = lp.queue_id WHERE q.name = $1`, queue)
}

// callQuiet is call that reports a transport error as status 0 instead of failing the
// test (a request the broker dies under, or one polled until it works).
func (a *api) callQuiet(method, path string, body any) int {
	raw, err := json.Marshal(body)
	if err != nil {
		return 0
	}
	req, err := http.NewRequest(method, a.base+path, bytes.NewReader(raw))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.c.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestFaultShardCatalogueCut: with shard 0 (the catalogue) unreachable, queues the
// broker knows keep working on their shards (push, pop, ack); what needs the catalogue
// answers an error that names it (configure, a push to a queue the broker has not seen);
// once the catalogue answers again, everything works.
func TestFaultShardCatalogueCut(t *testing.T) {
	rig := startShardRig(t, map[string]string{"DB_STATEMENT_TIMEOUT": "1500"})
	qa, qb := rig.queueOn(t, 1, "c1"), rig.queueOn(t, 2, "c2")
	rig.proxies[0].Cut()
	cut := time.Now()

	for i, q := range []string{qa, qb} {
		txn := fmt.Sprintf("during-%d", i)
		if r := rig.api.push(item(q, "", txn)); r[0].Status != "queued" {
			t.Errorf("push to %s (shard %d) with the catalogue cut: %+v", q, i+1, r[0])
		}
		p := rig.api.pop(q + "?batch=1")
		if p == nil || len(p.Messages) != 1 || p.Messages[0].TransactionID != txn {
			t.Fatalf("pop %s with the catalogue cut: %+v", q, p)
		}
		if res := rig.api.ack("", p, "", "completed", ""); !res[0].Success {
			t.Errorf("ack on %s with the catalogue cut: %+v", q, res[0])
		}
	}
	if r := rig.api.push(item("never-seen", "", "x")); r[0].Status != "failed" || !strings.Contains(r[0].Error, "catalogue") {
		t.Errorf("push to an unplaced queue with the catalogue cut: %+v, want failed naming the catalogue", r[0])
	}
	var refused struct{ Error string }
	if code := rig.api.call(http.MethodPost, "/api/v1/configure", map[string]any{"queue": "new-while-cut"}, &refused); code != http.StatusServiceUnavailable ||
		!strings.Contains(refused.Error, "shard 0 did not answer") {
		t.Errorf("configure of a new queue with the catalogue cut answered %d %+v, want 503 naming shard 0", code, refused)
	}
	if code := rig.api.call(http.MethodGet, "/api/v1/pop/queue/never-seen?wait=false", nil, nil); code != http.StatusServiceUnavailable {
		t.Errorf("pop of a queue the broker has not seen, with the catalogue cut, answered %d, want 503", code)
	}
	if err := rig.proxies[0].Restore(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "configure works again", func() bool {
		return rig.api.callQuiet(http.MethodPost, "/api/v1/configure", map[string]any{"queue": "after-cut"}) == http.StatusOK
	})
	if r := rig.api.push(item("never-seen", "", "y")); r[0].Status != "queued" {
		t.Errorf("push to a new queue after the catalogue came back: %+v", r[0])
	}
	recordTargeted("catalogue (shard 0 of 3) cut: known queues keep working", 2, 2, time.Since(cut), !t.Failed())
}

// waitFor polls cond every 100 ms until it holds or limit passes (then the test fails).
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
