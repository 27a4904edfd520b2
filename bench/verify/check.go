package verify

import (
	"fmt"
	"math/bits"
	"os"
	"slices"
)

// Stage is one verified stream: a (queue, group) pair and its log.
type Stage struct {
	Name string // "<queue>_<group>", the row label
	Path string // the stage log
	// Produced, when not nil, is this stage's ground truth instead of the one passed to
	// Check. Give each flow its own: every produced entity a stage never receives counts
	// as entirely in flight for that stage.
	Produced map[string]Produced
}

// Options carries what the run knows beyond the files.
type Options struct {
	// AckErrors is the number of acknowledgements that failed during the run. When it is
	// above zero, order violations are reported but not fatal (see the package doc).
	AckErrors int64
}

// Check verifies every stage against its ground truth and returns the report, stages in
// the order given. An error (unreadable or malformed log, a span beyond MaxSpan) means
// no verdict at all, never a PASS.
func Check(produced map[string]Produced, stages []Stage, opts Options) (Report, error) {
	r := Report{AckErrors: opts.AckErrors, Pass: true, Stages: make([]StageReport, 0, len(stages))}
	for _, st := range stages {
		truth := st.Produced
		if truth == nil {
			truth = produced
		}
		if err := validProduced(truth); err != nil {
			return Report{}, fmt.Errorf("verify: stage %s: %w", st.Name, err)
		}
		c, err := checkStage(st.Path, truth)
		if err != nil {
			return Report{}, err
		}
		sr := StageReport{Name: st.Name, Counts: c, Pass: c.pass(opts.AckErrors)}
		r.Stages = append(r.Stages, sr)
		r.Total.add(c)
		r.Pass = r.Pass && sr.Pass
	}
	return r, nil
}

// validProduced rejects ground truth the arithmetic is not defined for (a hand-built
// map may hold anything ReadProduced would refuse).
func validProduced(produced map[string]Produced) error {
	for name, p := range produced {
		if err := p.valid(); err != nil {
			return fmt.Errorf("produced entity %q: %w", name, err)
		}
	}
	return nil
}

// pass is the verdict rule: gaps always fail, order violations fail unless acks failed.
func (c Counts) pass(ackErrors int64) bool {
	return c.Gaps == 0 && (c.Violations == 0 || ackErrors > 0)
}

