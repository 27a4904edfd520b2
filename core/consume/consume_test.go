package consume

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

// fakeStore is an in-memory ports.ConsumeStore: Pop answers claims and can run a hook
// (a client going away) before it returns.
type fakeStore struct {
	claims   []ports.Claim
	onPop    func()
	released []ports.Claim
	relAuto  bool
}

func (f *fakeStore) Pop(context.Context, ports.PopRequest) ([]ports.Claim, []ports.Verdict, error) {
	if f.onPop != nil {
		f.onPop()
	}
	return f.claims, nil, nil
}
func (f *fakeStore) Ack(context.Context, []ports.AckItem) ([]ports.AckResult, error) { return nil, nil }
func (f *fakeStore) ExtendLease(context.Context, string, time.Duration) (int, time.Time, error) {
	return 0, time.Time{}, nil
}
func (f *fakeStore) Release(_ context.Context, _, _ string, autoAck bool, c []ports.Claim) error {
	f.released, f.relAuto = c, autoAck
	return nil
}

func claimOf(t *testing.T, codec *segment.Codec, payloads ...string) ports.Claim {
	t.Helper()
	frames := make([]segment.Frame, len(payloads))
	for i, p := range payloads {
		frames[i] = segment.Frame{TransactionID: "t" + p, Payload: []byte(p)}
	}
	return ports.Claim{Queue: "q", Partition: "p", PartitionID: "00000000-0000-0000-0000-0000000000aa",
		Start: 0, End: int64(len(payloads) - 1), Attempt: 1,
		Segments: []ports.StoredSegment{{BaseOffset: 0, Count: len(payloads), Blob: codec.Encode(frames)}}}
}

func TestPopReleasesClaimsOfAClientThatLeft(t *testing.T) {
	t.Parallel()
	codec, err := segment.NewCodec(3)
	if err != nil {
		t.Fatal(err)
	}
	for _, autoAck := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		st := &fakeStore{claims: []ports.Claim{claimOf(t, codec, "1", "2")}, onPop: cancel}
		s := New(st, codec, Options{})
		b, err := s.Pop(ctx, PopQuery{Queue: "q", AutoAck: autoAck, Batch: 10})
		if b != nil || !errors.Is(err, context.Canceled) {
			t.Fatalf("autoAck=%v: got %v, %v; want no batch and the context's error", autoAck, b, err)
		}
		if len(st.released) != 1 || st.relAuto != autoAck {
			t.Fatalf("autoAck=%v: released %v (auto %v)", autoAck, st.released, st.relAuto)
		}
	}
}

func TestPopDecodesSpans(t *testing.T) {
	t.Parallel()
	codec, _ := segment.NewCodec(3)
	c := claimOf(t, codec, "1", "2", "3", "4")
	c.Start, c.End = 1, 2 // the segment extends beyond the span on both sides
	s := New(&fakeStore{claims: []ports.Claim{c}}, codec, Options{})
	b, err := s.Pop(context.Background(), PopQuery{Queue: "q", Batch: 10})
	if err != nil || b == nil || len(b.Messages) != 2 || string(b.Messages[0].Data) != "2" || string(b.Messages[1].Data) != "3" {
		t.Fatalf("got %+v, %v", b, err)
	}
	if b.LeaseID == "" || b.Messages[0].LeaseID != b.LeaseID || b.Group != ports.QueueModeGroup {
		t.Fatalf("lease/group: %+v", b)
	}
	// A span the segments do not cover is refused, never delivered around the hole.
	c.End = 5
	s = New(&fakeStore{claims: []ports.Claim{c}}, codec, Options{})
	if _, err := s.Pop(context.Background(), PopQuery{Queue: "q", Batch: 10}); !errors.Is(err, segment.ErrCorrupt) {
		t.Fatalf("uncovered span: %v", err)
	}
}

func TestPopPausedClaimsNothing(t *testing.T) {
	t.Parallel()
	codec, _ := segment.NewCodec(3)
	popped := false
	st := &fakeStore{claims: []ports.Claim{claimOf(t, codec, "1")}, onPop: func() { popped = true }}
	s := New(st, codec, Options{Paused: func() bool { return true }, PollInitial: time.Millisecond})
	b, err := s.Pop(context.Background(), PopQuery{Queue: "q", Batch: 10, Wait: true, Timeout: 20 * time.Millisecond})
	if b != nil || err != nil || popped {
		t.Fatalf("paused pop: %v, %v, store called %v", b, err, popped)
	}
}

func TestNormalizeStatus(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]ports.AckStatus{"": ports.AckCompleted, "ok": ports.AckCompleted,
		"success": ports.AckCompleted, "acked": ports.AckCompleted, "completed": ports.AckCompleted,
		"retry": ports.AckRetry, "dlq": ports.AckDLQ, "Completed": ports.AckFailed, "boom": ports.AckFailed} {
		if got := NormalizeStatus(in); got != want {
			t.Errorf("%q -> %q, want %q", in, got, want)
		}
	}
}

// With autoAck the claim already moved the cursor: a span that cannot be delivered (here
// one the segments do not cover) must be given back, or its messages, and those of the
// other partitions claimed with it, would be skipped unseen.
func TestPopReleasesAutoAckClaimsItCannotDeliver(t *testing.T) {
	t.Parallel()
	codec, _ := segment.NewCodec(3)
	good := claimOf(t, codec, "1", "2")
	bad := claimOf(t, codec, "3")
	bad.PartitionID, bad.End = "00000000-0000-0000-0000-0000000000bb", 4
	st := &fakeStore{claims: []ports.Claim{good, bad}}
	s := New(st, codec, Options{})
	if _, err := s.Pop(context.Background(), PopQuery{Queue: "q", AutoAck: true, Batch: 10, Partitions: 2}); !errors.Is(err, segment.ErrCorrupt) {
		t.Fatalf("uncovered span: %v", err)
	}
	if len(st.released) != 2 || !st.relAuto {
		t.Fatalf("released %d claims (auto %v), want both with autoAck", len(st.released), st.relAuto)
	}
}

// Stop (the broker's shutdown) ends parked long polls at once with nothing claimed.
func TestStopEndsParkedPops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		codec, _ := segment.NewCodec(3)
		s := New(&fakeStore{}, codec, Options{})
		done := make(chan error, 1)
		go func() {
			b, err := s.Pop(context.Background(), PopQuery{Queue: "q", Batch: 10, Wait: true, Timeout: time.Minute})
			if b != nil {
				err = errors.New("claimed something")
			}
			done <- err
		}()
		synctest.Wait() // the pop is parked
		start := time.Now()
		s.Stop()
		if err := <-done; err != nil || time.Since(start) != 0 {
			t.Fatalf("parked pop after Stop: %v after %v of fake time", err, time.Since(start))
		}
		// Later pops do not park either.
		if b, err := s.Pop(context.Background(), PopQuery{Queue: "q", Batch: 10, Wait: true, Timeout: time.Minute}); b != nil || err != nil || time.Since(start) != 0 {
			t.Fatalf("pop after Stop: %v, %v after %v", b, err, time.Since(start))
		}
	})
}
