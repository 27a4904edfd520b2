package memory

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/ports/porttest"
)

func TestQueueAdminConformance(t *testing.T) {
	porttest.QueueAdmin(t, func(*testing.T) porttest.QueueAdminFixture {
		a := NewQueueAdmin()
		return porttest.QueueAdminFixture{
			Admin: a,
			AddDeadLetter: func(_ *testing.T, tenant string, d ports.DeadLetter) ports.DeadLetter {
				return a.AddDeadLetter(tenant, d)
			},
		}
	})
}

// A queue a dead letter created is the one a push would create: unconfigured, with the
// schema's defaults and the namespace and task of its dotted name, until Configure.
func TestQueueAdminPushedQueue(t *testing.T) {
	t.Parallel()
	a := NewQueueAdmin()
	now := time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC)
	a.Now = func() time.Time { return now }
	d := a.AddDeadLetter(ports.DefaultTenant, ports.DeadLetter{
		DeadLetterInfo: ports.DeadLetterInfo{Queue: "billing.invoices.v2", Partition: "p"}, Blob: []byte{1}})
	if !d.FailedAt.Equal(now.Truncate(time.Microsecond)) {
		t.Fatalf("FailedAt %v, want now to the microsecond", d.FailedAt)
	}
	if a.Configured(ports.DefaultTenant, "billing.invoices.v2") {
		t.Fatal("a pushed queue reads as configured")
	}
	got, err := a.Configure(context.Background(), ports.DefaultTenant, ports.QueueConfig{Name: "billing.invoices.v2"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := ports.QueueConfig{ID: got.ID, Name: "billing.invoices.v2", Namespace: "billing", Task: "invoices",
		QueueOptions: defaultOptions()}
	if got != want {
		t.Fatalf("an empty set on a pushed queue:\n got %+v\nwant %+v", got, want)
	}
	if !a.Configured(ports.DefaultTenant, "billing.invoices.v2") {
		t.Fatal("Configure did not mark the queue configured")
	}
}
