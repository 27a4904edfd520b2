package queen

import (
	"log/slog"

	"github.com/queen-go/queen/config"
	adminapi "github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/core/hotlist"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/ports"
)

// ProvideGroupChanges is the consumer-group change topic (deletions and seeks): the
// hot-list forgets the group's rings, then the waker wakes the group's parked pops, in
// that order, so a woken pop finds the rings gone and claims through SQL.
func ProvideGroupChanges(hot *hotlist.List, waker *consume.Waker) *notify.GroupChanges {
	c := notify.NewGroupChanges()
	c.Subscribe(hot.GroupChanged)
	c.Subscribe(waker.GroupChanged)
	return c
}

// ProvideGroups builds the admin API's consumer-group service; it announces its cursor
// moves, and its listing (shared for QUEEN_ADMIN_SHARE_MS) is forgotten on every queue
// or group change this broker makes.
func ProvideGroups(a ports.GroupStore, changes *notify.GroupChanges, queues *notify.QueueChanges, cfg config.Config,
	log *slog.Logger) *adminapi.Groups {
	g := adminapi.NewGroups(a, adminapi.GroupsOptions{Changes: changes, ShareWindow: cfg.AdminShare, Logger: log})
	changes.Subscribe(g.GroupChanged)
	queues.Subscribe(g.QueueChanged)
	return g
}
