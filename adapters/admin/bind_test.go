package admin

import (
	"context"
	"testing"

	"github.com/queen-go/queen/ports"
)

// TestBoundStatementsArePlannedWithTheirValues: under the broker's BindOptions no admin
// statement is prepared as a named statement, so none is ever run with a generic plan
// (PostgreSQL switches a named one to its generic plan after five runs; the counts
// function is written to be planned with its NULL filters as constants).
func TestBoundStatementsArePlannedWithTheirValues(t *testing.T) {
	f := newFixture(t, Options{})
	f.db.SetMaxOpenConns(1) // one session: pg_prepared_statements is per session
	f.push(t, "q", "p", 3)
	ctx := context.Background()
	for range 10 {
		if _, err := f.admin.Status(ctx, tenant, ports.ResourceFilter{Queue: "q"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.admin.ListQueues(ctx, tenant, ports.ResourceFilter{Namespace: "ns"}, ports.ResourcePage{Limit: 10}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.admin.BrowseSegments(ctx, tenant, ports.MessageFilter{Queue: "q"}, nil, 10); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.count(t, `SELECT count(*) FROM pg_prepared_statements
		WHERE statement NOT LIKE '%pg_prepared_statements%' -- this one
		  AND (statement LIKE '%log_queue_counts_v1%' OR statement LIKE '%WITH sel AS%' OR statement LIKE '%queen.log_txns AS t%')`); n != 0 {
		t.Errorf("%d admin statements prepared as named statements, want none", n)
	}
}
