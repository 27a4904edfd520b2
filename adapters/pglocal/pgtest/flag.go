package pgtest

import (
	"testing"
)

// SetEncryptionBehindBrokers sets queue's encryptionEnabled flag (every tenant's queue of
// that name, which must exist) in the database at dbURL directly, as a configure whose
// announcement to the other brokers was lost: no broker hears of it, and each trusts its
// cached flag until QUEEN_CACHE_REFRESH_INTERVAL_MS. It is for the black-box tests of
// what the database itself guarantees then (no plaintext stored for an encrypted queue).
func SetEncryptionBehindBrokers(t testing.TB, dbURL, queue string, on bool) {
	t.Helper()
	ctx, conn, done := openConn(t, dbURL)
	defer done()
	tag, err := conn.Exec(ctx, `UPDATE queen.queues SET encryption_enabled = $2 WHERE name = $1`, queue, on)
	if err != nil {
		t.Fatalf("pgtest: set the encryption flag of %s: %v", queue, err)
	}
	if tag.RowsAffected() == 0 {
		t.Fatalf("pgtest: no queue %s to set the encryption flag of", queue)
	}
}
