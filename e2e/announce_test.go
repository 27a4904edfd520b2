package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
)

// Queue changes reach the other brokers at once: a configure or a queue deletion on one
// broker is announced on the database's hint channel, and every other broker forgets
// what it cached about the queue then, not when its cache expires
// (QUEEN_CACHE_REFRESH_INTERVAL_MS, set to ten minutes here so that only the
// announcement can explain what the tests see).

// announceWait bounds the wait for an announcement to cross the database: it takes
// milliseconds; the caches it replaces would take ten minutes.
const announceWait = 2 * time.Second

// heardChanges waits, at most announceWait, until b has heard n queue changes from the
// other brokers in all. It does not fail: what the test checks next is the behaviour, and
// it fails on its own when nothing was heard.
func heardChanges(t *testing.T, b *broker, n float64) {
	t.Helper()
	deadline := time.Now().Add(announceWait)
	for b.metric(t, `queen_peer_queue_changes_total{direction="received"}`) < n {
		if time.Now().After(deadline) {
			t.Logf("no announcement heard within %v", announceWait)
			return
		}
		time.Sleep(10 * time.Millisecond) // a bounded poll of a counter
	}
}

// TestQueueChangesReachOtherBrokers: two brokers on one database, one with the
// encryption key, one without; each case changes a queue on the keyed broker and acts at
// once on the keyless one, whose cache of the queue had just been filled.
func TestQueueChangesReachOtherBrokers(t *testing.T) {
	t.Parallel()
	slow := map[string]string{"QUEEN_CACHE_REFRESH_INTERVAL_MS": "600000"}
	keyed := startBroker(t, map[string]string{"QUEEN_ENCRYPTION_KEY": encKeyA, "QUEEN_CACHE_REFRESH_INTERVAL_MS": "600000"})
	keyless := startBrokerOn(t, keyed.DB, slow)
	heard := 0.0 // queue changes the keyless broker should have heard so far

	// The cases share the keyless broker's count of heard changes: they run in turn.
	t.Run("encryption switched on: the other broker refuses, never plaintext", func(t *testing.T) {
		if r := keyless.push(t, encItem("switched", "p", "before", `{"card":"4111"}`)); r[0].Status != "queued" {
			t.Fatalf("push before the switch: %+v", r[0]) // and the keyless broker caches "not encrypted"
		}
		keyed.setOptions(t, "switched", map[string]any{"encryptionEnabled": true})
		heard++
		heardChanges(t, keyless, heard)
		r := keyless.push(t, encItem("switched", "p", "after", `{"card":"4242"}`))
		if r[0].Status != "failed" || r[0].Offset != nil || !strings.Contains(r[0].Error, "QUEEN_ENCRYPTION_KEY") {
			t.Errorf("push through the keyless broker after the switch: %+v, want failed naming QUEEN_ENCRYPTION_KEY", r[0])
		}
		stored := pgtest.StoredMessages(t, keyed.DB, "switched")
		for _, m := range stored {
			if m.TransactionID != "before" {
				t.Errorf("stored %s (encrypted %v, payload %s) after the switch", m.TransactionID, m.Encrypted, m.Payload)
			}
		}
		if len(stored) != 1 {
			t.Errorf("%d messages stored, want only the one pushed before the switch", len(stored))
		}
	})

	t.Run("queue deleted: the other broker forgets its encryption flag", func(t *testing.T) {
		keyed.setOptions(t, "recreated", map[string]any{"encryptionEnabled": true})
		heard++
		heardChanges(t, keyless, heard)
		if r := keyless.push(t, encItem("recreated", "p", "refused", `{"n":1}`)); r[0].Status != "failed" {
			t.Fatalf("push to the encrypted queue: %+v, want failed", r[0]) // it caches "encrypted"
		}
		if !keyed.queueExists(t, "recreated") { // deletes it
			t.Fatal("the queue to delete did not exist")
		}
		heard++
		heardChanges(t, keyless, heard)
		// The push creates the queue again, with the defaults: not encrypted.
		if r := keyless.push(t, encItem("recreated", "p", "new", `{"n":2}`)); r[0].Status != "queued" {
			t.Fatalf("push to the queue created again: %+v, want queued (the deleted queue's flag is forgotten)", r[0])
		}
		wantTxns(t, keyed.popMust(t, "/api/v1/pop/queue/recreated?batch=10"), "new")
	})

	t.Run("dedup window widened: the other broker's dedup cache is dropped", func(t *testing.T) {
		// With a 1 s window, "a" leaves the keyless broker's dedup cache by the time "b"
		// commits, and the cache then vouches for offsets 0-1 under that window.
		keyed.setOptions(t, "widened", map[string]any{"dedupWindowSeconds": 1})
		heard++
		keyless.push(t, encItem("widened", "p", "a", `1`))
		elapse(t, time.Now(), 1500*time.Millisecond)
		keyless.push(t, encItem("widened", "p", "b", `2`))
		// Widened on the other broker: "a" at offset 0 is inside the window again.
		keyed.setOptions(t, "widened", map[string]any{"dedupWindowSeconds": 3600})
		heard++
		heardChanges(t, keyless, heard)
		r := keyless.push(t, encItem("widened", "p", "a", `3`))
		if r[0].Status != "duplicate" || r[0].Offset == nil || *r[0].Offset != 0 {
			t.Fatalf("re-push of a after the widening: %+v, want duplicate of offset 0", r[0])
		}
	})
}

