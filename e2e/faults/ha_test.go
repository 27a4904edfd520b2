package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/netproxy"
)

// skipHAEnv skips the failover scenarios on a machine without Patroni and etcd (.ci/run
// installs both; a developer without them sets it).
const skipHAEnv = "QUEEN_SKIP_HA"

// haCluster is a Patroni cluster of scripts/ha.sh (etcd, three PostgreSQL nodes) with a
// proxy in front of every node's PostgreSQL, the only way in for the brokers and for the
// other nodes' replication, and one between every node's Patroni and etcd: freezing a
// node's two proxies partitions it from the brokers, its standbys and etcd
// (docs/reliability.md, "Failover").
type haCluster struct {
	dir   string
	mode  string // sync or async (Patroni's synchronous_mode)
	base  int    // scripts/ha.sh's HA_BASE_PORT
	nodes int
	pg    []*netproxy.Proxy // node i+1's PostgreSQL
	etcd  []*netproxy.Proxy // node i+1's Patroni to etcd
	url   string            // the brokers' multi-host URL (database postgres)
}

// startHA starts a cluster in mode and stops it at the test's end.
func startHA(t *testing.T, mode string) *haCluster {
	t.Helper()
	if os.Getenv(skipHAEnv) != "" {
		t.Skipf("%s is set", skipHAEnv)
	}
	for _, bin := range []string{"patroni", "patronictl", "etcd"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s missing: install patroni and etcd-server (.ci/run does), or set %s=1", bin, skipHAEnv)
		}
	}
	h := &haCluster{dir: filepath.Join(t.TempDir(), "ha"), mode: mode, nodes: 3, base: freeBase(t)}
	var pgPorts, etcdPorts []string
	for i := 1; i <= h.nodes; i++ {
		p := h.proxy(t, h.base+10+i)
		e := h.proxy(t, h.base)
		h.pg, h.etcd = append(h.pg, p), append(h.etcd, e)
		pgPorts, etcdPorts = append(pgPorts, strconv.Itoa(p.Port())), append(etcdPorts, strconv.Itoa(e.Port()))
	}
	t.Cleanup(func() {
		if out, err := h.script("down"); err != nil {
			t.Logf("scripts/ha.sh down: %v\n%s", err, out)
		}
	})
	out, err := h.script("up", "HA_PG_PORTS="+strings.Join(pgPorts, ","), "HA_ETCD_PORTS="+strings.Join(etcdPorts, ","))
	if err != nil {
		t.Fatalf("scripts/ha.sh up: %v\n%s\n%s", err, out, h.logs())
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	h.url = lines[len(lines)-1]
	return h
}

