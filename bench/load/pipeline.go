package load

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/bench/verify"
)

// PipelineConfig configures the ordered pipeline of docs/benchmarks.md, scaled by flags.
type PipelineConfig struct {
	Common
	// ConsumerURLs, when set, are the brokers the consumers use instead of URL
	// (producers always push to URL): consumer i starts on ConsumerURLs[i mod n] and
	// fails over to the next when its broker stops answering.
	ConsumerURLs []string
	Dir          string        // run directory: stage logs, produced.meta, stages
	Prefix       string        // queue name prefix, so runs do not share queues
	Entities     int           // entities per flow; each owns one partition in every queue
	Rate         float64       // ingress events per second, both flows together
	Ramp         time.Duration // linear ramp before the measured Duration
	Fanout       int           // consumer groups on each derived queue
	WorkMin      time.Duration // simulated first-stage work per pop, uniform in [WorkMin, WorkMax]
	WorkMax      time.Duration
	PopBatch     int
	PopParts     int // partitions per wildcard pop
	Consumers    int // consumers per (queue, group)
	Producers    int // ingress connections per flow
	Drain        time.Duration
	// Queue options (docs/api.md §5.6).
	DedupWindow, CompletedRetention, LeaseTime int
}

// flow is one of the two chains: ingress queue -> first-stage group -> derived queue ->
// fan-out groups.
type flow struct {
	key              string // entity prefix in the logs: "A" or "B"
	ingress, derived string
	stage            string   // first-stage group
	fanout           []string // derived groups
}

// stage is one verified (queue, group) stream.
type stage struct {
	name    string
	flow    string // entity prefix of the stage's flow
	log     *verify.StageLog
	seen0   []atomic.Bool // entity index -> sequence 0 received (warm-up)
	counter string        // meter counter of delivered messages
}

type pipeline struct {
	cfg    PipelineConfig
	m      *Meter
	flows  []flow
	stages map[string]*stage // queue + "_" + group
	order  []string
	next   [][]int64 // flow -> entity -> next sequence
	mu     sync.Mutex
}

// pipeMsg is the payload of every pipeline message.
type pipeMsg struct {
	E int   `json:"e"` // entity index
	S int64 `json:"s"` // sequence
	T int64 `json:"t"` // scheduled ingress instant, ns
}

// RunPipeline runs the pipeline and verifies it. The report's verdict is the run's.
func RunPipeline(ctx context.Context, cfg PipelineConfig) (Summary, verify.Report, error) {
	p := &pipeline{cfg: cfg, stages: make(map[string]*stage)}
	p.m = NewMeter("pipeline", cfg.Out, "events", "db", "cal", "ota", "otap", "derived",
		"acks", "ackErr", "pushErr", "pushRetry", "popErr")
	p.m.Gauge("backlogA", func() int64 { return p.m.Get("events")/2 - p.m.Get("db") })
	p.m.Gauge("backlogB", func() int64 { return p.m.Get("events")/2 - p.m.Get("cal") })
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return Summary{}, verify.Report{}, fmt.Errorf("pipeline: %w", err)
	}
	if err := p.setup(); err != nil {
		return Summary{}, verify.Report{}, err
	}
	s, rep, err := p.run(ctx)
	return s, rep, err
}

func (p *pipeline) setup() error {
	c := p.cfg
	var err error
	mk := func(key, in, st, der, fan, cnt1, cnt2 string) flow {
		f := flow{key: key, ingress: c.Prefix + "-" + in, derived: c.Prefix + "-" + der, stage: st}
		err = errors.Join(err, p.addStage(key, f.ingress, st, cnt1))
		for i := 1; i <= c.Fanout; i++ {
			g := fmt.Sprintf("%s-%d", fan, i)
			f.fanout = append(f.fanout, g)
			err = errors.Join(err, p.addStage(key, f.derived, g, cnt2))
		}
		return f
	}
	p.flows = []flow{
		mk("A", "avail", "cm-db", "ota-sync", "ota", "db", "ota"),
		mk("B", "prices", "cm-cal", "ota-prices", "otap", "cal", "otap"),
	}
	if err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	p.next = make([][]int64, len(p.flows))
	for i := range p.next {
		p.next[i] = make([]int64, c.Entities)
	}
	if err := os.WriteFile(filepath.Join(c.Dir, verify.StagesFile), []byte(p.stageList()), 0o644); err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	cl, err := NewClient(c.URL, 30*time.Second)
	if err != nil {
		return err
	}
	defer cl.Close()
	for _, f := range p.flows {
		for _, q := range []string{f.ingress, f.derived} {
			if err := cl.Configure(q, map[string]any{"dedupWindowSeconds": c.DedupWindow,
				"completedRetentionSeconds": c.CompletedRetention, "leaseTime": c.LeaseTime}); err != nil {
				return fmt.Errorf("pipeline: configure %s: %w", q, err)
			}
		}
	}
	return nil
}

// stageList is the run directory's stages file: the table order, and each stage's
// ground truth (its flow's produced file).
func (p *pipeline) stageList() string {
	s := "# stage produced-file\n"
	for _, n := range p.order {
		s += n + " " + producedFile(p.stages[n].flow) + "\n"
	}
	return s
}

// producedFile is the ground truth of one flow: the flows have separate producers and
// entity sets, so a stage is checked against its own flow only.
func producedFile(flowKey string) string { return "produced-" + flowKey + ".meta" }

func (p *pipeline) addStage(key, queue, group, counter string) error {
	name := queue + "_" + group
	log, err := verify.NewStageLog(filepath.Join(p.cfg.Dir, name+verify.LogSuffix))
	if err != nil {
		return err
	}
	p.stages[name] = &stage{name: name, flow: key, log: log, seen0: make([]atomic.Bool, p.cfg.Entities), counter: counter}
	p.order = append(p.order, name)
	return nil
}

func entityKey(flowKey string, e int) string { return fmt.Sprintf("%s.e%d", flowKey, e) }
func partition(e int) string                 { return fmt.Sprintf("e%d", e) }

// snapshot reads every counter.
func (p *pipeline) snapshot() map[string]int64 {
	out := make(map[string]int64)
	for _, n := range p.m.names {
		out[n] = p.m.Get(n)
	}
	return out
}

// figures adds the measured-phase rates and the verdict to the summary. A message
// operation is a push of one message, a delivery of one message, or an ack of one.
func (p *pipeline) figures(s *Summary, mark, end map[string]int64, measured time.Duration, rep verify.Report) {
	d := func(n string) float64 { return float64(end[n] - mark[n]) }
	sec := measured.Seconds()
	delivered := d("db") + d("cal") + d("ota") + d("otap")
	ops := d("events") + d("derived") + delivered + d("acks")
	s.Extra = map[string]any{
		"measured_s":      sec,
		"events_per_s":    d("events") / sec,
		"msg_ops_per_s":   ops / sec,
		"delivered_per_s": delivered / sec,
		"pass":            rep.Pass,
	}
	if _, ok := end["dbCommits"]; ok {
		s.Extra["pg_commits_per_s"] = d("dbCommits") / sec
	}
}
