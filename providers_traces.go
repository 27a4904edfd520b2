package queen

import (
	"log/slog"

	adminapi "github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/ports"
)

// ProvideTraces builds the admin API's trace use case; traces expire in batches as new
// ones are recorded (core/admin TraceLifetime), so nothing runs in the background.
func ProvideTraces(a ports.TraceStore, log *slog.Logger) *adminapi.Traces {
	return adminapi.NewTraces(a, adminapi.TracesOptions{Logger: log})
}
