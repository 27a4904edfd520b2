//go:build wireinject

package queen

import (
	"context"

	"github.com/google/wire"

	"github.com/queen-go/queen/config"
)

// InitializeApp builds the broker from its configuration. The cleanup stops what the
// providers started, in reverse order.
func InitializeApp(ctx context.Context, cfg config.Config) (*App, func(), error) {
	wire.Build(ProviderSet)
	return nil, nil, nil
}
