package metrics

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/core/drain"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/history"
	"github.com/queen-go/queen/core/hotlist"
	"github.com/queen-go/queen/core/peers"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/retention"
	"github.com/queen-go/queen/core/stages"
)

// exposition is one parsed scrape of the text format.
type exposition struct {
	types   map[string]string // family -> counter, gauge, histogram, summary, untyped
	help    map[string]string
	samples []sample
}

type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrape GETs h and parses the text exposition format (version 0.0.4): # HELP and
// # TYPE lines, and samples name{label="value",...} value.
func scrape(t *testing.T, h http.Handler) exposition {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics/prometheus", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: status %d: %s", rec.Code, rec.Body)
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "no-cache" {
		t.Fatalf("scrape: Cache-Control %q, want no-cache", cc)
	}
	e := exposition{types: map[string]string{}, help: map[string]string{}}
	sc := bufio.NewScanner(rec.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, "# HELP "):
			name, text, _ := strings.Cut(strings.TrimPrefix(line, "# HELP "), " ")
			e.help[name] = text
		case strings.HasPrefix(line, "# TYPE "):
			name, typ, _ := strings.Cut(strings.TrimPrefix(line, "# TYPE "), " ")
			e.types[name] = typ
		case strings.HasPrefix(line, "#"):
		default:
			s, err := parseSample(line)
			if err != nil {
				t.Fatalf("scrape: line %q: %v", line, err)
			}
			e.samples = append(e.samples, s)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scrape: %v", err)
	}
	return e
}

// parseSample parses one sample line (no timestamp: the client library writes none).
func parseSample(line string) (sample, error) {
	s := sample{labels: map[string]string{}}
	end := strings.IndexAny(line, "{ ")
	if end <= 0 {
		return s, errors.New("no metric name")
	}
	s.name, line = line[:end], line[end:]
	if line[0] == '{' {
		line = line[1:]
		for !strings.HasPrefix(line, "}") {
			name, rest, ok := strings.Cut(line, "=\"")
			if !ok {
				return s, errors.New("label without a quoted value")
			}
			var value strings.Builder
			i := 0
			for ; i < len(rest) && rest[i] != '"'; i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
					if rest[i] == 'n' {
						value.WriteByte('\n')
						continue
					}
				}
				value.WriteByte(rest[i])
			}
			if i == len(rest) {
				return s, errors.New("unterminated label value")
			}
			s.labels[strings.TrimPrefix(name, ",")] = value.String()
			line = strings.TrimPrefix(rest[i+1:], ",")
		}
		line = line[1:]
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(line), 64)
	if err != nil {
		return s, err
	}
	s.value = v
	return s, nil
}

// value returns the sample of name whose labels include want, and whether there is one.
func (e exposition) value(name string, want map[string]string) (float64, bool) {
	for _, s := range e.samples {
		if s.name == name && hasLabels(s.labels, want) {
			return s.value, true
		}
	}
	return 0, false
}

// series returns the samples of name.
func (e exposition) series(name string) []sample {
	var out []sample
	for _, s := range e.samples {
		if s.name == name {
			out = append(out, s)
		}
	}
	return out
}

// names are the sample names of the scrape: what a PromQL selector can name
// (histograms' and summaries' _bucket, _sum and _count included).
func (e exposition) names() map[string]bool {
	out := map[string]bool{}
	for _, s := range e.samples {
		out[s.name] = true
	}
	return out
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// poolStat is a fixed PoolStat.
type poolStat struct{}

func (poolStat) TotalConns() int32                   { return 10 }
func (poolStat) IdleConns() int32                    { return 6 }
func (poolStat) AcquiredConns() int32                { return 3 }
func (poolStat) ConstructingConns() int32            { return 1 }
func (poolStat) MaxConns() int32                     { return 20 }
func (poolStat) AcquireCount() int64                 { return 1000 }
func (poolStat) EmptyAcquireCount() int64            { return 40 }
func (poolStat) CanceledAcquireCount() int64         { return 2 }
func (poolStat) AcquireDuration() time.Duration      { return 1500 * time.Millisecond }
func (poolStat) EmptyAcquireWaitTime() time.Duration { return 250 * time.Millisecond }

// fullSources sets every source the broker sets (providers.go ProvideHandler), with
// fixed readings, and one observed request so the labelled request families have series.
func fullSources() Sources {
	reqs := NewRequests()
	reqs.Observe(http.MethodPost, "/api/v1/push", http.StatusCreated, 3*time.Millisecond, 120)
	timers := stages.New()
	timers.Push.Commit.Observe(4 * time.Millisecond)
	timers.Pop.Ready.Observe(2 * time.Millisecond)
	return Sources{
		Fusion: func() fusion.Stats {
			return fusion.Stats{Commits: 5, Failed: 1, Segments: 40, Frames: 90, ItemsPerBatch: 18}
		},
		Push:      func() push.Stats { return push.Stats{Requests: 7, Messages: 90} },
		PushLimit: func() int { return 32 },
		Consume: func() consume.Stats {
			return consume.Stats{PopRequests: 11, PopMessages: 80, AckRequests: 9, AckMessages: 75}
		},
		Pool:            func() PoolStat { return poolStat{} },
		DBCommits:       func(context.Context) (int64, error) { return 1234, nil },
		OldestXact:      func(context.Context) (time.Duration, error) { return 90 * time.Second, nil },
		SyncReplication: func(context.Context) (bool, error) { return true, nil },
		ReplicaLag:      func() (time.Duration, bool) { return 1500 * time.Millisecond, true },
		Maintenance:     func() bool { return false },
		PopMaintenance:  func() bool { return true },
		Spool: func() drain.Status {
			return drain.Status{Pending: 3, Failed: 2, FailedFiles: 1, FailedBytes: 4096, DBHealthy: true,
				SpoolWriteFailedAt: time.Unix(1700000000, 0)}
		},
		Parked: func() int { return 4 },
		Hotlist: func() hotlist.Stats {
			return hotlist.Stats{Queues: 2, Rings: 3, Ready: 5, Wheel: 1, WakesNow: 6, WakesTick: 2}
		},
		Peers:     func() peers.Stats { return peers.Stats{Sent: 8, Received: 6, ChangesReceived: 2} },
		Retention: func() retention.Stats { return retention.Stats{Segments: 4, SegBytes: 800, Cycles: 1} },
		History:   func() history.Stats { return history.Stats{Flushes: 12, Failures: 3, Dropped: 1, Pending: 2} },
		Requests:  reqs,
		Stages:    timers,
		Shards: func() []ShardReading {
			return []ShardReading{
				{Shard: 0, Pool: poolStat{}, Commits: 5, Frames: 90, DBHealthy: true, PushLimit: 32},
				{Shard: 1, Pool: poolStat{}, Commits: 2, Frames: 7, SpoolPending: 9, PushLimit: 8},
			}
		},
	}
}
