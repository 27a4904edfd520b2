package ports

import "context"

// Maintenance flags (docs/api.md §5.12).
const (
	MaintenancePush = "maintenance_mode"     // every push is spooled; replay paused
	MaintenancePop  = "pop_maintenance_mode" // every pop answers 204
)

// SystemState stores broker-wide flags every broker on the database sees.
type SystemState interface {
	// Flags returns every stored flag; absent flags are off.
	Flags(ctx context.Context) (map[string]bool, error)
	// SetFlag stores one flag.
	SetFlag(ctx context.Context, key string, on bool) error
}
