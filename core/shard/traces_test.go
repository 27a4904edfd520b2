package shard_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/core/shard"
	"github.com/queen-go/queen/ports"
)

func keep(ports.QueueOptions) time.Duration { return 24 * time.Hour }

// traceWorld records 40 traces, each at its own second, on messages of six queues over
// three shards: "shared" on every third trace, n0..n7 by turn (every name on several
// shards, last seen on different ones), "solo-<queue>" on the traces of one queue.
func traceWorld(t *testing.T) (*world, *shard.Traces) {
	t.Helper()
	w := newWorld(t, 3)
	queues := []string{"a.x", "b.x", "c.y", "d.y", "e.x", "f.z"}
	pids := map[string][2]string{}
	for i, q := range queues {
		w.place(q, i%3)
		single, sharded := w.push(epoch, q, "p0", q+"-m0", q+"-m1", q+"-m2")
		pids[q] = [2]string{single, sharded}
	}
	for i := range 40 {
		q := queues[(i*5)%len(queues)]
		names := []string{fmt.Sprintf("n%d", (i*3)%8)}
		if i%3 == 0 {
			names = append(names, "shared")
		}
		if q == "c.y" || q == "f.z" {
			names = append(names, "solo-"+q)
		}
		w.clock.set(epoch.Add(time.Duration(i+1) * time.Second))
		txn := fmt.Sprintf("%s-m%d", q, i%3)
		for k, s := range []ports.TraceStore{w.single, w.on(q)} {
			nt := ports.NewTrace{PartitionID: pids[q][k], TransactionID: txn, EventType: "info", Names: names,
				Data: []byte(`{}`)}
			if _, ok, err := s.AddTrace(context.Background(), tenant, nt, keep, 0); !ok || err != nil {
				t.Fatalf("AddTrace %s: %v, %v", txn, ok, err)
			}
		}
	}
	w.clock.set(epoch.Add(time.Minute))
	w.reset()
	stores := make([]ports.TraceStore, len(w.shards))
	for n, s := range w.shards {
		stores[n] = s
	}
	return w, shard.NewTraces(stores)
}

// traceView renders a trace without its ids (the single store mints others).
func traceView(ts []ports.Trace) []string {
	out := make([]string, len(ts))
	for i, tr := range ts {
		out[i] = fmt.Sprintf("%s/%s %s %v @%s", tr.Queue, tr.Partition, tr.TransactionID, tr.Names,
			tr.CreatedAt.Format(time.TimeOnly))
	}
	return out
}

func TestTracesByNameIsOneDatabase(t *testing.T) {
	t.Parallel()
	w, sharded := traceWorld(t)
	ctx := context.Background()
	for _, name := range []string{"shared", "n3", "solo-c.y", "none"} {
		for _, limit := range []int{0, 1, 3, 5, 100} {
			for offset := 0; offset <= 16; offset += max(limit, 1) {
				want, wantTotal, err := w.single.TracesByName(ctx, tenant, name, limit, offset)
				if err != nil {
					t.Fatal(err)
				}
				got, total, err := sharded.TracesByName(ctx, tenant, name, limit, offset)
				if err != nil || total != wantTotal || !slices.Equal(traceView(got), traceView(want)) || got == nil {
					t.Errorf("%s limit %d offset %d: %q total %d, %v;\nwant %q total %d", name, limit, offset,
						traceView(got), total, err, traceView(want), wantTotal)
				}
			}
		}
	}
}

func nameView(ns []ports.TraceName) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = fmt.Sprintf("%s traces %d messages %d @%s", n.Name, n.Traces, n.Messages, n.LastSeen.Format(time.TimeOnly))
	}
	return out
}

func namesOnly(ns []ports.TraceName) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = fmt.Sprintf("%s @%s", n.Name, n.LastSeen.Format(time.TimeOnly))
	}
	return out
}

