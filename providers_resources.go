package queen

import (
	"log/slog"

	"github.com/queen-go/queen/config"
	adminapi "github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/core/hotlist"
	"github.com/queen-go/queen/core/maintenance"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/core/peers"
	"github.com/queen-go/queen/ports"
)

// ProvideResources builds the admin API's resources and status service over the admin
// store; its shared state reports the maintenance flags, the hot-list and the peer hints
// (QUEEN_PEER_HINTS). Its tenant-wide listings are shared for QUEEN_ADMIN_SHARE_MS and
// forgotten on every queue or group change this broker makes.
func ProvideResources(a ports.ResourceStore, m *maintenance.Flags, hot *hotlist.List, mesh *peers.Mesh,
	queues *notify.QueueChanges, groups *notify.GroupChanges, cfg config.Config, log *slog.Logger) *adminapi.Resources {
	r := adminapi.NewResources(a, adminapi.ResourcesOptions{
		ShareWindow: cfg.AdminShare,
		Maintenance: m,
		Hotlist: func() adminapi.HotlistState {
			s := hot.Stats()
			return adminapi.HotlistState{Enabled: hot.Enabled(), Queues: s.Queues, Rings: s.Rings, Ready: s.Ready,
				Wheel: s.Wheel, MarksLocal: s.MarksLocal, MarksRemote: s.MarksRemote, Reseeds: s.Reseeds}
		},
		Peers: func() adminapi.PeersState {
			s := mesh.Stats()
			return adminapi.PeersState{Enabled: cfg.PeerHints, Sent: s.Sent, Received: s.Received, Dropped: s.Dropped,
				Batches: s.Batches, Failures: s.Failures}
		},
		Logger: log,
	})
	queues.Subscribe(r.QueueChanged)
	groups.Subscribe(r.GroupChanged)
	return r
}
