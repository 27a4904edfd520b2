package verify

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Push results a producer's ledger records. Accepted ones (queued, buffered, duplicate)
// are promises: the message must be delivered.
const (
	StatusQueued    = "queued"
	StatusBuffered  = "buffered"
	StatusDuplicate = "duplicate"
)

// Accepted reports whether a push status is a promise to deliver.
func Accepted(status string) bool {
	return status == StatusQueued || status == StatusBuffered || status == StatusDuplicate
}

// Ledger is the producers' record of every push result, per (partition, seq): the
// ground truth of the fault verifier (docs/reliability.md). Safe for concurrent use.
type Ledger struct {
	mu    sync.Mutex
	items map[string]map[int64]string // partition → seq → status
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{items: make(map[string]map[int64]string)} }

// Record notes one push result. An accepted status is never replaced by the failure of
// a later retry of the same item: the first acceptance is the promise.
func (l *Ledger) Record(partition string, seq int64, status string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.items[partition]
	if p == nil {
		p = make(map[int64]string)
		l.items[partition] = p
	}
	if old, ok := p[seq]; ok && Accepted(old) {
		return
	}
	p[seq] = status
}

// Accepted returns how many items the broker accepted.
func (l *Ledger) Accepted() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, p := range l.items {
		for _, st := range p {
			if Accepted(st) {
				n++
			}
		}
	}
	return n
}

// Count returns how many items hold status.
func (l *Ledger) Count(status string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, p := range l.items {
		for _, st := range p {
			if st == status {
				n++
			}
		}
	}
	return n
}

// Status returns the recorded status of one item ("" when never pushed).
func (l *Ledger) Status(partition string, seq int64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.items[partition][seq]
}

// Delivery is one message as a consumer received it.
type Delivery struct {
	Partition     string
	Seq           int64
	MessageID     string // the broker's message id
	DeliveryCount int    // the pop answer's deliveryAttempt (1 = first delivery)
}

// GroupLog collects one consumer group's deliveries, in the order its consumers
// received them (per partition that is the order that matters: one partition is leased
// to one consumer at a time). Safe for concurrent use.
type GroupLog struct {
	Name string

	mu         sync.Mutex
	deliveries []Delivery
	ackFailed  map[string]bool // partitions where an ack failed (transiently or on purpose)
}

// NewGroupLog returns an empty log for the named group.
func NewGroupLog(name string) *GroupLog {
	return &GroupLog{Name: name, ackFailed: make(map[string]bool)}
}

// Add appends deliveries.
func (g *GroupLog) Add(ds ...Delivery) {
	g.mu.Lock()
	g.deliveries = append(g.deliveries, ds...)
	g.mu.Unlock()
}

// AckFailed notes that an ack of a delivery of partition failed: a redelivery there may
// legitimately reorder first occurrences, so order violations in it are not fatal.
func (g *GroupLog) AckFailed(partition string) {
	g.mu.Lock()
	g.ackFailed[partition] = true
	g.mu.Unlock()
}

// Len returns how many deliveries the log holds.
func (g *GroupLog) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.deliveries)
}

// FaultCounts are one group's counts under the verifier's rules in docs/reliability.md.
type FaultCounts struct {
	Acknowledged      int64 // ledger items the broker accepted (queued, buffered, duplicate)
	Delivered         int64 // deliveries received
	Unique            int64 // first occurrences
	Redeliveries      int64 // a seq again with deliveryCount > 1 and the same message id: allowed
	StoredDuplicates  int64 // a seq again with deliveryCount 1 or another message id: two stored copies, fatal
	Violations        int64 // first occurrences below the highest one: fatal
	RelaxedViolations int64 // the same in a partition where an ack failed: reported only
	Gaps              int64 // per partition max(0, maxSeen - base + 1 - distinct): fatal
	Lost              int64 // accepted ledger items never delivered: fatal
	InFlight          int64 // per partition, highest accepted seq above the highest seen: fatal after the drain
	Unproduced        int64 // deliveries of a seq the ledger never recorded: fatal (the verifier cannot vouch for them)
}

// Pass is the verdict: nothing lost, no stored duplicate, strict order, nothing in flight.
func (c FaultCounts) Pass() bool {
	return c.StoredDuplicates == 0 && c.Violations == 0 && c.Gaps == 0 && c.Lost == 0 && c.InFlight == 0 && c.Unproduced == 0
}

// FaultReport is the verdict over every group.
type FaultReport struct {
	Groups  []GroupFaults
	Pass    bool
	Details []string // the first problems found, "group partition seq: what", for the failure message
}

// GroupFaults is one group's counts and verdict.
type GroupFaults struct {
	Group string
	FaultCounts
	Pass bool
}

// maxDetails bounds FaultReport.Details.
const maxDetails = 20

// String renders the report as a markdown table and the details.
func (r FaultReport) String() string {
	var b strings.Builder
	b.WriteString("| group | acknowledged | delivered | lost | order violations | stored duplicates | gaps | in flight | redeliveries | verdict |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, g := range r.Groups {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d (+%d relaxed) | %d | %d | %d | %d | %s |\n", g.Group, g.Acknowledged,
			g.Delivered, g.Lost, g.Violations, g.RelaxedViolations, g.StoredDuplicates, g.Gaps, g.InFlight,
			g.Redeliveries, verdict(g.Pass))
	}
	for _, d := range r.Details {
		b.WriteString("  " + d + "\n")
	}
	return b.String()
}

