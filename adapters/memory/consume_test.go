package memory

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/ports/porttest"
)

// consumeFixture is a fresh store with the hooks of the consume suites: state is
// arranged directly, no clock is moved.
func consumeFixture(t *testing.T) porttest.ConsumeFixture {
	s := NewStore()
	return porttest.ConsumeFixture{
		Segments:     s,
		Consume:      s,
		Transactions: s,
		Streams:      s,
		TwoPhase:     s,
		Configure: func(_ *testing.T, tenant string, cfg ports.QueueConfig) {
			s.SetQueueConfig(tenant, cfg)
		},
		Age: func(_ *testing.T, pid string, d time.Duration) { s.Age(pid, d) },
		ExpireLease: func(t *testing.T, pid, group string) {
			t.Helper()
			if !s.ExpireLease(pid, group) {
				t.Fatalf("no lease of %s on %s to expire", group, pid)
			}
		},
		DeadLetters: func(_ *testing.T, pid string) []ports.DeadLetter { return s.DeadLetters(pid) },
		HoldCursor: func(t *testing.T, pid, group string) func() {
			release := s.HoldCursor(pid, group)
			t.Cleanup(release)
			return release
		},
		EmptyPartition: func(_ *testing.T, tenant, queue, partition string) string {
			return s.EmptyPartition(tenant, queue, partition)
		},
		Hotlist: s,
	}
}

func TestConsumeStoreConformance(t *testing.T) {
	porttest.ConsumeStore(t, consumeFixture)
}

func TestTransactionStoreConformance(t *testing.T) {
	porttest.TransactionStore(t, consumeFixture)
}

func TestTwoPhaseStoreConformance(t *testing.T) {
	porttest.TwoPhaseStore(t, consumeFixture)
}

func TestDecisionLogConformance(t *testing.T) {
	porttest.DecisionLog(t, func(*testing.T) ports.DecisionLog { return &Decisions{} })
}

func TestHotlistStoreConformance(t *testing.T) {
	porttest.HotlistStore(t, consumeFixture)
}

func TestHintBusConformance(t *testing.T) {
	porttest.HintBus(t, func(_ *testing.T, n int) []ports.HintBus {
		net := NewHintNet()
		buses := make([]ports.HintBus, n)
		for i := range buses {
			buses[i] = net.Bus()
		}
		return buses
	})
}

// TestClockDrivesLeases: leases follow Store.Now, so core tests can expire them by moving
// the clock instead of sleeping.
func TestClockDrivesLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := NewStore()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s.Now = func() time.Time { return now }
	h := [16]byte{1}
	res, err := s.PushSegments(ctx, []ports.Segment{{Tenant: ports.DefaultTenant, Queue: "q", Partition: "p",
		Count: 1, Hashes: h[:], Verified: -1, Blob: []byte("b")}})
	if err != nil {
		t.Fatal(err)
	}
	req := ports.PopRequest{Tenant: ports.DefaultTenant, Queue: "q", Group: ports.QueueModeGroup, Batch: 1,
		Partitions: 1, LeaseSeconds: 30, LeaseID: "00000000-0000-4000-8000-00000000000a", SubscribeMode: ports.SubscribeAll}
	c, _, err := s.Pop(ctx, req)
	if err != nil || len(c) != 1 || !c[0].LeaseExpires.Equal(now.Add(30*time.Second)) {
		t.Fatalf("pop: %+v, %v; want a lease to %v", c, err, now.Add(30*time.Second))
	}
	now = now.Add(20 * time.Second)
	if n, exp, err := s.ExtendLease(ctx, req.LeaseID, 15*time.Second+500*time.Millisecond); err != nil || n != 1 ||
		!exp.Equal(now.Add(15*time.Second)) {
		t.Fatalf("extend by 15.5 s: %d, %v, %v; want 1 to now+15 s (whole seconds)", n, exp, err)
	}
	now = now.Add(14 * time.Second)
	if c, _, _ := s.Pop(ctx, req); len(c) != 0 {
		t.Fatalf("pop under a live lease claimed %+v", c)
	}
	now = now.Add(2 * time.Second)
	if c, _, _ := s.Pop(ctx, req); len(c) != 1 || c[0].Attempt != 2 {
		t.Fatalf("pop after expiry: %+v, want a redelivery", c)
	}
	if off, ok := s.Cursor(res[0].PartitionID, ports.QueueModeGroup); !ok || off != -1 {
		t.Fatalf("cursor %d, %v; want -1", off, ok)
	}
	if _, ok := s.Cursor(res[0].PartitionID, "never"); ok {
		t.Fatal("a cursor for a group that never popped")
	}
}

func TestQueueConfig(t *testing.T) {
	t.Parallel()
	s := NewStore()
	if _, ok := s.QueueConfig(ports.DefaultTenant, "a.b.c"); ok {
		t.Fatal("a queue nothing created")
	}
	if _, _, err := s.Pop(context.Background(), ports.PopRequest{Tenant: ports.DefaultTenant, Queue: "a.b.c",
		Group: "g", SubscribeMode: ports.SubscribeNew}); err != nil {
		t.Fatal(err)
	}
	cfg, ok := s.QueueConfig(ports.DefaultTenant, "a.b.c")
	if !ok || cfg.Namespace != "a" || cfg.Task != "b" || cfg.LeaseTime != 300 || cfg.DedupWindowSeconds != 3600 {
		t.Fatalf("provisioned by a pop: %+v, %v", cfg, ok)
	}
	s.SetWindow(ports.DefaultTenant, "a.b.c", 10*time.Second)
	s.SetEncryption(ports.DefaultTenant, "a.b.c", true)
	if cfg, _ = s.QueueConfig(ports.DefaultTenant, "a.b.c"); cfg.DedupWindowSeconds != 10 || !cfg.EncryptionEnabled {
		t.Fatalf("after SetWindow and SetEncryption: %+v", cfg)
	}
	cfg.LeaseTime, cfg.DedupWindowSeconds = 7, 0
	s.SetQueueConfig(ports.DefaultTenant, cfg)
	if got, _ := s.QueueConfig(ports.DefaultTenant, "a.b.c"); got != cfg {
		t.Fatalf("after SetQueueConfig: %+v, want %+v", got, cfg)
	}
}

func TestStreamStoreConformance(t *testing.T) {
	porttest.StreamStore(t, consumeFixture)
}
