package e2e

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/config"
)

// Encryption at rest (README, "Encryption at rest"): payloads of a queue with encryptionEnabled are stored as
// AES-256-GCM envelopes (docs/api.md §5.1) and read back decrypted on every read path; a
// broker without the key refuses them rather than storing plaintext; a key can be
// rotated with QUEEN_ENCRYPTION_KEY_OLD.

// Two AES-256 keys, as QUEEN_ENCRYPTION_KEY values (64 hex characters).
var (
	encKeyA = strings.Repeat("0a", 32)
	encKeyB = strings.Repeat("0b", 32)
)

// encSealed is what one stored message must be: an envelope that opens with key (and
// with no other of the test's keys) to plaintext.
type encSealed struct{ key, plaintext string }

// encOpen decrypts an docs/api.md §5.1 envelope with keyHex using only the standard
// library: an independent check of the stored format, not the broker's own code.
func encOpen(keyHex string, env []byte) ([]byte, error) {
	key, err := hex.DecodeString(keyHex)
	if err != nil {
		return nil, err
	}
	var w struct {
		Encrypted string `json:"encrypted"`
		IV        string `json:"iv"`
		AuthTag   string `json:"authTag"`
	}
	if err := decodeStrict(env, &w); err != nil {
		return nil, err
	}
	ct, err1 := base64.StdEncoding.DecodeString(w.Encrypted)
	iv, err2 := base64.StdEncoding.DecodeString(w.IV)
	tag, err3 := base64.StdEncoding.DecodeString(w.AuthTag)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	if len(iv) != 16 || len(tag) != 16 {
		return nil, errors.New("iv and authTag must be 16 bytes each")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return gcm.Open(nil, iv[:12], append(ct, tag...), nil)
}

// encWantSealedAtRest checks what PostgreSQL stores for queue: exactly the messages of want
// (by transaction id), each flagged encrypted, its stored payload an envelope that does
// not contain the plaintext, opens with its key to the plaintext, and opens with no
// other key of these tests.
//
// This is the one assertion of the black-box tests that reads the storage tables
// (queen.log_segments, through pgtest.StoredMessages): "encrypted at rest" is a promise
// about the stored bytes, which no API shows. Nothing else may look there.
func encWantSealedAtRest(t testing.TB, db, queue string, want map[string]encSealed) {
	t.Helper()
	stored := pgtest.StoredMessages(t, db, queue)
	var txns []string
	for _, m := range stored {
		txns = append(txns, m.TransactionID)
		w, ok := want[m.TransactionID]
		if !ok {
			t.Errorf("%s: stored message %s was not expected", queue, m.TransactionID)
			continue
		}
		if !m.Encrypted || bytes.Contains(m.Payload, []byte(w.plaintext)) {
			t.Errorf("%s/%s: stored payload %s (encrypted flag %v) is not sealed", queue, m.TransactionID, m.Payload, m.Encrypted)
			continue
		}
		pt, err := encOpen(w.key, m.Payload)
		if err != nil || string(pt) != w.plaintext {
			t.Errorf("%s/%s: the stored envelope opens to %q, %v; want %s", queue, m.TransactionID, pt, err, w.plaintext)
		}
		for _, other := range []string{encKeyA, encKeyB} {
			if _, err := encOpen(other, m.Payload); other != w.key && err == nil {
				t.Errorf("%s/%s: the stored envelope also opens with another key", queue, m.TransactionID)
			}
		}
	}
	if len(txns) != len(want) {
		t.Errorf("%s stores %v, want the %d messages %v", queue, txns, len(want), want)
	}
}

// encItem is a push item of queue/partition with a transaction id and a raw JSON payload.
func encItem(queue, partition, txn, payload string) map[string]any {
	return map[string]any{"queue": queue, "partition": partition, "transactionId": txn, "payload": json.RawMessage(payload)}
}

// encWantData fails unless the messages' data are the payloads, in order.
func encWantData(t testing.TB, msgs []popMsg, payloads ...string) {
	t.Helper()
	var got []string
	for _, m := range msgs {
		got = append(got, string(m.Data))
	}
	if !slices.Equal(got, payloads) {
		t.Fatalf("data %v, want %v", got, payloads)
	}
}

// TestEncryptRoundTrip: on a broker with the key, what is pushed to an encrypted queue
// (plain push or transaction) is stored sealed and read back as pushed by every read
// path: pop, the admin message listing and detail, the dead-letter listing.
func TestEncryptRoundTrip(t *testing.T) {
	t.Parallel()
	b := startBroker(t, map[string]string{"QUEEN_ENCRYPTION_KEY": encKeyA})
	for _, q := range []string{"enc-pop", "enc-txn", "enc-admin", "enc-dlq"} {
		b.setOptions(t, q, map[string]any{"encryptionEnabled": true})
	}

	t.Run("pop", func(t *testing.T) {
		t.Parallel()
		payloads := []string{`{"secret":"pop-1"}`, `"pop-2 as a string"`, `[1,2,"pop-3"]`}
		var items []map[string]any
		want := map[string]encSealed{}
		for i, p := range payloads {
			txn := []string{"a", "b", "c"}[i]
			items = append(items, encItem("enc-pop", "p", txn, p))
			want[txn] = encSealed{encKeyA, p}
		}
		for _, r := range b.push(t, items...) {
			if r.Status != "queued" || r.Error != "" {
				t.Fatalf("push: %+v", r)
			}
		}
		encWantData(t, b.popMust(t, "/api/v1/pop/queue/enc-pop?batch=10").Messages, payloads...)
		encWantSealedAtRest(t, b.DB, "enc-pop", want)
	})

	t.Run("transaction", func(t *testing.T) {
		t.Parallel()
		code, r := b.txn(t, map[string]any{"operations": []any{map[string]any{"type": "push", "items": []any{
			encItem("enc-txn", "p", "t1", `{"secret":"txn-1"}`), encItem("enc-txn", "p", "t2", `{"secret":"txn-2"}`)}}}})
		if code != http.StatusOK || !r.Success {
			t.Fatalf("transaction: %d %+v", code, r)
		}
		encWantData(t, b.popMust(t, "/api/v1/pop/queue/enc-txn?batch=10").Messages, `{"secret":"txn-1"}`, `{"secret":"txn-2"}`)
		encWantSealedAtRest(t, b.DB, "enc-txn", map[string]encSealed{"t1": {encKeyA, `{"secret":"txn-1"}`},
			"t2": {encKeyA, `{"secret":"txn-2"}`}})
	})

	t.Run("admin message listing and detail", func(t *testing.T) {
		t.Parallel()
		b.push(t, encItem("enc-admin", "p", "m1", `{"secret":"admin-1"}`))
		pid := b.popMust(t, "/api/v1/pop/queue/enc-admin?batch=1&consumerGroup=peek").Messages[0].PartitionID
		d := b.msgDetail(t, pid, "m1")
		if string(d.Data) != `{"secret":"admin-1"}` || string(d.Payload) != `{"secret":"admin-1"}` || !d.IsEncrypted {
			t.Fatalf("detail: data %s, payload %s, isEncrypted %v", d.Data, d.Payload, d.IsEncrypted)
		}
		l := b.msgBrowse(t, "?queue=enc-admin")
		if len(l.Messages) != 1 || string(l.Messages[0].Data) != `{"secret":"admin-1"}` || !l.Messages[0].IsEncrypted {
			t.Fatalf("listing: %+v", l.Messages)
		}
		encWantSealedAtRest(t, b.DB, "enc-admin", map[string]encSealed{"m1": {encKeyA, `{"secret":"admin-1"}`}})
	})

	t.Run("dead letters", func(t *testing.T) {
		t.Parallel()
		dl := b.msgDeadLetterOf(t, "enc-dlq", "p", "g", "d1", json.RawMessage(`{"secret":"dlq-1"}`))
		if string(dl.Data) != `{"secret":"dlq-1"}` || dl.IsEncrypted != nil {
			t.Fatalf("dead-letter listing: data %s, isEncrypted %v", dl.Data, dl.IsEncrypted)
		}
		d := b.msgDetail(t, dl.PartitionID, "d1")
		if d.Status != "dead_letter" || string(d.Data) != `{"secret":"dlq-1"}` {
			t.Fatalf("dead letter detail: status %s, data %s", d.Status, d.Data)
		}
		encWantSealedAtRest(t, b.DB, "enc-dlq", map[string]encSealed{"d1": {encKeyA, `{"secret":"dlq-1"}`}})
	})
}

// TestEncryptRefusedWithoutKey: a broker without QUEEN_ENCRYPTION_KEY sharing the
// database of one that configured a queue encrypted refuses pushes to it: per item
// (failed, with the reason; the request's other items are stored) and, for a
// transaction, the whole transaction (500, nothing applied). Nothing is stored.
func TestEncryptRefusedWithoutKey(t *testing.T) {
	t.Parallel()
	keyed := startBroker(t, map[string]string{"QUEEN_ENCRYPTION_KEY": encKeyA})
	keyed.setOptions(t, "locked", map[string]any{"encryptionEnabled": true})
	keyless := startBrokerOn(t, keyed.DB, nil)

	res := keyless.push(t, encItem("locked", "p", "x", `{"secret":"refused"}`), encItem("open", "p", "y", `{"n":1}`),
		encItem("locked", "p", "x", `{"secret":"refused"}`)) // a layer-1 follower of the first
	for _, i := range []int{0, 2} {
		if r := res[i]; r.Status != "failed" || r.Offset != nil ||
			!strings.Contains(r.Error, "QUEEN_ENCRYPTION_KEY") || !strings.Contains(r.Error, `"locked"`) {
			t.Fatalf("item %d: %+v, want failed with an error naming the queue and QUEEN_ENCRYPTION_KEY", i, r)
		}
	}
	if res[1].Status != "queued" || res[1].Error != "" {
		t.Fatalf("the item of the plain queue: %+v", res[1])
	}

	code, r := keyless.txn(t, map[string]any{"operations": []any{map[string]any{"type": "push", "items": []any{
		encItem("open", "p", "z", `{"n":2}`), encItem("locked", "p", "w", `{"secret":"refused too"}`)}}}})
	if code != http.StatusInternalServerError || r.Success || r.Reason != "encryption" ||
		!strings.Contains(r.Error, "QUEEN_ENCRYPTION_KEY") || len(r.Results) != 0 {
		t.Fatalf("transaction: %d %+v, want 500 with reason encryption", code, r)
	}

	keyed.popEmpty(t, "/api/v1/pop/queue/locked?batch=10")
	wantTxns(t, keyed.popMust(t, "/api/v1/pop/queue/open?batch=10"), "y") // not z: the transaction applied nothing
	if stored := pgtest.StoredMessages(t, keyed.DB, "locked"); len(stored) != 0 {
		t.Fatalf("%d messages stored for the encrypted queue", len(stored))
	}
}

// TestEncryptSpoolReplay: pushes spooled during push maintenance reach an encrypted
// queue sealed. A broker with the key spools them sealed (no plaintext on its disk
// either). A broker without the key spools them as pushed (it cannot know the flag while
// every push is spooled, nor seal): replayed by a broker with the key they are sealed
// then; replayed by itself they are refused, never stored, and set aside in the spool's
// failed/ with the reason instead of being dropped.
func TestEncryptSpoolReplay(t *testing.T) {
	t.Parallel()
	fast := map[string]string{"QUEEN_ENCRYPTION_KEY": encKeyA, "FILE_BUFFER_FLUSH_MS": "20", "QUEEN_MAINTENANCE_REFRESH_MS": "100"}
	keyed := startBroker(t, fast)
	keyed.setOptions(t, "spooled", map[string]any{"encryptionEnabled": true})
	setMaintenance(t, keyed, true)
	noKey := map[string]string{"FILE_BUFFER_FLUSH_MS": "20", "QUEEN_MAINTENANCE_REFRESH_MS": "100"}
	handedOver := startBrokerOn(t, keyed.DB, noKey) // its spool goes to a keyed broker
	stuck := startBrokerOn(t, keyed.DB, noKey)      // replays its spool itself

	for _, p := range []struct {
		b       *broker
		txn     string
		payload string
	}{
		{keyed, "k1", `{"secret":"spool-k1"}`},
		{handedOver, "h1", `{"secret":"spool-h1"}`},
		{stuck, "s1", `{"secret":"spool-s1"}`},
	} {
		if r := p.b.push(t, encItem("spooled", "p", p.txn, p.payload)); r[0].Status != "buffered" {
			t.Fatalf("push %s during maintenance: %+v, want buffered", p.txn, r[0])
		}
	}
	if n := encFilesContaining(t, keyed.Spool, "spool-k1"); n != 0 {
		t.Fatalf("%d files of the keyed broker's spool hold the plaintext", n)
	}

	if err := handedOver.stop(); err != nil {
		t.Fatal(err)
	}
	successor := startBrokerOn(t, keyed.DB, map[string]string{"QUEEN_ENCRYPTION_KEY": encKeyA, "FILE_BUFFER_DIR": handedOver.Spool,
		"FILE_BUFFER_FLUSH_MS": "20", "QUEEN_MAINTENANCE_REFRESH_MS": "100"})
	setMaintenance(t, keyed, false)
	keyed.waitDrained(t, 30*time.Second)
	successor.waitDrained(t, 30*time.Second)
	eventually(t, 60*time.Second, "the keyless broker to set its record aside", func() bool {
		pending, failed, _ := stuck.bufferStatus(t)
		return pending == 0 && failed == 1
	})

	// Two spools replayed by two brokers: no order between them.
	got := keyed.popMust(t, "/api/v1/pop/queue/spooled?batch=10").Messages
	slices.SortFunc(got, func(a, b popMsg) int { return strings.Compare(a.TransactionID, b.TransactionID) })
	encWantData(t, got, `{"secret":"spool-h1"}`, `{"secret":"spool-k1"}`)
	encWantSealedAtRest(t, keyed.DB, "spooled", map[string]encSealed{"k1": {encKeyA, `{"secret":"spool-k1"}`},
		"h1": {encKeyA, `{"secret":"spool-h1"}`}})
	reasons, err := filepath.Glob(filepath.Join(stuck.Spool, "failed", "*.reason"))
	if err != nil || len(reasons) != 1 {
		t.Fatalf("quarantine reasons %v, %v; want one", reasons, err)
	}
	if why, err := os.ReadFile(reasons[0]); err != nil || !strings.Contains(string(why), "QUEEN_ENCRYPTION_KEY") {
		t.Fatalf("quarantine reason %q, %v: want it to name the missing key", why, err)
	}
}

// encFilesContaining counts the files under dir whose bytes contain s.
func encFilesContaining(t testing.TB, dir, s string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "LOCK" {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && bytes.Contains(b, []byte(s)) {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestEncryptKeyRotation: messages sealed with key A are read after the broker restarts
// with QUEEN_ENCRYPTION_KEY=B and QUEEN_ENCRYPTION_KEY_OLD=A, and new ones are sealed
// with B; a broker with B alone cannot read A's (the old key is what makes the rotation
// seamless). A malformed old key, or an old key without a current one, stops start-up.
func TestEncryptKeyRotation(t *testing.T) {
	t.Parallel()
	before := startBroker(t, map[string]string{"QUEEN_ENCRYPTION_KEY": encKeyA})
	before.setOptions(t, "rot", map[string]any{"encryptionEnabled": true})
	before.push(t, encItem("rot", "p", "r1", `{"secret":"rot-1"}`))
	if err := before.stop(); err != nil {
		t.Fatal(err)
	}

	rotated := startBrokerOn(t, before.DB, map[string]string{"QUEEN_ENCRYPTION_KEY": encKeyB, "QUEEN_ENCRYPTION_KEY_OLD": encKeyA})
	p := rotated.popMust(t, "/api/v1/pop/queue/rot?batch=10")
	encWantData(t, p.Messages, `{"secret":"rot-1"}`)
	rotated.ackAll(t, p, "")
	rotated.push(t, encItem("rot", "p", "r2", `{"secret":"rot-2"}`))
	encWantData(t, rotated.popMust(t, "/api/v1/pop/queue/rot?batch=10").Messages, `{"secret":"rot-2"}`)
	encWantSealedAtRest(t, before.DB, "rot", map[string]encSealed{"r1": {encKeyA, `{"secret":"rot-1"}`},
		"r2": {encKeyB, `{"secret":"rot-2"}`}})

	onlyB := startBrokerOn(t, before.DB, map[string]string{"QUEEN_ENCRYPTION_KEY": encKeyB})
	encWantData(t, onlyB.popMust(t, "/api/v1/pop/queue/rot?batch=10&consumerGroup=audit&subscriptionMode=all").Messages,
		"null", `{"secret":"rot-2"}`)

	for _, tt := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"malformed old key", map[string]string{"QUEEN_ENCRYPTION_KEY": encKeyB, "QUEEN_ENCRYPTION_KEY_OLD": "0a0a"},
			"QUEEN_ENCRYPTION_KEY_OLD=<4 characters, not shown>"},
		{"malformed key", map[string]string{"QUEEN_ENCRYPTION_KEY": encKeyB[:63]}, "QUEEN_ENCRYPTION_KEY=<63 characters, not shown>"},
		{"old key alone", map[string]string{"QUEEN_ENCRYPTION_KEY_OLD": encKeyA}, "QUEEN_ENCRYPTION_KEY is not"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The broker's configuration is where start-up stops (cmd/server exits on it).
			if _, err := config.Parse(tt.env); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("configuration error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
