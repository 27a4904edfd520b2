package push

import (
	"context"
	"errors"

	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/ports"
)

// divert spools, without trying the database, every group that must not go there now:
// all of them (all: under push maintenance or while the database is known to be away),
// any group whose partition still has spooled records (they must commit first, so the
// partition keeps its order across the outage), and the deferred groups (their
// encryption is decided at replay). It returns the diverted groups, spooled whole, and
// the status of all their frames: buffered, or failed when the spool write failed.
func (s *Service) divert(ctx context.Context, tenant string, groups []*fusion.Group, all bool, deferred groupSet) (groupSet, Status) {
	if s.opts.Spool == nil {
		return groupSet{}, ""
	}
	diverted := deferred
	var refs []frameRef
	for gi, g := range groups {
		if all || diverted.has(gi) || s.opts.Spool.Pending(tenant, g.Queue, g.Partition) {
			diverted.add(gi)
			for k := range g.Frames {
				refs = append(refs, frameRef{gi, k})
			}
		}
	}
	if len(refs) == 0 {
		return groupSet{}, ""
	}
	return diverted, s.spoolFrames(ctx, tenant, groups, refs)
}

// spoolFailed spools the frames of the groups sent to the database whose bundle failed
// and returns their new status by frame; nil when there are none.
func (s *Service) spoolFailed(ctx context.Context, tenant string, groups []*fusion.Group, diverted groupSet) map[frameRef]Status {
	if s.opts.Spool == nil {
		return nil
	}
	var refs []frameRef
	down := false
	for gi, g := range groups {
		if diverted.has(gi) {
			continue
		}
		for k, r := range g.Results {
			if r.Status == fusion.Error && !errors.Is(r.Err, fusion.ErrEncrypts) { // refused: never spooled as it is
				refs = append(refs, frameRef{gi, k})
				down = down || outage(r.Err)
			}
		}
	}
	if len(refs) == 0 {
		return nil
	}
	if down && s.opts.BundleFailed != nil {
		s.opts.BundleFailed()
	}
	st := s.spoolFrames(ctx, tenant, groups, refs)
	out := make(map[frameRef]Status, len(refs))
	for _, ref := range refs {
		out[ref] = st
	}
	return out
}

// outage reports whether a bundle's failure says the database is away (unreachable, or
// too slow to answer): every push is then spooled until it answers again. Any other
// failure (a bundle the store gave up on after colliding with concurrent deletions of
// its queues, ports.ErrConflict; a broker bug) spools the frames it failed and nothing
// else.
func outage(err error) bool {
	return err == nil || errors.Is(err, ports.ErrUnavailable) || errors.Is(err, ports.ErrTimeout) ||
		errors.Is(err, fusion.ErrClosed)
}

// spoolFrames makes frames refs of groups durable in the spool in one append, and
// returns their status: buffered, or failed when it cannot.
func (s *Service) spoolFrames(ctx context.Context, tenant string, groups []*fusion.Group, refs []frameRef) Status {
	recs := make([]spool.Record, len(refs))
	for i, ref := range refs {
		recs[i] = record(tenant, groups[ref.group], ref.frame)
	}
	err := s.opts.Spool.Append(ctx, recs)
	if err == nil {
		return StatusBuffered
	}
	logged := false
	s.spoolLog.Do(func() {
		logged = true
		s.opts.Logger.Error("push: spool write failed, answering failed", "items", len(recs), "err", err,
			"failures_since_last_line", s.spoolLogSkip.Swap(0))
	})
	if !logged {
		s.spoolLogSkip.Add(1)
	}
	return StatusFailed
}

// record is frame k of g as a spool record.
func record(tenant string, g *fusion.Group, k int) spool.Record {
	f := &g.Frames[k]
	return spool.Record{Tenant: tenant, Queue: g.Queue, Partition: g.Partition, TransactionID: f.TransactionID,
		ProducerSub: f.ProducerSub, MessageID: f.ID, TraceID: f.TraceID, HasTrace: f.HasTrace,
		Encrypted: f.Encrypted, Payload: f.Payload}
}
