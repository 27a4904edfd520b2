package load

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The broker's stage histograms (docs/api.md §5.13): where the time of a push, and of a
// message's way to a parked consumer, goes. A broker that does not expose them (not
// every Queen-compatible broker does) gives no breakdown.
const (
	FamilyPushStages = "queen_push_stage_seconds"
	FamilyPopStages  = "queen_pop_stage_seconds"
)

// StageFigure is one stage of a breakdown over a measured phase, in milliseconds.
type StageFigure struct {
	Stage string  `json:"stage"`
	Count float64 `json:"n"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P99   float64 `json:"p99_ms"`
}

// ScrapeAll reads every sample of GET /metrics/prometheus; ok is false when the broker
// did not answer it.
func (c *Client) ScrapeAll() (Samples, bool) {
	code, body, err := c.Do("GET", "/metrics/prometheus", nil)
	if err != nil || code != 200 {
		return nil, false
	}
	return ParseSamples(body), true
}

// Stages is the breakdown of family (a histogram labelled by stage) between two scrapes:
// the stages order lists first, in that order, then any other by name.
func Stages(before, after Samples, family string, order ...string) []StageFigure {
	type hist struct {
		count, sum float64
		buckets    map[float64]float64 // le -> cumulative count
	}
	hs := map[string]*hist{}
	get := func(stage string) *hist {
		h := hs[stage]
		if h == nil {
			h = &hist{buckets: map[float64]float64{}}
			hs[stage] = h
		}
		return h
	}
	for name, v := range after {
		base, labels, ok := strings.Cut(name, "{")
		if !ok || !strings.HasPrefix(base, family+"_") {
			continue
		}
		stage := labelValue(labels, "stage")
		if stage == "" {
			continue
		}
		d := v - before[name]
		switch strings.TrimPrefix(base, family+"_") {
		case "count":
			get(stage).count = d
		case "sum":
			get(stage).sum = d
		case "bucket":
			if le, err := strconv.ParseFloat(labelValue(labels, "le"), 64); err == nil {
				get(stage).buckets[le] = d
			}
		}
	}
	names := make([]string, 0, len(hs))
	for s := range hs {
		names = append(names, s)
	}
	slices.SortFunc(names, func(a, b string) int {
		ia, ib := slices.Index(order, a), slices.Index(order, b)
		if ia < 0 {
			ia = len(order)
		}
		if ib < 0 {
			ib = len(order)
		}
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
	out := make([]StageFigure, 0, len(names))
	for _, s := range names {
		h := hs[s]
		f := StageFigure{Stage: s, Count: h.count}
		if h.count > 0 {
			f.Mean = h.sum / h.count * 1e3
			f.P50 = bucketQuantile(h.buckets, h.count, 0.5) * 1e3
			f.P99 = bucketQuantile(h.buckets, h.count, 0.99) * 1e3
		}
		out = append(out, f)
	}
	return out
}

// labelValue returns the value of label name in a `a="x",b="y"}` label list.
func labelValue(labels, name string) string {
	i := strings.Index(labels, name+`="`)
	if i < 0 || i > 0 && labels[i-1] != ',' {
		return ""
	}
	rest := labels[i+len(name)+2:]
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return rest[:j]
}

// bucketQuantile estimates quantile q of a cumulative histogram as Prometheus'
// histogram_quantile does: linear within the bucket that holds it, the highest finite
// bound when it falls in +Inf.
func bucketQuantile(buckets map[float64]float64, count, q float64) float64 {
	les := make([]float64, 0, len(buckets))
	for le := range buckets {
		les = append(les, le)
	}
	slices.Sort(les)
	rank := q * count
	prevLe, prevN := 0.0, 0.0
	for _, le := range les {
		n := buckets[le]
		if n >= rank {
			if math.IsInf(le, 1) {
				return prevLe
			}
			if n == prevN {
				return le
			}
			return prevLe + (le-prevLe)*(rank-prevN)/(n-prevN)
		}
		prevLe, prevN = le, n
	}
	return prevLe
}

// printStages writes a breakdown as one line per stage.
func printStages(out io.Writer, title string, fs []StageFigure) {
	if out == nil || len(fs) == 0 {
		return
	}
	fmt.Fprintf(out, "   %s\n", title)
	for _, f := range fs {
		fmt.Fprintf(out, "     %-8s n %-8.0f mean %7.3f ms  p50 %7.3f ms  p99 %7.3f ms\n", f.Stage, f.Count, f.Mean, f.P50, f.P99)
	}
}
