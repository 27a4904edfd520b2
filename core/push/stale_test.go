package push

import (
	"bytes"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/core/encryption"
)

// staleFixture is a push service whose policy (sealer nil: no key) has read and cached
// queue "secret"'s flag as off, after which another broker switched the queue on (the
// store's flag): every payload it decides from its cache is plaintext for an encrypted
// queue. It spools failed bundles, so a refusal spooled as an outage would show.
func staleFixture(t *testing.T, sealer encryption.Sealer) *fixture {
	t.Helper()
	f, _, _, _ := spoolFixture(t, new(atomic.Bool))
	f.svc.opts.Encryption = encryption.New(sealer, f.store, encryption.Options{CacheTTL: time.Hour})
	f.svc.opts.Codec, f.svc.opts.Transactions = f.codec, f.store
	if r := f.svc.Push(t.Context(), tenant, "", []Item{{Queue: "secret", Payload: []byte(`0`)}})[0]; r.Status != StatusQueued {
		t.Fatalf("priming push: %+v", r)
	}
	f.store.SetEncryption(tenant, "secret", true)
	return f
}

// noPlaintext fails when "secret" stores an unsealed frame other than the priming one.
func (f *fixture) noPlaintext(t *testing.T) (sealed int) {
	t.Helper()
	for i, fr := range f.frames(t, "secret", DefaultPartition) {
		switch {
		case fr.Encrypted:
			sealed++
		case i > 0 || bytes.Contains(fr.Payload, []byte("4111")):
			t.Fatalf("plaintext stored for the encrypted queue: %s", fr.Payload)
		}
	}
	return sealed
}

// TestPushAfterAStaleFlag: the store refuses the plaintext; without a key the item fails
// with ErrNoKey (the answer for a queue known to encrypt: not spooled, not retried in
// plaintext) and the flag is forgotten, so the next push is refused before the store;
// with a key the item is sealed and pushed again, and queued.
func TestPushAfterAStaleFlag(t *testing.T) {
	t.Parallel()
	items := []Item{{Queue: "secret", Payload: []byte(`{"card":"4111"}`)}, {Queue: "other", Payload: []byte(`1`)},
		{Queue: "secret", Payload: []byte(`{"card":"4111"}`), TransactionID: "t"}}
	t.Run("without a key", func(t *testing.T) {
		t.Parallel()
		f := staleFixture(t, nil)
		for round := range 2 {
			res := f.svc.Push(t.Context(), tenant, "", items)
			for _, i := range []int{0, 2} {
				if res[i].Status != StatusFailed || !errors.Is(res[i].Err, encryption.ErrNoKey) {
					t.Fatalf("round %d item %d: %+v, want failed with ErrNoKey", round, i, res[i])
				}
			}
			if res[1].Status != StatusQueued {
				t.Fatalf("round %d: the other queue's item %+v, want queued", round, res[1])
			}
		}
		if n := f.noPlaintext(t); n != 0 {
			t.Fatalf("%d sealed frames stored by a broker without a key", n)
		}
	})
	t.Run("with a key", func(t *testing.T) {
		t.Parallel()
		f := staleFixture(t, newSealer(t))
		res := f.svc.Push(t.Context(), tenant, "", items)
		for i, r := range res {
			if r.Status != StatusQueued || r.Err != nil {
				t.Fatalf("item %d: %+v, want queued", i, r)
			}
		}
		if n := f.noPlaintext(t); n != 2 {
			t.Fatalf("%d sealed frames stored, want 2", n)
		}
	})
}

// TestTransactionAfterAStaleFlag: the store rolls the transaction back; it runs once
// more with the flag read afresh: refused with ErrNoKey without a key (as for a queue
// known to encrypt), committed sealed with one.
func TestTransactionAfterAStaleFlag(t *testing.T) {
	t.Parallel()
	ops := []TxnOp{{Push: &TxnPush{Item: Item{Queue: "other", Payload: []byte(`1`)}}},
		{Push: &TxnPush{Item: Item{Queue: "secret", Payload: []byte(`{"card":"4111"}`)}}}}
	t.Run("without a key", func(t *testing.T) {
		t.Parallel()
		f := staleFixture(t, nil)
		if _, err := f.svc.Transaction(t.Context(), tenant, "", ops, ""); !errors.Is(err, encryption.ErrNoKey) {
			t.Fatalf("Transaction = %v, want ErrNoKey", err)
		}
		if n := len(f.frames(t, "other", DefaultPartition)); n != 0 || f.noPlaintext(t) != 0 {
			t.Fatalf("a refused transaction stored %d frames of the other queue", n)
		}
	})
	t.Run("with a key", func(t *testing.T) {
		t.Parallel()
		f := staleFixture(t, newSealer(t))
		res, err := f.svc.Transaction(t.Context(), tenant, "", ops, "")
		if err != nil || res[1].Push.Status != StatusQueued {
			t.Fatalf("Transaction = %+v, %v", res, err)
		}
		if n := f.noPlaintext(t); n != 1 {
			t.Fatalf("%d sealed frames stored, want 1", n)
		}
	})
}
