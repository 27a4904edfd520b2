package push

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/queen-go/queen/core/encryption"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/ports"
)

// The store refuses a segment holding plaintext for a queue that encrypts
// (ports.SegmentEncrypted, fusion.ErrEncrypts): this broker decided "plaintext" from a
// cached encryptionEnabled flag that another broker has since switched on. Its frames
// were not stored. The cached flag is forgotten at once, so the next push decides right,
// and the refused frames are never spooled as they are (the spool is for what the
// database could not take, and a replay would be refused alike):
//   - with a key, they are sealed (the flag read again) and pushed once more, so the
//     producer sees no difference;
//   - without a key, they fail with encryption.ErrNoKey, the answer of a push to a
//     queue known to encrypt.
// A frame refused again after its retry (the flag switched back and forth meanwhile)
// fails with the refusal: nothing was stored, and the producer may retry.

// resealRefused handles the refused frames of groups (after their bundles returned):
// it returns the error of each frame that failed for good, nil when none did. Frames sealed and pushed again get their new verdicts in place.
func (s *Service) resealRefused(ctx context.Context, tenant string, groups []*fusion.Group) map[frameRef]error {
	var refs []frameRef
	for gi, g := range groups {
		for k, r := range g.Results {
			if r.Status == fusion.Error && errors.Is(r.Err, fusion.ErrEncrypts) {
				refs = append(refs, frameRef{gi, k})
			}
		}
	}
	if len(refs) == 0 {
		return nil
	}
	for _, ref := range refs {
		s.opts.Encryption.Forget(tenant, groups[ref.group].Queue)
	}
	failed := make(map[frameRef]error, len(refs))
	if !s.opts.Encryption.HasKey() {
		for _, ref := range refs {
			failed[ref] = fmt.Errorf("queue %q: %w", groups[ref.group].Queue, encryption.ErrNoKey)
		}
		return failed
	}
	retry, where := s.sealAgain(ctx, tenant, groups, refs, failed)
	if len(retry) > 0 {
		var wg sync.WaitGroup
		for _, g := range retry {
			g.Done = wg.Done
		}
		wg.Add(len(retry))
		s.batcher.Submit(retry...)
		wg.Wait()
	}
	for ref, at := range where {
		v := retry[at.group].Results[at.frame]
		groups[ref.group].Results[ref.frame] = v
		if v.Status == fusion.Error && errors.Is(v.Err, fusion.ErrEncrypts) {
			failed[ref] = fmt.Errorf("queue %q: %w", groups[ref.group].Queue, v.Err)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return failed
}

// sealAgain seals the refused frames refs of groups with the flags read afresh, into one
// new group per original group, and says where each frame went in them. A
// frame that cannot be sealed fails in failed. The sealed frame replaces the original
// in its group too: if its new bundle fails (an outage), it is spooled sealed.
func (s *Service) sealAgain(ctx context.Context, tenant string, groups []*fusion.Group, refs []frameRef, failed map[frameRef]error) ([]*fusion.Group, map[frameRef]frameRef) {
	memo := s.opts.Encryption.Memo(ctx, true)
	var retry []*fusion.Group
	of := make(map[int]int) // original group -> its retry group
	where := make(map[frameRef]frameRef, len(refs))
	for _, ref := range refs {
		g := groups[ref.group]
		f := g.Frames[ref.frame]
		if err := memo.Seal(tenant, g.Queue, &f); err != nil {
			failed[ref] = err
			continue
		}
		g.Frames[ref.frame] = f
		ri, ok := of[ref.group]
		if !ok {
			ri = len(retry)
			of[ref.group] = ri
			retry = append(retry, &fusion.Group{Tenant: tenant, Queue: g.Queue, Partition: g.Partition, Minted: g.Minted})
		}
		r := retry[ri]
		where[ref] = frameRef{ri, len(r.Frames)}
		r.Frames = append(r.Frames, f)
		r.Hashes = append(r.Hashes, g.Hashes[ref.frame])
	}
	return retry, where
}

// refusedByStore reports whether err is the store's refusal of a transaction or streams
// cycle holding plaintext for a queue that encrypts (ports.PlainRefusal).
func refusedByStore(err error) bool {
	var rb *ports.RollbackError
	return errors.As(err, &rb) && rb.Reason == "encryption"
}
