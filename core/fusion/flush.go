package fusion

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/core/loglimit"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

// errBadResult marks a store answer the flush cannot route.
var errBadResult = errors.New("fusion: unroutable store result")

// flushPart is one partition's frames taken into a bundle.
type flushPart struct {
	s        *shard // owner: the flush outcome goes back to it
	opens    bool   // first part of a bundle its shard fired itself (counted in shard.bundles)
	p        *part
	refs     []ref
	since    int64         // the oldest frame's arrival, unix ns
	verified int64         // dedup cache watermark for the segment (-1: probe everything)
	seg      ports.Segment // built when the part is taken (shard.take), off the commit's path
	plan     plan
}

// plan maps a flushPart's frames onto its segment after layer-2 dedup.
type plan struct {
	firsts []int // per ref: index of the first ref with the same hash
	slot   []int // per ref that is a first: its frame index in the segment
}

// goFlush runs flush(bundle) on a goroutine of its own, which Stop waits for.
func (b *Batcher) goFlush(bundle []flushPart) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.flush(bundle)
	}()
}

// flush commits one bundle, topped up with offered partitions, and releases its permit.
// If offers wait, it takes the permit back with a bundle of them and commits that next,
// while a new goroutine routes the outcome of the first; otherwise it routes the outcome.
func (b *Batcher) flush(bundle []flushPart) {
	for bundle != nil {
		bundle = b.topUp(bundle)
		segs := make([]ports.Segment, len(bundle))
		for k, fp := range bundle {
			segs[k] = fp.seg
		}
		start := time.Now()
		for _, fp := range bundle {
			b.push.Wait.Observe(time.Duration(start.UnixNano() - fp.since))
		}
		results, err := b.store.PushSegments(context.Background(), segs)
		returned := time.Now()
		b.opts.Limiter.Release(returned.Sub(start), err == nil)
		b.push.Commit.Observe(returned.Sub(start))
		next := b.nextOffers()
		if next == nil {
			b.finish(bundle, segs, results, err)
			b.push.Route.Since(returned)
			return
		}
		// Chain: this goroutine carries the next bundle to the database at once, and
		// the answers of this one are routed beside it. A fresh goroutine for the next
		// bundle would first wait for a core, with the database idle, on every commit
		// (docs/benchmarks.md).
		b.fireOffers() // more free permits (a limit above 1): more bundles
		b.wg.Add(1)
		go func(bundle []flushPart, segs []ports.Segment, results []ports.SegmentResult, err error) {
			defer b.wg.Done()
			b.finish(bundle, segs, results, err)
			b.push.Route.Since(returned)
		}(bundle, segs, results, err)
		bundle = next
	}
}

// finish routes a committed (or failed) bundle's verdicts to its frames and reports each
// part's outcome to the shard that owns it.
func (b *Batcher) finish(bundle []flushPart, segs []ports.Segment, results []ports.SegmentResult, err error) {
	frames := 0
	for _, fp := range bundle {
		frames += len(fp.refs)
	}
	remainder := make([][]ref, len(bundle))
	if err == nil && len(results) != len(segs) {
		err = fmt.Errorf("fusion: store returned %d results for %d segments: %w", len(results), len(segs), errBadResult)
	}
	if err != nil {
		b.stats.failed.Add(1)
		// A bundle that collided with concurrent transactions run after run (a queue
		// deleted under each, ports.ErrConflict) is no failure of the broker or the
		// database; anything else is.
		level := slog.LevelError
		if errors.Is(err, ports.ErrConflict) {
			level = slog.LevelWarn
		}
		b.opts.Logger.Log(context.Background(), level, "push bundle failed", loglimit.Cause("push bundle failed"),
			"segments", len(segs), "frames", frames, "err", err)
		for _, fp := range bundle {
			for _, r := range fp.refs {
				complete(r, Result{Status: Error, Err: err})
			}
		}
	} else {
		b.stats.bundle(len(segs), frames)
		for k, fp := range bundle {
			remainder[k] = b.apply(fp, results[k])
		}
	}
	b.report(bundle, remainder, segs, results, err == nil)
}

// report sends each owner shard the outcome of its parts of a bundle: one flushed per
// shard, each listing its entries of the bundle-wide slices, which they share (read
// only). Two allocations per bundle, whatever the number of parts and owners.
func (b *Batcher) report(bundle []flushPart, remainder [][]ref, segs []ports.Segment, results []ports.SegmentResult, ok bool) {
	if !ok {
		segs, results = nil, nil
	}
	// The owners in order of first appearance, and how many parts each has.
	var ownerBuf [16]*shard
	var countBuf [16]int
	owners, counts := ownerBuf[:0], countBuf[:0]
	for _, fp := range bundle {
		i := slices.Index(owners, fp.s)
		if i < 0 {
			owners, counts = append(owners, fp.s), append(counts, 0)
			i = len(owners) - 1
		}
		counts[i]++
	}
	outs := make([]flushed, len(owners))
	idx := make([]int, len(bundle))
	off := 0
	for i := range outs {
		outs[i] = flushed{bundle: bundle, remainder: remainder, segs: segs, results: results,
			idx: idx[off : off : off+counts[i]]}
		off += counts[i]
	}
	for k, fp := range bundle {
		out := &outs[slices.Index(owners, fp.s)]
		if fp.opens {
			out.opened++
		}
		out.idx = append(out.idx, k)
	}
	for i, s := range owners {
		s.finished(&outs[i])
	}
}