// proxy starts a proxy to a loopback port, closed at the test's end.
func (h *haCluster) proxy(t *testing.T, port int) *netproxy.Proxy {
	p, err := netproxy.Start("127.0.0.1:" + strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// freeBase picks HA_BASE_PORT: a random base whose ports scripts/ha.sh uses are free,
// below Linux's ephemeral range (32768 and up by default), where the proxies' own
// listeners and every outgoing connection take their ports.
func freeBase(t *testing.T) int {
	for range 50 {
		base := 20000 + 100*rand.IntN(120)
		free := true
		for _, off := range []int{0, 1, 11, 12, 13, 21, 22, 23} {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+off))
			if err != nil {
				free = false
				break
			}
			l.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("no free port range for the Patroni cluster")
	return 0
}

// script runs scripts/ha.sh with the cluster's settings and returns its output.
func (h *haCluster) script(cmd string, env ...string) (string, error) {
	c := exec.Command(filepath.Join(repoRoot(), "scripts", "ha.sh"), cmd, h.dir)
	c.Env = append(os.Environ(), "HA_MODE="+h.mode, "HA_NODES="+strconv.Itoa(h.nodes), "HA_BASE_PORT="+strconv.Itoa(h.base))
	c.Env = append(c.Env, env...)
	out, err := c.CombinedOutput()
	return string(out), err
}

// repoRoot is the module's root (the test runs in e2e/faults).
func repoRoot() string {
	wd, _ := os.Getwd()
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

// logs is the tail of every node's Patroni log, for a failure message.
func (h *haCluster) logs() string {
	var b strings.Builder
	for i := 1; i <= h.nodes; i++ {
		raw, _ := os.ReadFile(filepath.Join(h.dir, fmt.Sprintf("node%d", i), "patroni.log"))
		if len(raw) > 2000 {
			raw = raw[len(raw)-2000:]
		}
		fmt.Fprintf(&b, "--- node%d\n%s\n", i, raw)
	}
	return b.String()
}

// member is one node as Patroni's REST API (GET /cluster) reports it.
type member struct {
	Name  string `json:"name"`
	Role  string `json:"role"` // leader, sync_standby, replica
	State string `json:"state"`
}

// node is the member's index in pg and etcd (node1 is 0).
func (m member) node() int {
	n, _ := strconv.Atoi(strings.TrimPrefix(m.Name, "node"))
	return n - 1
}

// members asks the nodes' REST APIs, the first that answers, for the cluster's view.
func (h *haCluster) members() ([]member, error) {
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	var last error
	for i := 1; i <= h.nodes; i++ {
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/cluster", h.base+20+i))
		if err != nil {
			last = err
			continue
		}
		var body struct {
			Members []member `json:"members"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err == nil {
			return body.Members, nil
		}
		last = err
	}
	return nil, fmt.Errorf("patroni: no node answered /cluster: %w", last)
}

// role returns the running member with role ("leader", "sync_standby"), if any.
func (h *haCluster) role(role string) (member, bool) {
	ms, err := h.members()
	if err != nil {
		return member{}, false
	}
	for _, m := range ms {
		if m.Role == role && (m.State == "running" || m.State == "streaming") {
			return m, true
		}
	}
	return member{}, false
}

// waitRole waits (bounded) for a running member with role other than not ("": any).
func (h *haCluster) waitRole(t *testing.T, role, not string, limit time.Duration) member {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if m, ok := h.role(role); ok && m.Name != not {
			return m
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no %s other than %q within %v\n%s", role, not, limit, h.logs())
	return member{}
}

// switchover is `patronictl switchover`: the leader hands over to a standby (in
// synchronous mode, the synchronous one) and becomes a standby itself. It returns the
// new leader.
func (h *haCluster) switchover(t *testing.T) member {
	t.Helper()
	old := h.waitRole(t, "leader", "", time.Minute)
	candidate := "replica"
	if h.mode == "sync" {
		candidate = "sync_standby"
	}
	to := h.waitRole(t, candidate, "", time.Minute)
	cmd := exec.Command("patronictl", "-c", filepath.Join(h.dir, "node1", "patroni.yml"), "switchover",
		"--leader", old.Name, "--candidate", to.Name, "--force")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("patronictl switchover: %v\n%s", err, out)
	}
	return h.waitRole(t, "leader", old.Name, time.Minute)
}

// killPrimary SIGKILLs the leader's postmaster (its backends follow when they notice);
// Patroni fails over at once (primary_start_timeout 0). It returns the old leader.
func (h *haCluster) killPrimary(t *testing.T) member {
	t.Helper()
	old := h.waitRole(t, "leader", "", time.Minute)
	raw, err := os.ReadFile(filepath.Join(h.dir, old.Name, "data", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(raw), "\n", 2)[0]))
	if err != nil {
		t.Fatalf("postmaster.pid of %s: %v", old.Name, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 the postmaster of %s (%d): %v", old.Name, pid, err)
	}
	return old
}

// partition cuts node m off the brokers, the other nodes and etcd (its proxies frozen:
// bytes held, nothing refused); heal undoes it.
func (h *haCluster) partition(m member) {
	h.pg[m.node()].Freeze()
	h.etcd[m.node()].Freeze()
}

func (h *haCluster) heal(m member) {
	h.pg[m.node()].Thaw()
	h.etcd[m.node()].Thaw()
}

// newDatabase creates an empty database on the primary and returns the brokers' URL for
// it (every node, through the proxies).
func (h *haCluster) newDatabase(t *testing.T, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, h.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return strings.Replace(h.url, "/postgres?", "/"+name+"?", 1)
}
