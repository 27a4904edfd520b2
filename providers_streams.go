package queen

import (
	"log/slog"

	"github.com/queen-go/queen/core/hotlist"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/streams"
	"github.com/queen-go/queen/ports"
)

// ProvideStreams builds the streams use case (/streams/v1/*): cycles commit through the
// store, their sink items are prepared by the push use case (its encryption, spool and
// commit announcements), dead-letter moves and released leases are announced.
func ProvideStreams(store ports.StreamStore, segs ports.SegmentStore, p *push.Service, commits *notify.Commits,
	hot *hotlist.List, log *slog.Logger) *streams.Service {
	return streams.New(store, p, streams.Options{Commits: commits, Hot: hot, Segments: segs, Logger: log})
}
