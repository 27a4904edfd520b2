package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/core/shard"
	"github.com/queen-go/queen/ports"
)

// A database migrated as shard n mints partition ids naming n (shard 0: version 4, as
// an unsharded database always has), and refuses to be migrated as another shard.
func TestShardIdentity(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 3} {
		t.Run(map[int]string{0: "shard 0", 3: "shard 3"}[n], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url := pgtest.NewDatabase(t)
			s, err := Open(ctx, url, Options{PoolSize: 2, Shard: n})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if err := s.Migrate(ctx); err != nil { // again: the claim is idempotent
				t.Fatalf("second migration: %v", err)
			}
			res, err := s.PushSegments(ctx, []ports.Segment{{Tenant: ports.DefaultTenant, Queue: "q", Partition: "p", Count: 1,
				Hashes: make([]byte, 16), Verified: -1, Blob: []byte("x")}})
			if err != nil || res[0].Status != ports.SegmentQueued {
				t.Fatalf("push: %+v, %v", res, err)
			}
			id, err := uuid.Parse(res[0].PartitionID)
			if err != nil {
				t.Fatal(err)
			}
			if got := shard.Of(id); got != n {
				t.Fatalf("partition id %s names shard %d, want %d", id, got, n)
			}

			// A later migration leaves the default alone (ALTER TABLE would wait for every
			// writer), also for a role whose search_path names queen.
			defaultRow := func() (xmin string) {
				t.Helper()
				if err := s.pool.QueryRow(ctx, `SELECT d.xmin::text FROM pg_attrdef d
					JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
					WHERE d.adrelid = 'queen.log_partitions'::regclass AND a.attname = 'id'`).Scan(&xmin); err != nil {
					t.Fatal(err)
				}
				return xmin
			}
			before := defaultRow()
			sep := "?"
			if strings.Contains(url, "?") {
				sep = "&"
			}
			again, err := Open(ctx, url+sep+"search_path=queen,public", Options{PoolSize: 1, Shard: n})
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			if err := again.Migrate(ctx); err != nil {
				t.Fatalf("migration with search_path queen, public: %v", err)
			}
			if after := defaultRow(); after != before {
				t.Fatalf("the migration rewrote log_partitions.id's default (pg_attrdef xmin %s -> %s)", before, after)
			}

			other, err := Open(ctx, url, Options{PoolSize: 1, Shard: n + 1})
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			if err := other.Migrate(ctx); err == nil || !strings.Contains(err.Error(), "reordered") {
				t.Fatalf("migrating shard %d's database as shard %d: %v, want a refusal", n, n+1, err)
			}
		})
	}
}
