package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-go/queen/core/hotlist"
	"github.com/queen-go/queen/core/peers"
	"github.com/queen-go/queen/ports"
)

// hotlistCollector exports the hot-list and the peer hints. It reads each source once
// per scrape (the hot-list's sizes walk every ring).
type hotlistCollector struct {
	hot   func() hotlist.Stats
	peers func() peers.Stats // nil: peer hints off
}

var (
	hlQueues     = prometheus.NewDesc("queen_hotlist_queues", "Queues the hot-list holds state for.", nil, nil)
	hlRings      = prometheus.NewDesc("queen_hotlist_rings", "Live (queue, consumer group) rings.", nil, nil)
	hlReady      = prometheus.NewDesc("queen_hotlist_ready", "Partitions ready for the next pops, over every ring.", nil, nil)
	hlWheel      = prometheus.NewDesc("queen_hotlist_wheel", "Partitions waiting in the wheel (deferral, lease park, revisit).", nil, nil)
	hlMarks      = prometheus.NewDesc("queen_hotlist_marks_total", "Marks: partitions that received data, by where the news came from.", []string{"source"}, nil)
	hlCheckouts  = prometheus.NewDesc("queen_hotlist_checkouts_total", "Wildcard pops the hot-list served.", nil, nil)
	hlCandidates = prometheus.NewDesc("queen_hotlist_candidates_total", "Candidate partitions handed to pops.", nil, nil)
	hlVerdicts   = prometheus.NewDesc("queen_hotlist_verdicts_total", "Claim verdicts on candidates, by kind.", []string{"verdict"}, nil)
	hlPromotes   = prometheus.NewDesc("queen_hotlist_promotes_total", "Partitions made ready again by an ack that released a lease.", nil, nil)
	hlReclaimed  = prometheus.NewDesc("queen_hotlist_reclaimed_total", "In-flight entries a reseed took back from dropped pops.", nil, nil)
	hlReseeds    = prometheus.NewDesc("queen_hotlist_reseeds_total", "Reseeds of rings (floor and cold pops).", nil, nil)
	hlReseedRows = prometheus.NewDesc("queen_hotlist_reseed_rows_total", "Partitions the reseeds returned.", nil, nil)
	hlReseedErrs = prometheus.NewDesc("queen_hotlist_reseed_errors_total", "Reseeds that failed.", nil, nil)
	hlSwept      = prometheus.NewDesc("queen_hotlist_swept_total", "Queues whose state the idle sweep dropped.", nil, nil)
	hlWakes      = prometheus.NewDesc("queen_hotlist_wakes_total",
		"Wake calls for parked pops: at once (when=\"now\": a commit that found no wake outstanding, a transaction, a hint) or by the wake tick (when=\"tick\").", []string{"when"}, nil)
	peerHints    = prometheus.NewDesc("queen_peer_hints_total", "Hints exchanged with the other brokers, by direction.", []string{"direction"}, nil)
	peerDropped  = prometheus.NewDesc("queen_peer_hints_dropped_total", "Hints dropped because too many were pending.", nil, nil)
	peerFailures = prometheus.NewDesc("queen_peer_hints_publish_failures_total", "Hint batches that could not be published.", nil, nil)
	peerChanges  = prometheus.NewDesc("queen_peer_queue_changes_total",
		"Queue changes (configures, deletions) announced to the other brokers (sent) or heard from them (received).", []string{"direction"}, nil)
)

// verdictNames are the label values of the verdict kinds.
var verdictNames = map[ports.VerdictKind]string{ports.VerdictSkipped: "skipped", ports.VerdictTook: "took",
	ports.VerdictEmpty: "empty", ports.VerdictLeased: "leased", ports.VerdictBusy: "busy", ports.VerdictGone: "gone"}

func (c hotlistCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{hlQueues, hlRings, hlReady, hlWheel, hlMarks, hlCheckouts, hlCandidates,
		hlVerdicts, hlPromotes, hlReclaimed, hlReseeds, hlReseedRows, hlReseedErrs, hlSwept, hlWakes, peerHints, peerDropped, peerFailures, peerChanges} {
		ch <- d
	}
}

func (c hotlistCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.hot()
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	count := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(hlQueues, st.Queues)
	gauge(hlRings, st.Rings)
	gauge(hlReady, st.Ready)
	gauge(hlWheel, st.Wheel)
	count(hlMarks, st.MarksLocal, "local")
	count(hlMarks, st.MarksRemote, "peer")
	count(hlCheckouts, st.Checkouts)
	count(hlCandidates, st.Candidates)
	for kind, name := range verdictNames {
		count(hlVerdicts, st.Verdicts[kind], name)
	}
	count(hlPromotes, st.Promotes)
	count(hlReclaimed, st.Reclaimed)
	count(hlReseeds, st.Reseeds)
	count(hlReseedRows, st.ReseedRows)
	count(hlReseedErrs, st.ReseedErrors)
	count(hlSwept, st.Swept)
	count(hlWakes, st.WakesNow, "now")
	count(hlWakes, st.WakesTick, "tick")
	if c.peers == nil {
		return
	}
	ps := c.peers()
	count(peerHints, ps.Sent, "sent")
	count(peerHints, ps.Received, "received")
	count(peerDropped, ps.Dropped)
	count(peerFailures, ps.Failures)
	count(peerChanges, ps.ChangesSent, "sent")
	count(peerChanges, ps.ChangesReceived, "received")
}
