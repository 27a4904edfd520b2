package broker

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/adapters/pglocal"
)

// shardClusters starts three throwaway clusters that accept prepared transactions and
// returns them with a fresh database on each.
func shardClusters(b *testing.B) ([]*pglocal.Server, []string) {
	var srvs []*pglocal.Server
	var dbs []string
	for i := range 3 {
		srv := startPrepared(b, fmt.Sprintf("shard%d", i))
		srvs, dbs = append(srvs, srv), append(dbs, createDB(b, srv.URL(), "bench"))
	}
	return srvs, dbs
}

// createDB creates database name on the server at admin and returns its URL.
func createDB(b *testing.B, admin, name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, admin)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		b.Fatal(err)
	}
	return strings.Replace(admin, "/postgres?", "/"+name+"?", 1)
}

// placeOn configures queue on shard n of the broker at url (the configure shard option).
func placeOn(b *testing.B, url, queue string, n int) {
	c := newRawClient(url)
	defer c.close()
	code, raw, err := c.do(http.MethodPost, "/api/v1/configure", fmt.Appendf(nil, `{"queue":%q,"shard":%d}`, queue, n))
	if err != nil || code != http.StatusOK {
		b.Fatalf("place %s on shard %d: %d %s %v", queue, n, code, raw, err)
	}
}

// shardSide is one side of a sharding benchmark: what it pushed and what each cluster
// spent on it.
type shardSide struct {
	name string
	res  loadResult
	cpu  [3]time.Duration // per cluster
	msgs [3]int64         // per cluster
}

func (s *shardSide) pgPerMsg(n int) float64 {
	return float64(s.cpu[n].Microseconds()) / float64(max(s.msgs[n], 1))
}

// BenchmarkShardPush: the cost of routing (docs/design.md, "Several PostgreSQL
// clusters"). 64 single-message clients over 1,000 partitions push (as
// BenchmarkPushFusion's single-64conns) to a broker on one database, to a broker of three
// shards whose pushes all go to one queue of the shard on the same cluster (the routing's
// own cost: the cluster's CPU per message must not grow, the broker's by little), and to
// that broker with the clients split over a queue on each of the three shards (each
// cluster commits a third of the load: smaller commits, as the cost model says). Three
// throwaway clusters on this machine; the sides alternate in QUEEN_BENCH_ROUNDS rounds of
// QUEEN_BENCH_SECONDS in all. Reports the rates, each cluster's CPU per message it stored
// (/proc), and this process's CPU per message (broker and load generator). Run with
// -benchtime 1x.
func BenchmarkShardPush(b *testing.B) {
	d, rounds := benchDuration(), benchRounds()
	slice := d / time.Duration(rounds) / 3
	for b.Loop() {
		srvs, dbs := shardClusters(b)
		plain := startBrokerOn(b, dbs[0], map[string]string{"DB_POOL_SIZE": "80"})
		catalogue := createDB(b, srvs[0].URL(), "catalogue")
		sharded := startBrokerOn(b, catalogue, map[string]string{"QUEEN_PG_URL": "", "DB_POOL_SIZE": "80",
			"QUEEN_SHARDS": strings.Join([]string{catalogue, dbs[1], dbs[2]}, " ")})
		for n := range 3 {
			placeOn(b, sharded.URL, fmt.Sprintf("spread-%d", n), n)
		}
		placeOn(b, sharded.URL, "routed", 0)
		plainLoad := newFusionLoad(b, plain.URL, 64, 1, "plain")
		routed := newFusionLoad(b, sharded.URL, 64, 1, "routed")
		spread := make([]*fusionLoad, 3)
		for n := range spread {
			spread[n] = newFusionLoad(b, sharded.URL, []int{22, 21, 21}[n], 1, fmt.Sprintf("spread-%d", n))
		}
		for _, f := range append([]*fusionLoad{plainLoad, routed}, spread...) {
			f.run(-1, 2*time.Second) // warm-up: partitions created, caches filled
		}
		sides := []*shardSide{{name: "one database"}, {name: "3 shards, all on shard 0"}, {name: "3 shards, spread"}}
		for r := range rounds {
			for i, s := range sides {
				if r%2 == 1 {
					s = sides[len(sides)-1-i]
				}
				var cpu0 [3]time.Duration
				for n, srv := range srvs {
					cpu0[n] = clusterCPU(b, srv.PID())
				}
				switch s.name {
				case "one database":
					res := plainLoad.run(r, slice)
					s.res, s.msgs[0] = s.res.plus(res), s.msgs[0]+res.msgs
				case "3 shards, all on shard 0":
					res := routed.run(r, slice)
					s.res, s.msgs[0] = s.res.plus(res), s.msgs[0]+res.msgs
				default:
					var mu sync.Mutex
					var wg sync.WaitGroup
					var total loadResult
					for n, f := range spread {
						wg.Go(func() {
							res := f.run(r, slice)
							mu.Lock()
							defer mu.Unlock()
							s.msgs[n] += res.msgs
							total.msgs, total.errors = total.msgs+res.msgs, total.errors+res.errors
							total.elapsed, total.cpuSec, total.goSec = max(total.elapsed, res.elapsed), res.cpuSec, res.goSec
						})
					}
					wg.Wait()
					s.res = s.res.plus(total)
				}
				for n, srv := range srvs {
					s.cpu[n] += clusterCPU(b, srv.PID()) - cpu0[n]
				}
				pause(500 * time.Millisecond)
			}
		}
		base := sides[0]
		_, baseGo := base.res.cpuPerMsg()
		for _, s := range sides {
			if s.res.errors > 0 {
				b.Errorf("%s: %d pushes failed", s.name, s.res.errors)
			}
			_, goPer := s.res.cpuPerMsg()
			var clusters []string
			for n := range 3 {
				if s.msgs[n] == 0 {
					clusters = append(clusters, fmt.Sprintf("idle (%d ms)", s.cpu[n].Milliseconds()))
					continue
				}
				clusters = append(clusters, fmt.Sprintf("%.1f", s.pgPerMsg(n)))
			}
			b.Logf("%s: %.0f msgs/s (%.3fx); PostgreSQL µs per stored message by cluster %s (cluster 0: %.3fx); broker+load µs/msg %.1f (%.3fx)",
				s.name, s.res.rate(), s.res.rate()/base.res.rate(), strings.Join(clusters, " / "),
				s.pgPerMsg(0)/base.pgPerMsg(0), goPer, goPer/baseGo)
		}
		_, routedGo := sides[1].res.cpuPerMsg()
		b.ReportMetric(sides[1].pgPerMsg(0)/base.pgPerMsg(0), "pg-µs/msg-routed/one")
		b.ReportMetric(routedGo/baseGo, "broker-µs/msg-routed/one")
		b.ReportMetric(sides[1].res.rate()/base.res.rate(), "msgs/s-routed/one")
		b.ReportMetric(sides[2].res.rate()/base.res.rate(), "msgs/s-spread/one")
	}
}

