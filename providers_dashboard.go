package queen

import (
	"log/slog"
	"net/http"

	"github.com/queen-go/queen/adapters/dashboard"
	"github.com/queen-go/queen/adapters/httpapi"
	"github.com/queen-go/queen/config"
	adminapi "github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/core/maintenance"
	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/ports"
)

// ProvideAnalytics builds the analytics use case over the metrics history: reads span at
// most METRICS_RETENTION_DAYS, and identical ones share one read for
// QUEEN_ADMIN_SHARE_MS (a dashboard polling costs one read per period).
func ProvideAnalytics(a ports.MetricsReader, cfg config.Config) *adminapi.Analytics {
	return adminapi.NewAnalytics(a, adminapi.AnalyticsOptions{MaxRange: cfg.MetricsRetentionPeriod(), ShareWindow: cfg.AdminShare})
}

// UI is the web dashboard and the routes it is mounted at; no handler when
// QUEEN_DASHBOARD is off.
type UI struct {
	Handler *dashboard.Handler
	Routes  []httpapi.UIRoute
}

// ProvideDashboard builds the web dashboard over the same use cases as the API
// (QUEEN_DASHBOARD); the API's router mounts it behind the same authentication.
func ProvideDashboard(resources *adminapi.Resources, groups *adminapi.Groups, messages *adminapi.Messages,
	traces *adminapi.Traces, qs *queues.Service, m *maintenance.Flags, spools SpoolStatus, an *adminapi.Analytics,
	cfg config.Config, log *slog.Logger) UI {
	if !cfg.Dashboard {
		return UI{}
	}
	h := dashboard.New(dashboard.Services{Resources: resources, Groups: groups, Messages: messages, Traces: traces,
		Queues: qs, Maintenance: m, Spool: spools, Analytics: an},
		dashboard.Options{Version: Version, Logger: log.With("target", "dashboard")})
	var routes []httpapi.UIRoute
	for _, r := range dashboard.Routes() {
		routes = append(routes, httpapi.UIRoute{Method: r.Method, Path: r.Path, Level: r.Level})
	}
	return UI{Handler: h, Routes: routes}
}

// uiHandler is ui's handler as the API's option: a nil interface when there is none.
func uiHandler(ui UI) http.Handler {
	if ui.Handler == nil {
		return nil
	}
	return ui.Handler
}
