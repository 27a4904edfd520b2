package push

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/queen-go/queen/core/encryption"
	"github.com/queen-go/queen/core/envelope"
	"github.com/queen-go/queen/ports"
)

// flags answers the encryption flags of on and counts the reads; queue "broken" cannot
// be read.
type flags struct {
	on    map[string]bool
	calls atomic.Int32
}

func (c *flags) EncryptionEnabled(_ context.Context, _, queue string) (bool, error) {
	c.calls.Add(1)
	if queue == "broken" {
		return false, errors.New("database down")
	}
	return c.on[queue], nil
}

// failingSealer cannot seal.
type failingSealer struct{}

func (failingSealer) Seal([]byte) ([]byte, error) { return nil, errors.New("no entropy") }

func newSealer(t *testing.T) *envelope.Sealer {
	t.Helper()
	s, err := envelope.New(bytes.Repeat([]byte{1}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// isEnvelope reports whether payload is an encryption envelope.
func isEnvelope(payload []byte) bool {
	var w struct{ Encrypted, IV, AuthTag string }
	return json.Unmarshal(payload, &w) == nil && w.Encrypted != "" && w.IV != "" && w.AuthTag != ""
}

// TestPushEncryptsConfiguredQueues: a 1000-item push over three queues reads three
// flags; the encrypted queue's payloads are stored sealed, the plain queue's as pushed,
// and those of the queue whose flag cannot be read are sealed anyway (never plaintext).
func TestPushEncryptsConfiguredQueues(t *testing.T) {
	t.Parallel()
	sealer := newSealer(t)
	settings := &flags{on: map[string]bool{"secret": true}}
	f := newFixture(t, Options{Encryption: encryption.New(sealer, settings, encryption.Options{})})
	items := make([]Item, 0, 1000)
	for i := range 1000 {
		q := []string{"secret", "plain", "broken"}[i%3]
		items = append(items, Item{Queue: q, Payload: []byte(`{"n":1}`)})
	}
	for _, r := range f.svc.Push(t.Context(), tenant, "", items) {
		if r.Status != StatusQueued {
			t.Fatalf("item %d: %+v", r.Index, r)
		}
	}
	if n := settings.calls.Load(); n != 3 {
		t.Fatalf("%d flag lookups for a push over three queues, want 3", n)
	}
	for _, tt := range []struct {
		queue     string
		encrypted bool
	}{{"secret", true}, {"plain", false}, {"broken", true}} {
		fr := f.frames(t, tt.queue, DefaultPartition)
		if len(fr) == 0 {
			t.Fatalf("queue %s: nothing stored", tt.queue)
		}
		for _, x := range fr {
			if x.Encrypted != tt.encrypted || isEnvelope(x.Payload) != tt.encrypted {
				t.Fatalf("queue %s: frame %s encrypted %v, want %v", tt.queue, x.Payload, x.Encrypted, tt.encrypted)
			}
			if tt.encrypted {
				if pt, err := sealer.Open(x.Payload); err != nil || string(pt) != `{"n":1}` {
					t.Fatalf("envelope opens to %q, %v", pt, err)
				}
			}
		}
	}
}

// TestPushRefusals: what cannot be written as its queue requires is answered failed,
// with the reason, and nothing of it is stored; the other items of the request are.
func TestPushRefusals(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		sealer encryption.Sealer
		queue  string
		spool  bool
		want   Status
		err    error
	}{
		{name: "encrypted queue without a key", queue: "secret", want: StatusFailed, err: encryption.ErrNoKey},
		{name: "encrypted queue without a key, spool configured", queue: "secret", spool: true, want: StatusFailed, err: encryption.ErrNoKey},
		{name: "seal failure", sealer: failingSealer{}, queue: "secret", want: StatusFailed, err: encryption.ErrSeal},
		{name: "unreadable flag without a key", queue: "broken", want: StatusFailed, err: encryption.ErrFlagUnknown},
		// With a spool the item waits there, as pushed, for the replay to decide.
		{name: "unreadable flag without a key, spool configured", queue: "broken", spool: true, want: StatusBuffered},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := Options{Encryption: encryption.New(tt.sealer, &flags{on: map[string]bool{"secret": true}}, encryption.Options{})}
			var f *fixture
			if tt.spool {
				var divert atomic.Bool
				f, _, _, _ = spoolFixture(t, &divert)
				f.svc.opts.Encryption = opts.Encryption
			} else {
				f = newFixture(t, opts)
			}
			res := f.svc.Push(t.Context(), tenant, "", []Item{
				{Queue: tt.queue, TransactionID: "x", Payload: []byte(`{"card":"4111"}`)},
				{Queue: "plain", Payload: []byte(`1`)},
				{Queue: tt.queue, TransactionID: "x", Payload: []byte(`{"card":"4111"}`)}, // a follower
			})
			for _, i := range []int{0, 2} {
				if res[i].Status != tt.want || !errors.Is(res[i].Err, tt.err) || (tt.err == nil) != (res[i].Err == nil) {
					t.Fatalf("item %d: status %s, err %v; want %s, %v", i, res[i].Status, res[i].Err, tt.want, tt.err)
				}
			}
			if res[1].Status != StatusQueued {
				t.Fatalf("the plain item: %+v", res[1])
			}
			if fr := f.frames(t, tt.queue, DefaultPartition); len(fr) != 0 {
				t.Fatalf("%d frames stored for the refused item: %+v", len(fr), fr)
			}
		})
	}
}