// BenchmarkShardTransactions: a transaction through the broker whose two pushes land on
// one shard against one whose pushes land on two (two-phase commit, the decision on the
// catalogue), on a broker of three shards (three throwaway clusters), 16 transactions in
// flight, alternating in QUEEN_BENCH_ROUNDS rounds. Reports transactions per second and
// the three clusters' CPU and this process's CPU per transaction, and their ratios. Run
// with -benchtime 1x.
func BenchmarkShardTransactions(b *testing.B) {
	d, rounds := benchDuration(), benchRounds()
	slice := d / time.Duration(rounds) / 2
	for b.Loop() {
		srvs, dbs := shardClusters(b)
		br := startBrokerOn(b, dbs[0], map[string]string{"QUEEN_PG_URL": "", "DB_POOL_SIZE": "40",
			"QUEEN_SHARDS": strings.Join(dbs, " ")})
		for q, n := range map[string]int{"t-a": 1, "t-b": 1, "t-c": 2} {
			placeOn(b, br.URL, q, n)
		}
		clients := make([]*rawClient, twoPhaseClients)
		for i := range clients {
			clients[i] = newRawClient(br.URL)
		}
		b.Cleanup(func() {
			for _, c := range clients {
				c.close()
			}
		})
		txn := func(second string, round int) func(w, seq int) (int, error) {
			return func(w, seq int) (int, error) {
				body := fmt.Appendf(nil, `{"operations":[`+
					`{"type":"push","queue":"t-a","partition":"p%d","transactionId":"%s-%d-%d-%d-a","payload":{"n":%d}},`+
					`{"type":"push","queue":%q,"partition":"p%d","transactionId":"%s-%d-%d-%d-b","payload":{"n":%d}}]}`,
					w, second, round, w, seq, seq, second, w, second, round, w, seq, seq)
				code, raw, err := clients[w].do(http.MethodPost, "/api/v1/transaction", body)
				if err != nil {
					return 0, err
				}
				if code != http.StatusOK || !strings.Contains(string(raw), `"success":true`) {
					return 0, fmt.Errorf("transaction: %d %s", code, raw)
				}
				return 1, nil
			}
		}
		sides := []struct {
			name, second string
			res          loadResult
			cpu          time.Duration
		}{{name: "one shard", second: "t-b"}, {name: "two shards, 2PC", second: "t-c"}}
		for _, s := range sides {
			runLoad(twoPhaseClients, time.Second, txn(s.second, -1)) // warm-up
		}
		for r := range rounds {
			for i := range sides {
				s := &sides[(i+r)%2]
				var cpu0 time.Duration
				for _, srv := range srvs {
					cpu0 += clusterCPU(b, srv.PID())
				}
				res := runLoad(twoPhaseClients, slice, txn(s.second, r))
				for _, srv := range srvs {
					s.cpu += clusterCPU(b, srv.PID())
				}
				s.cpu -= cpu0
				if res.errors > 0 {
					b.Fatalf("%s: %d transactions failed", s.name, res.errors)
				}
				s.res = s.res.plus(res)
			}
		}
		one, two := sides[0], sides[1]
		perTxn := func(cpu time.Duration, res loadResult) float64 {
			return float64(cpu.Microseconds()) / float64(res.msgs)
		}
		_, oneGo := one.res.cpuPerMsg()
		_, twoGo := two.res.cpuPerMsg()
		for _, s := range sides {
			_, goPer := s.res.cpuPerMsg()
			b.Logf("%s: %.0f txns/s (%.3fx), PostgreSQL %.1f µs/txn (%.3fx), broker+load %.1f µs/txn (%.3fx)", s.name,
				s.res.rate(), s.res.rate()/one.res.rate(), perTxn(s.cpu, s.res), perTxn(s.cpu, s.res)/perTxn(one.cpu, one.res),
				goPer, goPer/oneGo)
		}
		b.ReportMetric(two.res.rate()/one.res.rate(), "txns/s-2pc/one")
		b.ReportMetric(perTxn(two.cpu, two.res)/perTxn(one.cpu, one.res), "pg-µs/txn-2pc/one")
		b.ReportMetric(twoGo/oneGo, "broker-µs/txn-2pc/one")
	}
}
