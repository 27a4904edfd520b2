package consume

import (
	"errors"
	"testing"
	"time"

	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

func TestRequestResolvesAQuery(t *testing.T) {
	t.Parallel()
	codec, err := segment.NewCodec(1)
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name     string
		opts     Options
		q        PopQuery
		wantMode string
		wantFrom time.Time
		wantWait time.Duration
		wantErr  string
	}{
		{name: "queue mode always reads from the start", q: PopQuery{Queue: "q", SubscriptionMode: "new", HasSubscriptionMode: true},
			wantMode: ports.SubscribeAll},
		{name: "a new group reads the backlog by default", q: PopQuery{Queue: "q", Group: "g"}, wantMode: ports.SubscribeAll},
		{name: "the broker's default new", opts: Options{DefaultSubscription: ports.SubscribeNew},
			q: PopQuery{Queue: "q", Group: "g"}, wantMode: ports.SubscribeNew},
		{name: "a named mode wins over the default", opts: Options{DefaultSubscription: ports.SubscribeNew},
			q: PopQuery{Queue: "q", Group: "g", SubscriptionMode: "all", HasSubscriptionMode: true}, wantMode: ports.SubscribeAll},
		{name: "new-only spelling", q: PopQuery{Queue: "q", Group: "g", SubscriptionMode: "new-only", HasSubscriptionMode: true},
			wantMode: ports.SubscribeNew},
		{name: "an unknown mode is all", opts: Options{DefaultSubscription: ports.SubscribeNew},
			q: PopQuery{Queue: "q", Group: "g", SubscriptionMode: "NEW", HasSubscriptionMode: true}, wantMode: ports.SubscribeAll},
		{name: "subscriptionFrom now is new", q: PopQuery{Queue: "q", Group: "g", SubscriptionFrom: "now"}, wantMode: ports.SubscribeNew},
		{name: "subscriptionFrom a timestamp", q: PopQuery{Queue: "q", Group: "g", SubscriptionFrom: from.Format(time.RFC3339)},
			wantMode: ports.SubscribeTimestamp, wantFrom: from},
		{name: "a bad subscriptionFrom is refused in queue mode too", q: PopQuery{Queue: "q", SubscriptionFrom: "yesterday"},
			wantErr: `query parameter subscriptionFrom="yesterday": want now or an RFC 3339 timestamp`},
		{name: "long poll with the default deadline", opts: Options{DefaultTimeout: 7 * time.Second},
			q: PopQuery{Queue: "q", Wait: true, Timeout: TimeoutDefault}, wantMode: ports.SubscribeAll, wantWait: 7 * time.Second},
		{name: "long poll with its own deadline", q: PopQuery{Queue: "q", Wait: true, Timeout: 250 * time.Millisecond},
			wantMode: ports.SubscribeAll, wantWait: 250 * time.Millisecond},
		{name: "an explicit zero deadline does not wait", q: PopQuery{Queue: "q", Wait: true, Timeout: 0}, wantMode: ports.SubscribeAll},
		{name: "a timeout without wait does not wait", q: PopQuery{Queue: "q", Timeout: time.Second}, wantMode: ports.SubscribeAll},
		{name: "bad queue name", q: PopQuery{Queue: "a\x01"}, wantErr: "queue name "},
		{name: "bad partition name", q: PopQuery{Queue: "q", Partition: "p\x00"}, wantErr: "partition name "},
		{name: "bad group name", q: PopQuery{Queue: "q", Group: "g\n"}, wantErr: "query parameter consumerGroup "},
		{name: "discovery needs a namespace or task", q: PopQuery{}, wantErr: ErrDiscoveryRequired.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := New(&fakeStore{}, codec, tt.opts)
			req, wait, err := s.Request(tt.q)
			if tt.wantErr != "" {
				var ie *InputError
				if err == nil || (len(err.Error()) < len(tt.wantErr) || err.Error()[:len(tt.wantErr)] != tt.wantErr) ||
					(!errors.As(err, &ie) && !errors.Is(err, ErrDiscoveryRequired)) {
					t.Fatalf("err %v, want an input error starting %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.SubscribeMode != tt.wantMode || !req.SubscribeFrom.Equal(tt.wantFrom) || wait != tt.wantWait {
				t.Fatalf("mode %q from %v wait %v, want %q %v %v", req.SubscribeMode, req.SubscribeFrom, wait,
					tt.wantMode, tt.wantFrom, tt.wantWait)
			}
			if req.Tenant != ports.DefaultTenant || req.Batch < 1 || req.Partitions < 1 || !IsUUID(req.LeaseID) {
				t.Fatalf("request %+v: want the default tenant, positive limits and a lease id", req)
			}
		})
	}
}

func TestRequestPinnedPopClaimsOnePartitionAndAutoAckHasNoLease(t *testing.T) {
	t.Parallel()
	codec, _ := segment.NewCodec(1)
	s := New(&fakeStore{}, codec, Options{})
	req, _, err := s.Request(PopQuery{Queue: "q", Partition: "p", Partitions: 10, AutoAck: true, Group: "g"})
	if err != nil || req.Partitions != 1 || req.LeaseID != "" || req.Group != "g" {
		t.Fatalf("%+v, %v", req, err)
	}
}

// TestRequestClampsTheBatch: a batch above MaxBatch is served as MaxBatch, not refused.
func TestRequestClampsTheBatch(t *testing.T) {
	t.Parallel()
	codec, _ := segment.NewCodec(1)
	s := New(&fakeStore{}, codec, Options{})
	for batch, want := range map[int]int{0: 1, 1: 1, MaxBatch: MaxBatch, MaxBatch + 1: MaxBatch, 99999999: MaxBatch} {
		req, _, err := s.Request(PopQuery{Queue: "q", Batch: batch})
		if err != nil || req.Batch != want {
			t.Fatalf("batch %d: request batch %d (%v), want %d", batch, req.Batch, err, want)
		}
	}
}