// TestStaleFlagNeverStoresPlaintext: what the database itself guarantees when a broker's
// cached encryption flag is stale and no announcement can help: the keyless broker
// trusts its cached "not encrypted" for ten minutes, and
//   - the flag is switched behind every broker (a configure whose announcement was
//     lost): its pushes, transactions and the push after them are refused, nothing is
//     stored, and the broker forgets the flag at once;
//   - a configure on the other broker is raced by pushes sent the moment its answer
//     arrives, before the announcement can be heard: each is refused, none stored.
func TestStaleFlagNeverStoresPlaintext(t *testing.T) {
	t.Parallel()
	slow := map[string]string{"QUEEN_CACHE_REFRESH_INTERVAL_MS": "600000"}
	keyed := startBroker(t, map[string]string{"QUEEN_ENCRYPTION_KEY": encKeyA, "QUEEN_CACHE_REFRESH_INTERVAL_MS": "600000"})
	keyless := startBrokerOn(t, keyed.DB, slow)

	t.Run("announcement lost", func(t *testing.T) {
		if r := keyless.push(t, encItem("lost", "p", "before", `{"n":0}`)); r[0].Status != "queued" {
			t.Fatalf("push before the switch: %+v", r[0]) // the keyless broker caches "not encrypted"
		}
		pgtest.SetEncryptionBehindBrokers(t, keyed.DB, "lost", true)
		for _, txn := range []string{"stale", "forgotten"} {
			r := keyless.push(t, encItem("lost", "p", txn, `{"card":"4111"}`), encItem("lost-other", "p", txn, `1`))
			if r[0].Status != "failed" || r[0].Offset != nil || !strings.Contains(r[0].Error, "QUEEN_ENCRYPTION_KEY") {
				t.Errorf("push %s through the keyless broker: %+v, want failed naming QUEEN_ENCRYPTION_KEY", txn, r[0])
			}
			if r[1].Status != "queued" {
				t.Errorf("push %s to a queue that does not encrypt, in the same request: %+v, want queued", txn, r[1])
			}
		}
		code, raw := keyless.post(t, "/api/v1/transaction", mustJSON(t, map[string]any{"operations": []any{
			map[string]any{"type": "push", "items": []any{encItem("lost", "p", "txn", `{"card":"4111"}`)}}}}))
		if strings.Contains(string(raw), `"success":true`) || !strings.Contains(string(raw), `"encryption"`) {
			t.Errorf("transaction through the keyless broker: %d %s, want refused (encryption)", code, raw)
		}
		wantOnly(t, keyed.DB, "lost", "before")
	})

	t.Run("configure raced by pushes", func(t *testing.T) {
		const tries = 10
		for i := range tries {
			q := "raced-" + string(rune('a'+i))
			if r := keyless.push(t, encItem(q, "p", "before", `{"n":0}`)); r[0].Status != "queued" {
				t.Fatalf("push before the switch: %+v", r[0])
			}
			keyed.setOptions(t, q, map[string]any{"encryptionEnabled": true})
			if r := keyless.push(t, encItem(q, "p", "after", `{"card":"4111"}`)); r[0].Status != "failed" {
				t.Errorf("%s: push right after the configure's answer: %+v, want failed", q, r[0])
			}
			wantOnly(t, keyed.DB, q, "before")
		}
	})
}

// wantOnly fails unless queue stores exactly the message txn, and nothing in plaintext
// but it.
func wantOnly(t *testing.T, db, queue, txn string) {
	t.Helper()
	stored := pgtest.StoredMessages(t, db, queue)
	for _, m := range stored {
		if m.TransactionID != txn {
			t.Errorf("%s stores %s (encrypted %v, payload %s)", queue, m.TransactionID, m.Encrypted, m.Payload)
		}
	}
	if len(stored) != 1 {
		t.Errorf("%s stores %d messages, want only %s", queue, len(stored), txn)
	}
}
