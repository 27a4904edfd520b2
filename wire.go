//go:build wireinject

package queen

import (
	"context"

	"github.com/google/wire"

	"github.com/queen-go/queen/config"
	"github.com/queen-go/queen/core/drain"
)

// InitializeApp builds the broker from its configuration, with nothing running (see
// App.Start). The cleanup releases what the providers opened, in reverse order.
func InitializeApp(ctx context.Context, cfg config.Config) (*App, func(), error) {
	wire.Build(ProviderSet)
	return nil, nil, nil
}

// InitializeDrain builds the batch-drain job (cmd/lambda) from the broker's providers:
// the store, the codec and push fusion, without HTTP, pops or the background drain.
func InitializeDrain(ctx context.Context, cfg config.Config) (*drain.Job, func(), error) {
	wire.Build(DrainSet)
	return nil, nil, nil
}