// build runs layer-2 dedup over a partition's frames and packs the segment.
func (b *Batcher) build(fp flushPart) (ports.Segment, plan) {
	n := len(fp.refs)
	var hashBuf [4][16]byte // small segments (most, under single-message pushes) stay on the stack
	var frameBuf [4]segment.Frame
	hashes, frames := hashBuf[:0], frameBuf[:0]
	if n > len(hashBuf) {
		hashes, frames = make([][16]byte, 0, n), make([]segment.Frame, 0, n)
	}
	for _, r := range fp.refs {
		hashes = append(hashes, r.g.Hashes[r.i])
	}
	ints := make([]int, 2*n) // the plan's two slices, one allocation
	pl := plan{firsts: dedup.Firsts(hashes, ints[:0:n]), slot: ints[n:]}
	hashBlob := make([]byte, 0, 16*n)
	plainFrames := false
	for j, r := range fp.refs {
		if pl.firsts[j] != j {
			continue
		}
		pl.slot[j] = len(frames)
		frames = append(frames, r.g.Frames[r.i])
		plainFrames = plainFrames || !r.g.Frames[r.i].Encrypted
		hashBlob = append(hashBlob, hashes[j][:]...)
	}
	return ports.Segment{
		Tenant:    fp.p.tenant,
		Queue:     fp.p.queue,
		Partition: fp.p.partition,
		Count:     len(frames),
		Hashes:    hashBlob,
		Verified:  fp.verified,
		Blob:      b.codec.Encode(frames),
		Plain:     plainFrames, // the store refuses it if the queue encrypts
	}, pl
}

// apply routes one segment's verdict to its frames and returns the frames to flush
// again (the non-duplicate rest of a segment answered duplicate), in order.
func (b *Batcher) apply(fp flushPart, res ports.SegmentResult) []ref {
	pl := fp.plan
	switch res.Status {
	case ports.SegmentQueued:
		b.opts.Commits.Announce(notify.Commit{Tenant: fp.p.tenant, Queue: fp.p.queue, Partition: fp.p.partition,
			PartitionID: res.PartitionID, Messages: fp.seg.Count, Source: notify.Pushed})
		for j, r := range fp.refs {
			first := fp.refs[pl.firsts[j]]
			v := Result{
				Status:      Queued,
				Offset:      res.BaseOffset + int64(pl.slot[pl.firsts[j]]),
				CreatedAt:   res.CreatedAt,
				PartitionID: res.PartitionID,
				MessageID:   first.g.Frames[first.i].ID,
			}
			if pl.firsts[j] != j {
				v.Status = Duplicate // repeats its first, earlier in this flush
			}
			complete(r, v)
		}
		return nil
	case ports.SegmentEncrypted:
		// Plaintext for a queue that encrypts (the pusher's flag was stale): nothing was
		// stored, and nothing is remembered (learn keeps committed segments only).
		for _, r := range fp.refs {
			complete(r, Result{Status: Error, Err: fmt.Errorf("fusion: %s/%s: %w", fp.p.queue, fp.p.partition, ErrEncrypts)})
		}
		return nil
	case ports.SegmentDuplicate:
		if len(res.Dups) > 0 {
			return b.applyDuplicate(fp, res)
		}
		b.opts.Logger.Error("push segment answered duplicate without duplicates", loglimit.Cause("push result unroutable"),
			"partition_id", res.PartitionID, "err", errBadResult)
		fallthrough
	default:
		for _, r := range fp.refs {
			complete(r, Result{Status: Error, Err: errBadResult})
		}
		return nil
	}
}

// applyDuplicate resolves the duplicate frames of a segment that wrote nothing; the rest
// go back for the next flush.
func (b *Batcher) applyDuplicate(fp flushPart, res ports.SegmentResult) []ref {
	pl := fp.plan
	orig := make(map[int]int64, len(res.Dups)) // segment slot -> original offset
	for _, d := range res.Dups {
		orig[d.Index] = d.Offset
	}
	ids := newOriginals(b, res.PartitionID)
	var rest []ref
	for j, r := range fp.refs {
		off, dup := orig[pl.slot[pl.firsts[j]]]
		if !dup {
			rest = append(rest, r)
			continue
		}
		complete(r, Result{
			Status:      Duplicate,
			Offset:      off,
			PartitionID: res.PartitionID,
			MessageID:   ids.at(off),
		})
	}
	return rest
}

// originals resolves original message ids from covering segments, reading each segment
// once per flush. This is the rare path: plain, uncached reads.
type originals struct {
	b       *Batcher
	pid     string
	base    int64
	frames  []segment.Frame
	fetched bool
}

func newOriginals(b *Batcher, pid string) *originals { return &originals{b: b, pid: pid} }

func (o *originals) at(off int64) [16]byte {
	if o.fetched && off >= o.base && off < o.base+int64(len(o.frames)) {
		return o.frames[off-o.base].ID
	}
	o.fetched, o.frames = true, nil
	seg, ok, err := o.b.store.SegmentAt(context.Background(), o.pid, off)
	if err != nil {
		o.b.opts.Logger.Warn("duplicate: original segment unreadable", loglimit.Cause("duplicate original unreadable"), "partition_id", o.pid, "offset", off, "err", err)
		return [16]byte{}
	}
	if !ok {
		return [16]byte{} // removed by retention: the "original unknown" sentinel
	}
	frames, err := o.b.codec.Decode(seg.Blob)
	if err != nil || off-seg.BaseOffset >= int64(len(frames)) {
		o.b.opts.Logger.Error("duplicate: original segment corrupt", loglimit.Cause("duplicate original corrupt"), "partition_id", o.pid, "offset", off, "err", err)
		return [16]byte{}
	}
	o.base, o.frames = seg.BaseOffset, frames
	return frames[off-seg.BaseOffset].ID
}