// TestDeferredItemsAreSpooledAsPushed: without a key and without the flag, an item goes
// to the spool unsealed and unmarked, so that the replay reads the flag and decides.
func TestDeferredItemsAreSpooledAsPushed(t *testing.T) {
	t.Parallel()
	var divert atomic.Bool
	f, _, sp, _ := spoolFixture(t, &divert)
	f.svc.opts.Encryption = encryption.New(nil, &flags{}, encryption.Options{})
	var bundles atomic.Int32
	f.store.BeforePush = func([]ports.Segment) error { bundles.Add(1); return nil }
	if got := statuses(f.svc.Push(t.Context(), tenant, "", []Item{{Queue: "broken", Payload: []byte(`7`)}})); got != "buffered " {
		t.Fatalf("statuses %s", got)
	}
	b, err := sp.Next(10)
	if err != nil || b == nil || len(b.Records) != 1 || b.Records[0].Encrypted || string(b.Records[0].Payload) != "7" || bundles.Load() != 0 {
		t.Fatalf("spool %+v, %v; bundles %d", b, err, bundles.Load())
	}
}

// TestDivertedPushesDoNotReadFlags: while every push is spooled, an expired flag is not
// read (the database may be away): the last value read is used.
func TestDivertedPushesDoNotReadFlags(t *testing.T) {
	t.Parallel()
	var divert atomic.Bool
	f, _, sp, _ := spoolFixture(t, &divert)
	settings := &flags{on: map[string]bool{"secret": true}}
	f.svc.opts.Encryption = encryption.New(newSealer(t), settings, encryption.Options{CacheTTL: 1}) // 1 ns: always expired
	f.svc.Push(t.Context(), tenant, "", []Item{{Queue: "secret", Payload: []byte(`1`)}})
	divert.Store(true)
	if got := statuses(f.svc.Push(t.Context(), tenant, "", []Item{{Queue: "secret", Payload: []byte(`2`)}})); got != "buffered " {
		t.Fatalf("statuses %s", got)
	}
	if n := settings.calls.Load(); n != 1 {
		t.Fatalf("%d flag reads, want 1 (none while diverted)", n)
	}
	b, err := sp.Next(10)
	if err != nil || b == nil || len(b.Records) != 1 || !b.Records[0].Encrypted || !isEnvelope(b.Records[0].Payload) {
		t.Fatalf("the spooled record is not sealed: %+v, %v", b, err)
	}
}

// TestTransactionEncryption: a transaction's pushes are sealed like plain pushes, and a
// push that cannot be written as its queue requires fails the whole transaction before
// anything is applied.
func TestTransactionEncryption(t *testing.T) {
	t.Parallel()
	sealer := newSealer(t)
	for _, tt := range []struct {
		name   string
		sealer encryption.Sealer
		err    error
	}{
		{name: "sealed with a key", sealer: sealer},
		{name: "refused without a key", err: encryption.ErrNoKey},
		{name: "refused when the seal fails", sealer: failingSealer{}, err: encryption.ErrSeal},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, Options{Encryption: encryption.New(tt.sealer, &flags{on: map[string]bool{"secret": true}}, encryption.Options{})})
			f.svc.opts.Codec, f.svc.opts.Transactions = f.codec, f.store
			_, err := f.svc.Transaction(t.Context(), tenant, "", []TxnOp{
				{Push: &TxnPush{Item: Item{Queue: "plain", Payload: []byte(`1`)}}},
				{Push: &TxnPush{Item: Item{Queue: "secret", Payload: []byte(`{"card":"4111"}`)}}},
			}, "")
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("Transaction = %v, want %v", err, tt.err)
			}
			plain, secret := f.frames(t, "plain", DefaultPartition), f.frames(t, "secret", DefaultPartition)
			if tt.err != nil {
				if len(plain)+len(secret) != 0 {
					t.Fatalf("a refused transaction stored %d frames", len(plain)+len(secret))
				}
				return
			}
			if len(plain) != 1 || plain[0].Encrypted || len(secret) != 1 || !secret[0].Encrypted {
				t.Fatalf("stored plain %+v, secret %+v", plain, secret)
			}
			if pt, err := sealer.Open(secret[0].Payload); err != nil || string(pt) != `{"card":"4111"}` {
				t.Fatalf("envelope opens to %q, %v", pt, err)
			}
		})
	}
}
