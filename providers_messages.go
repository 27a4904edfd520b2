package queen

import (
	"log/slog"

	"github.com/queen-go/queen/adapters/httpapi"
	adminapi "github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/core/envelope"
	"github.com/queen-go/queen/core/maintenance"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

// ProvideMessages builds the admin API's message and dead-letter use case: dead letters
// are replayed through the push use case, and refused while push maintenance is on.
func ProvideMessages(a ports.MessageStore, p httpapi.Pusher, m *maintenance.Flags, sealer *envelope.Sealer,
	codec *segment.Codec, log *slog.Logger) *adminapi.Messages {
	return adminapi.NewMessages(a, adminapi.MessagesOptions{Push: p, PushPaused: m.Push, Sealer: sealer, Codec: codec,
		Logger: log})
}
