package fusion

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/ports"
)

// TestRefusedPlainSegment: a segment of unsealed frames is sent Plain, one of sealed
// frames is not; one the store refuses (the queue encrypts) answers its frames Error
// with ErrEncrypts, and its hashes are not remembered as committed: the sealed push of
// the same transaction id that follows still claims the watermark of the last commit
// (a remembered hash would have sent a full probe, -1).
func TestRefusedPlainSegment(t *testing.T) {
	t.Parallel()
	store := memory.NewStore()
	var mu sync.Mutex
	var sent []string
	store.BeforePush = func(segs []ports.Segment) error {
		mu.Lock()
		defer mu.Unlock()
		for _, sg := range segs {
			sent = append(sent, fmt.Sprintf("plain=%t verified=%d", sg.Plain, sg.Verified))
		}
		return nil
	}
	b := newBatcher(t, store, Options{Shards: 1})
	var wg sync.WaitGroup

	first := request(&wg, "q", "p", "a")
	b.Submit(first)
	wg.Wait()
	if r := first.Results[0]; r.Status != Queued || r.Offset != 0 {
		t.Fatalf("first push: %+v, want queued at 0", r)
	}

	store.SetEncryption(tenant, "q", true) // another broker switched the queue
	refused := request(&wg, "q", "p", "b")
	b.Submit(refused)
	wg.Wait()
	if r := refused.Results[0]; r.Status != Error || !errors.Is(r.Err, ErrEncrypts) {
		t.Fatalf("plain push to an encrypted queue: %+v, want Error wrapping ErrEncrypts", r)
	}

	sealed := request(&wg, "q", "p", "b")
	sealed.Frames[0].Encrypted = true
	b.Submit(sealed)
	wg.Wait()
	if r := sealed.Results[0]; r.Status != Queued || r.Offset != 1 {
		t.Fatalf("sealed push: %+v, want queued at 1 (the refused one allocated nothing)", r)
	}
	mu.Lock()
	defer mu.Unlock()
	want := "[plain=true verified=-1 plain=true verified=0 plain=false verified=0]"
	if fmt.Sprint(sent) != want {
		t.Fatalf("segments sent %v, want %s", sent, want)
	}
}
