package ports

import (
	"context"
	"time"
)

// PoolStat is a reading of the database connection pool, as GET /metrics exports it.
// The PostgreSQL adapter's reading is pgxpool's Stat, which satisfies it as is.
type PoolStat interface {
	TotalConns() int32
	IdleConns() int32
	AcquiredConns() int32
	ConstructingConns() int32
	MaxConns() int32
	AcquireCount() int64                 // successful acquires since the pool opened
	EmptyAcquireCount() int64            // of those, the ones that found no idle connection and waited
	CanceledAcquireCount() int64         // acquires given up (context cancelled or timed out)
	AcquireDuration() time.Duration      // total time successful acquires took
	EmptyAcquireWaitTime() time.Duration // total time acquires waited for a connection
}

// Pinger checks that the database answers.
type Pinger interface {
	Ping(ctx context.Context) error
}
