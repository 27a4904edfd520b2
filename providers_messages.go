package queen

import (
	"log/slog"

	"github.com/queen-go/queen/adapters/admin"
	adminapi "github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/core/envelope"
	"github.com/queen-go/queen/core/maintenance"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/segment"
)

// ProvideMessages builds the admin API's message and dead-letter use case: dead letters
// are replayed through the push use case, and refused while push maintenance is on.
func ProvideMessages(a *admin.Admin, p *push.Service, m *maintenance.Flags, sealer *envelope.Sealer,
	codec *segment.Codec, log *slog.Logger) *adminapi.Messages {
	return adminapi.NewMessages(a, adminapi.MessagesOptions{Push: p, PushPaused: m.Push, Sealer: sealer, Codec: codec,
		Logger: log})
}
