package fusion

// Offers: cross-shard bundles.
//
// A shard that finds no permit (or is at its in-flight cap) does not keep its ready
// partitions to itself: it takes them (their frames detached, in flight, exactly as for
// a bundle of its own) and offers them on the Batcher's offer list. Whoever next holds a
// permit takes offers, oldest first: a shard firing on idle tops its bundle up with them,
// and a flush that has its commit's answer releases its permit and fires a bundle of
// them at once.
//
// Why: under contention permits are scarce, and a freed permit should carry everything
// that waits, not one shard's share of it. If each shard kept its partitions, a bundle
// would hold at most what one of the Shards shards accumulated, so with S shards the
// segments per commit would be capped near concurrency/S however few permits there are
// (a handful with 8 shards and 64 single-message clients). Asking the waiting shards for
// their partitions when a permit frees costs a visit to each shard per bundle while the
// permit sits idle; an offer is ready before the permit frees. Each shard still owns
// its state: only an event under its lock takes its partitions, and their outcome comes
// back to it as for its own bundles (shard.complete).
//
// No lost wake-up: a shard offers and then tries a permit; a flush releases its permit
// and then looks at the offers. Both sides act after publishing (the offer under
// offerMu, the release under the limiter's lock) and claim a permit and offers together
// under the limiter's lock (nextOffers), so one of them sees the other. The hold tick
// retries anyway.

// offer appends parts to the offer list, then fires them if a permit is free.
func (b *Batcher) offer(parts []flushPart) {
	if len(parts) == 0 {
		return
	}
	b.offerMu.Lock()
	b.offered = append(b.offered, parts...)
	b.nOffered.Store(int32(len(b.offered)))
	b.offerMu.Unlock()
	b.fireOffers()
}

// fireOffers fires bundles of offered partitions while permits are free.
func (b *Batcher) fireOffers() {
	for {
		bundle := b.nextOffers()
		if bundle == nil {
			return
		}
		b.goFlush(bundle)
	}
}

// nextOffers takes a permit and a bundle of offered partitions together, or returns nil
// (and holds no permit) when nothing is offered or no permit is free. Both are claimed
// under the limiter's lock (lock order: limiter, then offerMu), so a permit is never
// taken for offers another bundle took meanwhile.
func (b *Batcher) nextOffers() []flushPart {
	if b.nOffered.Load() == 0 {
		return nil
	}
	var bundle []flushPart
	b.opts.Limiter.TryAcquireIf(func() bool {
		bundle = b.takeOffers(nil, b.opts.BundleMax)
		return len(bundle) > 0
	})
	return bundle
}

// topUp fills the room left in a bundle with offered partitions.
func (b *Batcher) topUp(bundle []flushPart) []flushPart {
	if room := b.opts.BundleMax - len(bundle); room > 0 && b.nOffered.Load() > 0 {
		return b.takeOffers(bundle, room)
	}
	return bundle
}

// takeOffers appends up to n offered partitions, oldest first, to bundle.
func (b *Batcher) takeOffers(bundle []flushPart, n int) []flushPart {
	b.offerMu.Lock()
	defer b.offerMu.Unlock()
	n = min(n, len(b.offered))
	bundle = append(bundle, b.offered[:n]...)
	// Compact rather than reslice past the taken parts, so that the list reuses its
	// backing array instead of growing a new one after every bundle; a list that grew
	// unusually long lets it go.
	m := copy(b.offered, b.offered[n:])
	clear(b.offered[m:])
	b.offered = b.offered[:m]
	if m == 0 && cap(b.offered) > 4*b.opts.BundleMax {
		b.offered = nil
	}
	b.nOffered.Store(int32(len(b.offered)))
	return bundle
}
