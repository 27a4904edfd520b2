package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSpoolReplaysDamagedFiles starts a broker on a spool directory holding the committed
// version-1 fixtures with a flipped byte and with a torn tail (core/spool/testdata): the
// intact records are replayed (a record present in both files once), the corrupt one is
// set aside and counted, a record the database rejects for good (its tenant is not a
// UUID) is quarantined, and nothing stays pending.
func TestSpoolReplaysDamagedFiles(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "spool")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	for name, fixture := range map[string]string{
		"queen-0000000000001-00000001.buf": "v1-flipped.buf",
		"queen-0000000000002-00000002.buf": "v1-torn.buf",
	} {
		b, err := os.ReadFile(filepath.Join("..", "core", "spool", "testdata", fixture))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	b := startBroker(t, map[string]string{"FILE_BUFFER_DIR": dir, "FILE_BUFFER_FLUSH_MS": "10"})
	b.waitDrained(t, 60*time.Second)

	for part, want := range map[string][]string{"Default": {"txn-1", "txn-4"}, "eu-west": {"txn-2"}} {
		p := b.pop(t, "/api/v1/pop/queue/orders/partition/"+part+"?batch=100")
		if p == nil || len(p.Messages) != len(want) {
			t.Fatalf("orders/%s: %+v, want %v", part, p, want)
		}
		for i, m := range p.Messages {
			if m.TransactionID != want[i] {
				t.Fatalf("orders/%s message %d: %s, want %s", part, i, m.TransactionID, want[i])
			}
		}
	}
	// Three set aside (one corrupt region, two rejected records), nothing pending.
	if pending, failed, _ := b.bufferStatus(t); pending != 0 || failed != 3 {
		t.Fatalf("status/buffers: %d pending, %d failed; want none pending, 3 failed (1 corrupt region, 2 quarantined)", pending, failed)
	}
	// An operator finds them in failed/, each with its reason: the corrupt region and
	// the two rejected records (one record is in both fixture files).
	entries, err := os.ReadDir(filepath.Join(dir, "failed"))
	if err != nil {
		t.Fatalf("failed/: %v", err)
	}
	kinds := map[string]int{}
	for _, e := range entries {
		kinds[filepath.Ext(e.Name())]++
	}
	if kinds[".corrupt"] != 1 || kinds[".rejected"] != 2 || kinds[".reason"] != 3 {
		t.Fatalf("failed/ holds %v, want 1 .corrupt and 2 .rejected, each with a .reason", kinds)
	}
}
