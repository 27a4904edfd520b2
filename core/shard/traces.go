package shard

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/queen-go/queen/ports"
)

// Traces is ports.TraceStore over several shards: a trace lives on the shard of its
// message's partition, so the calls naming a partition go there, and the tenant-wide
// listings read every shard and merge them as one database would list them.
type Traces struct {
	shards []ports.TraceStore // index = shard number
}

var _ ports.TraceStore = (*Traces)(nil)

// NewTraces returns the trace store over shards (index = shard number).
func NewTraces(shards []ports.TraceStore) *Traces { return &Traces{shards: shards} }

// AddTrace implements ports.TraceStore on the partition's shard (its expiry batch
// deletes expired traces of that shard only; each shard's own inserts expire the rest).
func (t *Traces) AddTrace(ctx context.Context, tenant string, nt ports.NewTrace, lifetime func(ports.QueueOptions) time.Duration, expire int) (ports.Trace, bool, error) {
	return t.shards[HolderOf(nt.PartitionID, len(t.shards))].AddTrace(ctx, tenant, nt, lifetime, expire)
}

// MessageTraces implements ports.TraceStore on the partition's shard.
func (t *Traces) MessageTraces(ctx context.Context, tenant, partitionID, transactionID string, limit int) ([]ports.Trace, error) {
	return t.shards[HolderOf(partitionID, len(t.shards))].MessageTraces(ctx, tenant, partitionID, transactionID, limit)
}

// upTo is how many rows each shard is asked for so that the merge can cut rows offset
// to offset+limit: all of the first offset+limit (MergePage), none when the page is
// empty (only the totals are wanted).
func upTo(limit, offset int) int {
	if limit <= 0 {
		return 0
	}
	return offset + limit
}

// TracesByName implements ports.TraceStore: every shard's first offset+limit traces
// carrying the name, merged newest first (then by id, descending, as the stores order
// ties); the total is the shards' totals added (a trace is on one shard).
func (t *Traces) TracesByName(ctx context.Context, tenant, name string, limit, offset int) ([]ports.Trace, int64, error) {
	pages, totals, err := askPages(t.shards, func(s ports.TraceStore) ([]ports.Trace, int64, error) {
		return s.TracesByName(ctx, tenant, name, upTo(limit, offset), 0)
	})
	if err != nil {
		return nil, 0, err
	}
	var total int64
	for _, n := range totals {
		total += n
	}
	out := MergePage(pages, func(a, b ports.Trace) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(b.ID, a.ID))
	}, offset, max(limit, 0))
	return rowsOrEmpty(out), total, nil
}

// nameOrder is the order of the trace-name listing: most recently seen first, ties by
// name.
func nameOrder(a, b ports.TraceName) int {
	return cmp.Or(b.LastSeen.Compare(a.LastSeen), strings.Compare(a.Name, b.Name))
}

// TraceNames implements ports.TraceStore. A name may be in use on several shards: its
// rows are merged into one (traces and messages added, as a message is on one shard;
// the latest LastSeen), which is then listed by its latest use. Each shard is asked for
// its first offset+limit names.
//
// The page's names and their order are exact: a name among the merged first
// offset+limit is among the first offset+limit of the shard where it was seen last
// (every name that shard lists before it is seen later, so comes first in the merge),
// hence read with its merged LastSeen; any name read with an older LastSeen than its own
// ranks behind offset+limit names that are read in full.
//
// Counts and the total are exact when every shard listed all its names (it returned
// fewer than it was asked for, or as many as its total). Otherwise, when a shard has
// more names than it was asked for (a tenant with more than offset+limit names on one
// shard):
//   - a page name's Traces and Messages lack that shard's part when the name is among
//     the shard's names that were not read (a name also used on that shard, but longer
//     ago than the shard's offset+limit-th name);
//   - the total counts every merged name read, plus each such shard's names that were
//     not read, as if none of them were used on another shard: an upper bound of the
//     distinct names, so a pager always reaches the last name (its last pages may be
//     short).
//
// Exact counts there would need every shard's whole name list on every page.
func (t *Traces) TraceNames(ctx context.Context, tenant string, limit, offset int) ([]ports.TraceName, int64, error) {
	pages, totals, err := askPages(t.shards, func(s ports.TraceStore) ([]ports.TraceName, int64, error) {
		return s.TraceNames(ctx, tenant, upTo(limit, offset), 0)
	})
	if err != nil {
		return nil, 0, err
	}
	var unread int64 // names some shard has and did not list
	for n, rows := range pages {
		unread += max(totals[n]-int64(len(rows)), 0)
	}
	merged := combine(pages, func(r ports.TraceName) string { return r.Name }, func(into *ports.TraceName, r ports.TraceName) {
		into.Traces += r.Traces
		into.Messages += r.Messages
		if r.LastSeen.After(into.LastSeen) {
			into.LastSeen = r.LastSeen
		}
	})
	slices.SortFunc(merged, nameOrder)
	from := min(offset, len(merged))
	to := from + min(max(limit, 0), len(merged)-from)
	return merged[from:to:to], int64(len(merged)) + unread, nil
}
