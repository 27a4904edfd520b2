package drain

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/encryption"
	"github.com/queen-go/queen/core/envelope"
	"github.com/queen-go/queen/core/spool"
)

// flags answers the encryption flags of on.
type flags map[string]bool

func (f flags) EncryptionEnabled(_ context.Context, _, queue string) (bool, error) {
	return f[queue], nil
}

// encFixture is a drainer over a spool holding recs, replaying with the encryption
// policy of sealer (nil: no key) over flags.
func encFixture(t *testing.T, sealer encryption.Sealer, on flags, recs []spool.Record) (*fixture, *memory.SpoolFS) {
	t.Helper()
	fsys := memory.NewSpoolFS()
	pc := newPieces(t, fsys, spool.Options{})
	store, codec, b, sp := pc.store, pc.codec, pc.b, pc.sp
	if err := sp.Append(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	ping := &pinger{}
	ping.up.Store(true)
	d := New(sp, b, Options{Ping: ping, Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Permanent: 2,
		Encryption: encryption.New(sealer, on, encryption.Options{})})
	return &fixture{store: store, codec: codec, sp: sp, ping: ping, d: d}, fsys
}

func rec(queue, partition, txn, payload string, encrypted bool) spool.Record {
	return spool.Record{Tenant: tenant, Queue: queue, Partition: partition, TransactionID: txn,
		MessageID: [16]byte{byte(len(txn)), txn[len(txn)-1]}, Encrypted: encrypted, Payload: []byte(payload)}
}

// TestReplaySealsRecordsOfEncryptedQueues: a record spooled unsealed (its queue's flag
// was unknown at push time, or the queue was configured since) is sealed by the replay;
// one sealed at push time is written as it is; a plain queue's stays plain.
func TestReplaySealsRecordsOfEncryptedQueues(t *testing.T) {
	t.Parallel()
	sealer, err := envelope.New(bytes.Repeat([]byte{5}, 32))
	if err != nil {
		t.Fatal(err)
	}
	pushed, _ := sealer.Seal([]byte(`{"n":2}`))
	f, _ := encFixture(t, sealer, flags{"secret": true}, []spool.Record{
		rec("secret", "p", "t1", `{"n":1}`, false),
		rec("secret", "p", "t2", string(pushed), true),
		rec("plain", "p", "t3", `{"n":3}`, false),
	})
	sum, err := f.d.Until(context.Background(), time.Now().Add(10*time.Second))
	if err != nil || sum.Replayed != 3 || sum.Remaining != 0 || sum.Quarantined != 0 {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	for _, tt := range []struct {
		queue string
		want  []string // plaintexts
		enc   bool
	}{{"secret", []string{`{"n":1}`, `{"n":2}`}, true}, {"plain", []string{`{"n":3}`}, false}} {
		var got []string
		for _, sg := range f.store.Segments(tenant, tt.queue, "p") {
			frames, err := f.codec.Decode(sg.Blob)
			if err != nil {
				t.Fatal(err)
			}
			for _, fr := range frames {
				if fr.Encrypted != tt.enc {
					t.Fatalf("%s: frame %s stored with encrypted %v", tt.queue, fr.Payload, fr.Encrypted)
				}
				pt := fr.Payload
				if fr.Encrypted {
					if pt, err = sealer.Open(fr.Payload); err != nil {
						t.Fatalf("%s: %v", tt.queue, err)
					}
				}
				got = append(got, string(pt))
			}
		}
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Fatalf("%s stores %v, want %v", tt.queue, got, tt.want)
		}
	}
}

// TestReplayWithoutKeyNeverStoresPlaintext: on a broker without a key, a record spooled
// unsealed for an encrypted queue is not stored: it is retried, then quarantined with
// the reason (never dropped, and movable back once a key is configured). The records
// behind it in its partition wait for it, so the partition keeps its order; other
// partitions and records sealed at push time go through.
func TestReplayWithoutKeyNeverStoresPlaintext(t *testing.T) {
	t.Parallel()
	sealer, err := envelope.New(bytes.Repeat([]byte{5}, 32))
	if err != nil {
		t.Fatal(err)
	}
	sealed, _ := sealer.Seal([]byte(`{"n":2}`))
	f, fsys := encFixture(t, nil, flags{"secret": true}, []spool.Record{
		rec("secret", "p", "t1", `{"card":"4111"}`, false),
		rec("secret", "p", "t2", string(sealed), true),
		rec("plain", "p", "t3", `{"n":3}`, false),
	})
	sum, err := f.d.Until(context.Background(), time.Now().Add(10*time.Second))
	if err != nil || sum.Replayed != 2 || sum.Quarantined != 1 || sum.Remaining != 0 {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	var stored []string
	for _, sg := range f.store.Segments(tenant, "secret", "p") {
		frames, _ := f.codec.Decode(sg.Blob)
		for _, fr := range frames {
			if !fr.Encrypted || bytes.Contains(fr.Payload, []byte("4111")) {
				t.Fatalf("plaintext stored for the encrypted queue: %s", fr.Payload)
			}
			stored = append(stored, fr.TransactionID)
		}
	}
	if strings.Join(stored, " ") != "t2" {
		t.Fatalf("the encrypted queue stores %v, want t2 (sealed at push time)", stored)
	}
	reasons := fsys.Names("failed/", ".reason")
	if len(reasons) != 1 {
		t.Fatalf("quarantine reasons %v, want one", reasons)
	}
	if why := string(fsys.Get(reasons[0])); !strings.Contains(why, "QUEEN_ENCRYPTION_KEY") {
		t.Fatalf("quarantine reason %q does not name the missing key", why)
	}
}

// TestRefusedRecordsDoNotMarkTheDatabaseAway: a refusal says nothing about the
// database, so pushes keep going to it.
func TestRefusedRecordsDoNotMarkTheDatabaseAway(t *testing.T) {
	t.Parallel()
	f, _ := encFixture(t, nil, flags{"secret": true}, []spool.Record{rec("secret", "p", "t1", `1`, false)})
	_, err := f.d.Step(context.Background())
	if !errors.Is(err, errBatch) || !strings.Contains(err.Error(), "QUEEN_ENCRYPTION_KEY") {
		t.Fatalf("Step = %v, want a batch error naming the missing key", err)
	}
	if !f.d.Healthy() {
		t.Fatal("a refused record marked the database away")
	}
}

// TestARefusalWithTheDatabaseAwayIsNotCounted: a record refused because its queue's
// settings could not be read (the database is away) is not a bad record: the step
// reports the database unreachable and the batch keeps its position, however often it
// is tried, until the database answers.
func TestARefusalWithTheDatabaseAwayIsNotCounted(t *testing.T) {
	t.Parallel()
	f, fsys := encFixture(t, nil, flags{"secret": true}, []spool.Record{rec("secret", "p", "t1", `1`, false)})
	f.ping.up.Store(false)
	for range 5 { // Permanent is 2
		_, err := f.d.Step(context.Background())
		if !errors.Is(err, errBatch) || !strings.Contains(err.Error(), "database unreachable") {
			t.Fatalf("Step = %v, want the batch held as database unreachable", err)
		}
	}
	if f.d.Healthy() {
		t.Fatal("the drain still takes the database for up")
	}
	if names := fsys.Names("failed/", ""); len(names) != 0 {
		t.Fatalf("quarantined %v with the database away", names)
	}
}
