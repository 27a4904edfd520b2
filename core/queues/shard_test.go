package queues

import (
	"context"
	"errors"
	"testing"

	"github.com/queen-go/queen/ports"
)

// shardStore is a QueueAdmin that records the configuration it was asked to store.
type shardStore struct {
	ports.QueueAdmin
	got *ports.QueueConfig
}

func (s *shardStore) Configure(_ context.Context, _ string, cfg ports.QueueConfig, _ ports.QueueOption) (ports.QueueConfig, error) {
	s.got = &cfg
	return cfg, nil
}

// TestConfigureShard: the shard option reaches the store within the configured shards
// and is refused, naming the option, outside them.
func TestConfigureShard(t *testing.T) {
	t.Parallel()
	ptr := func(n int) *int { return &n }
	for _, tt := range []struct {
		name    string
		shards  int
		shard   *int
		refused bool
	}{
		{"none", 3, nil, false},
		{"first", 3, ptr(0), false},
		{"last", 3, ptr(2), false},
		{"beyond", 3, ptr(3), true},
		{"negative", 3, ptr(-1), true},
		{"one database takes shard 0", 0, ptr(0), false},
		{"one database refuses shard 1", 0, ptr(1), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := &shardStore{}
			s := New(store, Options{Shards: tt.shards})
			_, err := s.Configure(t.Context(), ports.DefaultTenant, Request{Queue: "q", Shard: tt.shard})
			var ie *InputError
			switch {
			case tt.refused && (!errors.As(err, &ie) || ie.Option != "shard"):
				t.Fatalf("error %v, want an *InputError about shard", err)
			case tt.refused && store.got != nil:
				t.Fatal("a refused configure reached the store")
			case !tt.refused && err != nil:
				t.Fatal(err)
			case !tt.refused && (store.got.Shard == nil) != (tt.shard == nil):
				t.Fatalf("the store got shard %v, want %v", store.got.Shard, tt.shard)
			}
		})
	}
}