// TestTraceNamesPages checks every page: its names and their order are always those of
// one database; counts and the total are exact when every shard listed all its names
// (offset+limit at least the names of each), else (TraceNames' comment) a count may
// lack the part of a shard that did not list the name, and the total is an upper bound
// no greater than the shards' totals added.
func TestTraceNamesPages(t *testing.T) {
	t.Parallel()
	w, sharded := traceWorld(t)
	ctx := context.Background()
	perShard := make([]int64, len(w.shards))
	var sum, most int64
	for n, s := range w.shards {
		_, perShard[n], _ = s.TraceNames(ctx, tenant, 0, 0)
		sum += perShard[n]
		most = max(most, perShard[n])
	}
	all, distinct, err := w.single.TraceNames(ctx, tenant, 100, 0)
	if err != nil || sum <= distinct {
		t.Fatalf("the world has %d names, %d on the shards (%v): names must be on several shards", distinct, sum, err)
	}
	truth := map[string]ports.TraceName{}
	for _, n := range all {
		truth[n.Name] = n
	}
	approximated := 0
	for limit := 1; limit <= 12; limit++ {
		for offset := 0; offset <= 12; offset++ {
			want, _, _ := w.single.TraceNames(ctx, tenant, limit, offset)
			got, total, err := sharded.TraceNames(ctx, tenant, limit, offset)
			if err != nil || !slices.Equal(namesOnly(got), namesOnly(want)) {
				t.Fatalf("limit %d offset %d: %q, %v; want %q", limit, offset, namesOnly(got), err, namesOnly(want))
			}
			if int64(offset+limit) >= most {
				if total != distinct || !slices.Equal(nameView(got), nameView(want)) {
					t.Errorf("limit %d offset %d, every shard complete: %q total %d; want %q total %d", limit, offset,
						nameView(got), total, nameView(want), distinct)
				}
				continue
			}
			if total < distinct || total > sum {
				t.Errorf("limit %d offset %d: total %d, want %d to %d", limit, offset, total, distinct, sum)
			}
			for _, n := range got {
				tr := truth[n.Name]
				if n.Traces > tr.Traces || n.Messages > tr.Messages || n.Traces < 1 {
					t.Errorf("limit %d offset %d: %+v, more than the truth %+v", limit, offset, n, tr)
				}
				if n.Traces < tr.Traces {
					approximated++
				}
			}
		}
	}
	if approximated == 0 {
		t.Error("no page lacked a shard's count: the world does not exercise the approximation")
	}
}

func TestTracesOnePartitionReachesItsShard(t *testing.T) {
	t.Parallel()
	w, sharded := traceWorld(t)
	ctx := context.Background()
	_, pid := w.push(epoch.Add(time.Hour), "c.y", "p9", "late")
	w.clock.set(epoch.Add(2 * time.Hour))
	w.reset()
	if _, ok, err := sharded.AddTrace(ctx, tenant, ports.NewTrace{PartitionID: pid, TransactionID: "late", Names: []string{"z"}}, keep, 10); !ok || err != nil {
		t.Fatalf("AddTrace: %v, %v", ok, err)
	}
	got, err := sharded.MessageTraces(ctx, tenant, pid, "late", 10)
	if err != nil || len(got) != 1 || got[0].Queue != "c.y" {
		t.Fatalf("MessageTraces: %+v, %v", got, err)
	}
	if calls := w.called(); !slices.Equal(calls, []int{0, 0, 2}) {
		t.Errorf("calls per shard %v, want shard 2's only", calls)
	}
}

func TestTracesFailingShardIsUnreachable(t *testing.T) {
	t.Parallel()
	w, sharded := traceWorld(t)
	ctx := context.Background()
	down := errors.New("connection refused")
	w.failShard(2, down)
	for name, call := range map[string]func() error{
		"by name": func() error { _, _, err := sharded.TracesByName(ctx, tenant, "shared", 10, 0); return err },
		"names":   func() error { _, _, err := sharded.TraceNames(ctx, tenant, 10, 0); return err },
	} {
		err := call()
		var ue *shard.UnreachableError
		if !errors.As(err, &ue) || ue.Shard != 2 || !errors.Is(err, down) || !strings.Contains(err.Error(), "shard 2") {
			t.Errorf("%s: %v, want shard 2 unreachable", name, err)
		}
	}
}