// checkStage streams one stage log; memory is the per-entity state, not the file.
func checkStage(path string, produced map[string]Produced) (Counts, error) {
	f, err := os.Open(path)
	if err != nil {
		return Counts{}, fmt.Errorf("verify: %w", err)
	}
	defer f.Close()
	var c Counts
	entities := make(map[string]*entity, len(produced))
	err = eachLine(f, func(line []byte) error {
		name, seq, err := parseLine(line)
		if err != nil {
			return err
		}
		e := entities[string(name)] // no allocation for the lookup
		if e == nil {
			p, known := produced[string(name)]
			e = &entity{base: p.Base, max: p.Max, known: known}
			entities[string(name)] = e
		}
		if err := c.observe(e, seq); err != nil {
			return fmt.Errorf("entity %q: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return Counts{}, fmt.Errorf("verify: %s:%w", path, err)
	}
	c.settle(entities, produced)
	return c, nil
}

// observe applies one line to its entity and the stage counts.
func (c *Counts) observe(e *entity, seq int64) error {
	c.Msgs++
	if !e.known || seq < e.base || seq > e.max {
		c.Unproduced++
	}
	first, err := e.seen.add(seq)
	if err != nil {
		return err
	}
	if !first {
		// Redelivery: counted, and skipped by the ordering check on purpose.
		c.Dups++
		return nil
	}
	c.Unique++
	if e.any && seq < e.maxSeen {
		c.Violations++
	}
	if !e.any || seq > e.maxSeen {
		e.maxSeen, e.any = seq, true
	}
	if seq >= e.base {
		e.inRange++
	}
	return nil
}

// settle derives gaps and in-flight once the whole log has been read.
func (c *Counts) settle(entities map[string]*entity, produced map[string]Produced) {
	for _, e := range entities {
		c.Gaps += gapTerm(e.maxSeen, e.base, e.inRange)
	}
	for name, p := range produced {
		frontier := p.Base - 1 // nothing seen: everything from base on is in flight
		if e := entities[name]; e != nil && e.any {
			frontier = max(frontier, e.maxSeen)
		}
		c.InFlight += max(0, p.Max-frontier)
	}
}

// gapTerm is one entity's contribution to gaps: sequences in [base, maxSeen] that never
// arrived although maxSeen did. distinct counts the sequences seen in that range. The
// clamp is per entity on purpose: a negative term (a base above everything seen) must
// not cancel another entity's real gap in the sum.
func gapTerm(maxSeen, base, distinct int64) int64 {
	return max(0, maxSeen-base+1-distinct)
}

// entity is the per-entity state of one stage.
type entity struct {
	base, max int64 // ground truth; zero when !known
	known     bool  // listed in the produced file
	any       bool  // at least one line seen
	maxSeen   int64 // highest sequence seen, which is also the highest first occurrence
	inRange   int64 // distinct sequences seen at or above base
	seen      seqSet
}

// seqSet is a set of sequences as a bitset over [off, off+64*len(words)), grown on
// demand in both directions. Sequences of an entity are dense, so it costs one bit per
// sequence of the span actually seen.
type seqSet struct {
	off   int64 // sequence of bit 0 of words[0]; a multiple of 64
	words []uint64
}

// add inserts seq and reports whether it was not already present.
func (s *seqSet) add(seq int64) (bool, error) {
	if s.words == nil {
		s.off = seq &^ 63
		s.words = make([]uint64, 1, 4)
	}
	if seq < s.off {
		if err := s.growDown(seq); err != nil {
			return false, err
		}
	}
	i := (seq - s.off) >> 6
	if i >= int64(len(s.words)) {
		if err := s.growUp(i); err != nil {
			return false, err
		}
	}
	bit := uint64(1) << (uint64(seq-s.off) & 63)
	if s.words[i]&bit != 0 {
		return false, nil
	}
	s.words[i] |= bit
	return true, nil
}

// growUp makes words[i] addressable, amortised like append.
func (s *seqSet) growUp(i int64) error {
	if (i+1)*64 > MaxSpan {
		return s.spanError(s.off + i*64)
	}
	n := len(s.words)
	s.words = slices.Grow(s.words, int(i)+1-n)[:i+1]
	clear(s.words[n:])
	return nil
}

// growDown moves off down to cover seq. Rare (a sequence below every earlier one), so
// it simply copies.
func (s *seqSet) growDown(seq int64) error {
	off := seq &^ 63
	k := (s.off - off) >> 6
	if (k+int64(len(s.words)))*64 > MaxSpan {
		return s.spanError(seq)
	}
	words := make([]uint64, int(k)+len(s.words))
	copy(words[k:], s.words)
	s.off, s.words = off, words
	return nil
}

func (s *seqSet) spanError(seq int64) error {
	return fmt.Errorf("sequence %d is too far from the others of its entity (%d..%d seen so far; limit MaxSpan=%d)",
		seq, s.lowest(), s.highest(), MaxSpan)
}

// lowest and highest are only for error messages; the set is never empty when called.
func (s *seqSet) lowest() int64 {
	for i, w := range s.words {
		if w != 0 {
			return s.off + int64(i)*64 + int64(bits.TrailingZeros64(w))
		}
	}
	return s.off
}

func (s *seqSet) highest() int64 {
	for i := len(s.words) - 1; i >= 0; i-- {
		if w := s.words[i]; w != 0 {
			return s.off + int64(i)*64 + 63 - int64(bits.LeadingZeros64(w))
		}
	}
	return s.off
}
