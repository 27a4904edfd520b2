package consume

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

// ackStore is a fakeStore whose Ack answers results (or an error).
type ackStore struct {
	fakeStore
	results []ports.AckResult
	err     error
}

func (a *ackStore) Ack(context.Context, []ports.AckItem) ([]ports.AckResult, error) {
	return a.results, a.err
}

const (
	testPartition = "00000000-0000-0000-0000-0000000000aa"
	testLease     = "00000000-0000-0000-0000-0000000000bb"
)

// TestStatsCountPopsAndAcks: the counters the Prometheus exporter reads count pops with
// a valid query and the messages they delivered, Ack calls and the acknowledgements the
// store applied.
func TestStatsCountPopsAndAcks(t *testing.T) {
	t.Parallel()
	codec, err := segment.NewCodec(3)
	if err != nil {
		t.Fatal(err)
	}
	item := AckInput{PartitionID: testPartition, TransactionID: "t1", Status: "completed", LeaseID: testLease}
	for _, tc := range []struct {
		name  string
		store *ackStore
		run   func(t *testing.T, s *Service)
		want  Stats
	}{
		{
			name:  "pop that delivers",
			store: &ackStore{fakeStore: fakeStore{claims: []ports.Claim{claimOf(t, codec, "1", "2", "3")}}},
			run: func(t *testing.T, s *Service) {
				if b, err := s.Pop(context.Background(), PopQuery{Queue: "q", Batch: 10}); err != nil || b == nil {
					t.Fatalf("pop: %v, %v", b, err)
				}
			},
			want: Stats{PopRequests: 1, PopMessages: 3},
		},
		{
			name:  "empty pop",
			store: &ackStore{},
			run: func(t *testing.T, s *Service) {
				if b, err := s.Pop(context.Background(), PopQuery{Queue: "q", Batch: 10}); err != nil || b != nil {
					t.Fatalf("pop: %v, %v", b, err)
				}
			},
			want: Stats{PopRequests: 1},
		},
		{
			name:  "refused query",
			store: &ackStore{},
			run: func(t *testing.T, s *Service) {
				if _, err := s.Pop(context.Background(), PopQuery{Batch: 10}); err == nil {
					t.Fatal("a pop naming no queue and no group was accepted")
				}
			},
			want: Stats{},
		},
		{
			name:  "acks applied and refused",
			store: &ackStore{results: []ports.AckResult{{OK: true}, {OK: false, Error: "lease mismatch"}}},
			run: func(t *testing.T, s *Service) {
				bad := AckInput{PartitionID: "not-a-uuid", TransactionID: "t3", Status: "completed"}
				if _, err := s.Ack(context.Background(), "", []AckInput{item, item, bad}); err != nil {
					t.Fatal(err)
				}
			},
			want: Stats{AckRequests: 1, AckMessages: 1},
		},
		{
			name:  "ack the store failed",
			store: &ackStore{err: errors.New("connection lost")},
			run: func(t *testing.T, s *Service) {
				if _, err := s.Ack(context.Background(), "", []AckInput{item}); err == nil {
					t.Fatal("the store's error was not returned")
				}
			},
			want: Stats{AckRequests: 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := New(tc.store, codec, Options{PollInitial: time.Millisecond})
			tc.run(t, s)
			if got := s.Stats(); got != tc.want {
				t.Fatalf("stats %+v, want %+v", got, tc.want)
			}
		})
	}
}