// CheckLedger verifies every group's deliveries against the ledger: every accepted item
// delivered to every group, per partition in strict order, never two stored copies.
// Call it after the final drain (producers stopped, consumers drained).
func CheckLedger(l *Ledger, groups ...*GroupLog) FaultReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := FaultReport{Pass: true}
	for _, g := range groups {
		g.mu.Lock()
		gf := checkGroup(l.items, g, &r.Details)
		g.mu.Unlock()
		r.Groups = append(r.Groups, gf)
		r.Pass = r.Pass && gf.Pass
	}
	return r
}

// partitionSeen is what one group received of one partition: the sequences, the message
// id of each first delivery, the highest sequence and how many distinct ones.
type partitionSeen struct {
	seen     seqSet
	first    map[int64]string // seq → message id of its first delivery
	maxSeen  int64
	any      bool
	distinct int64
}

func checkGroup(items map[string]map[int64]string, g *GroupLog, details *[]string) GroupFaults {
	var c FaultCounts
	note := func(format string, args ...any) {
		if len(*details) < maxDetails {
			*details = append(*details, g.Name+" "+fmt.Sprintf(format, args...))
		}
	}
	parts := make(map[string]*partitionSeen)
	for i, d := range g.deliveries {
		c.Delivered++
		p := parts[d.Partition]
		if p == nil {
			p = &partitionSeen{first: make(map[int64]string)}
			parts[d.Partition] = p
		}
		if _, ok := items[d.Partition][d.Seq]; !ok {
			c.Unproduced++
			note("%s %d: delivered but never pushed", d.Partition, d.Seq)
		}
		first, err := p.seen.add(d.Seq)
		if err != nil {
			c.Unproduced++
			note("%s %d: %v", d.Partition, d.Seq, err)
			continue
		}
		if !first {
			if d.DeliveryCount <= 1 || d.MessageID != p.first[d.Seq] {
				c.StoredDuplicates++
				if c.StoredDuplicates == 1 {
					note("%s: deliveries (seq@attempt) before the first second copy: %s", d.Partition, history(g.deliveries[:i+1], d.Partition, 40))
				}
				note("%s %d: delivered again with deliveryAttempt %d, message id %s (first: %s): two stored copies",
					d.Partition, d.Seq, d.DeliveryCount, d.MessageID, p.first[d.Seq])
			} else {
				c.Redeliveries++
			}
			continue
		}
		c.Unique++
		p.first[d.Seq] = d.MessageID
		p.distinct++
		if p.any && d.Seq < p.maxSeen {
			if g.ackFailed[d.Partition] {
				c.RelaxedViolations++
			} else {
				c.Violations++
				note("%s %d: first delivered after %d", d.Partition, d.Seq, p.maxSeen)
			}
		}
		if !p.any || d.Seq > p.maxSeen {
			p.maxSeen, p.any = d.Seq, true
		}
	}
	for name, ledger := range items {
		p := parts[name]
		var maxAccepted int64 = -1
		lost := []int64{}
		for seq, st := range ledger {
			if !Accepted(st) {
				continue
			}
			c.Acknowledged++
			maxAccepted = max(maxAccepted, seq)
			if p == nil || !p.has(seq) {
				c.Lost++
				lost = append(lost, seq)
			}
		}
		if len(lost) > 0 {
			slices.Sort(lost)
			note("%s: %d accepted items never delivered, first %v", name, len(lost), lost[:min(5, len(lost))])
		}
		switch {
		case p == nil || !p.any:
			c.InFlight += maxAccepted + 1
		case maxAccepted > p.maxSeen:
			c.InFlight += maxAccepted - p.maxSeen
		}
	}
	for name, p := range parts {
		// Sequences start at 0 per partition (the producers' rule).
		if gaps := gapTerm(p.maxSeen, 0, p.distinct); p.any && gaps > 0 {
			c.Gaps += gaps
			note("%s: %d sequences below %d never delivered", name, gaps, p.maxSeen)
		}
	}
	return GroupFaults{Group: g.Name, FaultCounts: c, Pass: c.Pass()}
}

// has reports whether seq was delivered.
func (p *partitionSeen) has(seq int64) bool {
	if seq < p.seen.off || p.seen.words == nil {
		return false
	}
	i := (seq - p.seen.off) >> 6
	return i < int64(len(p.seen.words)) && p.seen.words[i]&(uint64(1)<<(uint64(seq-p.seen.off)&63)) != 0
}

// history renders the last n deliveries of partition in ds as "seq@attempt ...".
func history(ds []Delivery, partition string, n int) string {
	var out []string
	for i := len(ds) - 1; i >= 0 && len(out) < n; i-- {
		if ds[i].Partition == partition {
			out = append(out, fmt.Sprintf("%d@%d", ds[i].Seq, ds[i].DeliveryCount))
		}
	}
	slices.Reverse(out)
	return strings.Join(out, " ")
}
