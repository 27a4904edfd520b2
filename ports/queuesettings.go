package ports

import "context"

// QueueSettings answers per-queue questions the push path needs.
type QueueSettings interface {
	// EncryptionEnabled reports whether new payloads of the queue must be encrypted;
	// false for a queue that does not exist yet.
	EncryptionEnabled(ctx context.Context, tenant, queue string) (bool, error)
}
