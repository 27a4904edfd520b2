package drain

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/encryption"
	"github.com/queen-go/queen/core/envelope"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/core/spool"
)

// TestReplayAfterAStaleFlag: the replaying broker's cached flag of a queue says
// "not encrypted" while another broker has just switched the queue on: the store
// refuses the unsealed record. That refusal is not a bad record: the flag is forgotten
// and the next attempt seals the record (with a key) or refuses it as for any queue
// known to encrypt (without: quarantined with the missing key as reason, never stored).
// Without the forgetting, the stale flag is trusted for its whole TTL and the record is
// quarantined as a database failure.
func TestReplayAfterAStaleFlag(t *testing.T) {
	t.Parallel()
	sealer, err := envelope.New(bytes.Repeat([]byte{5}, 32))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		sealer     encryption.Sealer
		replayed   int64
		quarantine int64
	}{
		{name: "with a key the record is sealed", sealer: sealer, replayed: 1},
		{name: "without a key it is refused as for a known encrypted queue", quarantine: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fsys := memory.NewSpoolFS()
			pc := newPieces(t, fsys, spool.Options{})
			if err := pc.sp.Append(context.Background(), []spool.Record{rec("secret", "p", "t1", `{"card":"4111"}`, false)}); err != nil {
				t.Fatal(err)
			}
			policy := encryption.New(tc.sealer, pc.store, encryption.Options{CacheTTL: time.Hour})
			// The flag is read (off) and cached before the queue is switched on elsewhere.
			f := segment.Frame{Payload: []byte(`1`)}
			if err := policy.Memo(context.Background(), true).Seal(tenant, "secret", &f); err != nil || f.Encrypted {
				t.Fatalf("priming the flag: %v, sealed %v", err, f.Encrypted)
			}
			pc.store.SetEncryption(tenant, "secret", true)
			ping := &pinger{}
			ping.up.Store(true)
			d := New(pc.sp, pc.b, Options{Ping: ping, Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond,
				Permanent: 2, Encryption: policy})
			sum, err := d.Until(context.Background(), time.Now().Add(10*time.Second))
			if err != nil || sum.Replayed != tc.replayed || sum.Quarantined != tc.quarantine || sum.Remaining != 0 {
				t.Fatalf("summary %+v, %v; want %d replayed, %d quarantined", sum, err, tc.replayed, tc.quarantine)
			}
			for _, sg := range pc.store.Segments(tenant, "secret", "p") {
				frames, _ := pc.codec.Decode(sg.Blob)
				for _, fr := range frames {
					if !fr.Encrypted || bytes.Contains(fr.Payload, []byte("4111")) {
						t.Fatalf("plaintext stored for the encrypted queue: %s", fr.Payload)
					}
				}
			}
			if tc.quarantine > 0 {
				reasons := fsys.Names("failed/", ".reason")
				if len(reasons) != 1 || !strings.Contains(string(fsys.Get(reasons[0])), "QUEEN_ENCRYPTION_KEY") {
					t.Fatalf("quarantine reasons %v, want one naming the missing key", reasons)
				}
			}
		})
	}
}
