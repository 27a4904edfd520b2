package load

import (
	"bytes"
	"fmt"
	"strconv"
)

// Samples are one scrape of GET /metrics/prometheus: each sample's value by its name as
// exposed, labels included (`queen_hotlist_rings`, `queen_admission_budget{lane="push"}`).
type Samples map[string]float64

// Broker samples the hot-list modes read. Not every Queen-compatible broker exposes
// them: a missing one makes its figure absent, never zero.
const (
	SampleRSS        = "process_resident_memory_bytes" // resident set size, bytes
	SampleCPU        = "process_cpu_seconds_total"     // user + system CPU, seconds
	SampleDBCommits  = "queen_db_commits_total"        // pg_stat_database.xact_commit of the broker's database
	SampleHeapInuse  = "go_memstats_heap_inuse_bytes"  // Go heap spans in use, bytes
	SampleGCCount    = "go_gc_duration_seconds_count"  // completed GC cycles
	SamplePopParked  = "queen_pop_parked"              // long-poll pops parked now
	SampleHLQueues   = "queen_hotlist_queues"
	SampleHLRings    = "queen_hotlist_rings"
	SampleHLReady    = "queen_hotlist_ready"
	SampleHLWheel    = "queen_hotlist_wheel"
	SampleHLRows     = "queen_hotlist_reseed_rows_total"
	SampleHLSwept    = "queen_hotlist_swept_total"
	SampleHLReseeds  = "queen_hotlist_reseeds_total"
	SampleHLCheckout = "queen_hotlist_checkouts_total"
)

// ParseSamples reads the Prometheus text exposition format: comment and blank lines are
// skipped; a sample line is a name, optional {labels} (quoted values may hold braces,
// spaces and escaped quotes), a value and an optional timestamp. Lines it cannot read
// are skipped: one odd family must not hide the others.
func ParseSamples(body []byte) Samples {
	s := Samples{}
	for line := range bytes.SplitSeq(body, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		end := sampleNameEnd(line)
		if end <= 0 || end >= len(line) {
			continue
		}
		fields := bytes.Fields(line[end:])
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(string(fields[0]), 64)
		if err != nil {
			continue
		}
		s[string(line[:end])] = v
	}
	return s
}

// sampleNameEnd returns the length of the sample's name with its labels, or -1 when the
// labels are not closed.
func sampleNameEnd(line []byte) int {
	i := bytes.IndexAny(line, "{ \t")
	if i < 0 || line[i] != '{' {
		return i
	}
	quoted := false
	for j := i + 1; j < len(line); j++ {
		switch c := line[j]; {
		case quoted && c == '\\':
			j++ // the escaped character, whatever it is
		case c == '"':
			quoted = !quoted
		case !quoted && c == '}':
			return j + 1
		}
	}
	return -1
}

// Get returns a sample and whether the broker exposed it.
func (s Samples) Get(name string) (float64, bool) {
	v, ok := s[name]
	return v, ok
}

// Samples scrapes /metrics/prometheus once. On queen-go a scrape also reads
// pg_stat_database (queen_db_commits_total): one SQL transaction per scrape, which is why
// the idle mode scrapes only at the ends of its measured phase.
func (c *Client) Samples() (Samples, error) {
	code, body, err := c.Do("GET", "/metrics/prometheus", nil)
	if err != nil {
		return nil, err
	}
	if code != 200 {
		return nil, statusErr("metrics", code, body)
	}
	return ParseSamples(body), nil
}

// mb renders bytes as MiB with one decimal, for summaries.
func mb(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }
