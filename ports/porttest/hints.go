package porttest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// HintBus runs the conformance suite of ports.HintBus; newBuses must return n endpoints
// (n >= 2) of one fresh network, each standing for one broker of a database.
func HintBus(t *testing.T, newBuses func(t *testing.T, n int) []ports.HintBus) {
	tests := []struct {
		name  string
		buses int
		run   func(t *testing.T, buses []ports.HintBus)
	}{
		{"a hint reaches every other endpoint, never its sender", 3, testHintFanOut},
		{"a batch larger than one notification arrives whole", 2, testHintBigBatch},
		{"names with any printable Unicode arrive intact", 2, testHintUnicode},
		{"batches arrive in publish order", 2, testHintOrder},
		{"queue-level hints arrive with their kind", 3, testHintKinds},
		{"an empty publish sends nothing", 2, testHintEmpty},
		{"a publish with an ended context fails", 2, testHintPublishCancelled},
		{"Listen returns when its context ends", 2, testHintListenEnds},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			buses := newBuses(t, tt.buses)
			if len(buses) != tt.buses {
				t.Fatalf("newBuses returned %d endpoints, want %d", len(buses), tt.buses)
			}
			tt.run(t, buses)
		})
	}
}

// hintWait bounds every wait of the suite: a notification crosses a database in
// milliseconds, so this only fails a broken bus, never a slow machine.
const hintWait = 30 * time.Second

// probeQueue names the hints that only check an endpoint is listening; recorders keep
// them apart from the hints under test.
const probeQueue = "porttest.probe"

// hintRecorder collects what one endpoint's Listen delivers.
type hintRecorder struct {
	mu      sync.Mutex
	batches [][]ports.Hint // delivered batches without the probes
	probes  int
	done    chan error // Listen's return value
}

func (r *hintRecorder) deliver(hs []ports.Hint) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var real []ports.Hint
	for _, h := range hs {
		if h.Queue == probeQueue {
			r.probes++
		} else {
			real = append(real, h)
		}
	}
	if len(real) > 0 {
		r.batches = append(r.batches, real)
	}
}

// got returns the delivered batches (probes left out) and whether a probe arrived.
func (r *hintRecorder) got() ([][]ports.Hint, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.batches), r.probes > 0
}

// listen starts Listen on every endpoint and waits until each one hears probes; the
// listeners stop when the test ends, and must then return their context's error.
func listen(t *testing.T, buses []ports.HintBus) []*hintRecorder {
	t.Helper()
	recs := make([]*hintRecorder, len(buses))
	for i, b := range buses {
		ctx, cancel := context.WithCancel(context.Background())
		r := &hintRecorder{done: make(chan error, 1)}
		recs[i] = r
		go func() { r.done <- b.Listen(ctx, r.deliver) }()
		t.Cleanup(func() {
			cancel()
			select {
			case err := <-r.done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("listener %d returned %v, want its context's error", i, err)
				}
			case <-time.After(hintWait):
				t.Errorf("listener %d did not return within %v of its context's end", i, hintWait)
			}
		})
	}
	// A listener hears nothing published before it listens: probe until all of them hear
	// (endpoint 0 hears endpoint 1's probes, every other one endpoint 0's).
	probe := []ports.Hint{{Tenant: tenant, Queue: probeQueue, Partition: "p"}}
	eventually(t, "every endpoint listens", func() bool {
		for i, r := range recs {
			if _, heard := r.got(); !heard {
				from := buses[0]
				if i == 0 {
					from = buses[1]
				}
				publishHints(t, from, probe)
			}
		}
		for _, r := range recs {
			if _, heard := r.got(); !heard {
				return false
			}
		}
		return true
	})
	return recs
}

// eventually polls cond every 20 ms until it holds, failing after hintWait.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(hintWait)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: not within %v", what, hintWait)
		}
	}
}

func publishHints(t *testing.T, b ports.HintBus, hs []ports.Hint) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hintWait)
	defer cancel()
	if err := b.Publish(ctx, hs); err != nil {
		t.Fatalf("Publish of %d hints: %v", len(hs), err)
	}
}

// hintCount is the number of hints in batches.
func hintCount(batches [][]ports.Hint) int {
	n := 0
	for _, b := range batches {
		n += len(b)
	}
	return n
}

// waitHints waits until r got n hints and returns its batches.
func waitHints(t *testing.T, r *hintRecorder, n int) [][]ports.Hint {
	t.Helper()
	var got [][]ports.Hint
	eventually(t, fmt.Sprintf("%d hints delivered", n), func() bool {
		got, _ = r.got()
		return hintCount(got) >= n
	})
	if c := hintCount(got); c != n {
		t.Fatalf("%d hints delivered, want %d: %v", c, n, got)
	}
	return got
}

func hint(queue, partition, id string) ports.Hint {
	return ports.Hint{Tenant: tenant, Queue: queue, Partition: partition, PartitionID: id}
}

func testHintFanOut(t *testing.T, buses []ports.HintBus) {
	recs := listen(t, buses)
	h := hint("orders", "cust-42", "0191d7a2-0000-7000-8000-000000000001")
	publishHints(t, buses[0], []ports.Hint{h})
	for _, r := range recs[1:] {
		if got := waitHints(t, r, 1); !slices.Equal(got[0], []ports.Hint{h}) {
			t.Fatalf("delivered %v, want %v", got, h)
		}
	}
	// Deliveries are in publish order, so once a later marker reached the sender's
	// listener, its own hint would have been there first.
	marker := hint("marker", "m", "")
	publishHints(t, buses[1], []ports.Hint{marker})
	for _, i := range []int{0, 2} {
		got := waitHints(t, recs[i], map[int]int{0: 1, 2: 2}[i])
		if !slices.Equal(got[len(got)-1], []ports.Hint{marker}) {
			t.Fatalf("endpoint %d: delivered %v, want the marker last", i, got)
		}
	}
	if got, _ := recs[0].got(); len(got) != 1 {
		t.Fatalf("the sender heard %v, want only the other endpoint's marker", got)
	}
	if got, _ := recs[1].got(); len(got) != 1 {
		t.Fatalf("the marker's sender heard %v, want only endpoint 0's hint", got)
	}
}

func testHintBigBatch(t *testing.T, buses []ports.HintBus) {
	recs := listen(t, buses)
	// 300 hints of about 460 bytes: about 140 KB, far more than one 8,000-byte
	// notification.
	long := strings.Repeat("q", 200)
	hs := make([]ports.Hint, 300)
	for i := range hs {
		hs[i] = hint(fmt.Sprintf("%s-%03d", long, i), fmt.Sprintf("%s-partition-%03d", long, i),
			fmt.Sprintf("0191d7a2-0000-7000-8000-%012d", i))
	}
	publishHints(t, buses[0], hs)
	got := waitHints(t, recs[1], len(hs))
	if len(got) != 1 || !slices.Equal(got[0], hs) {
		t.Fatalf("delivered %d batches of %d hints; want the %d hints in one batch, in order", len(got), hintCount(got), len(hs))
	}
}

func testHintUnicode(t *testing.T, buses []ports.HintBus) {
	recs := listen(t, buses)
	names := []string{
		"commandes-é-日本", "🚀📦-emoji", "e\u0301-combining", "שלום-rtl", "line\u2028separator",
		"zero\u200dwidth", "bom\ufeff", "nbsp\u00a0", "replacement-\ufffd", `back\slash "quoted" 'single'`,
		"percent %s %d", "spaces  and more spaces", "🏳️‍🌈", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "ａｂｃ-fullwidth",
		strings.Repeat("日", 85), // 255 bytes: the longest name
	}
	var hs []ports.Hint
	for i, n := range names {
		hs = append(hs, ports.Hint{Tenant: tenant, Queue: n, Partition: names[len(names)-1-i], PartitionID: ""})
	}
	publishHints(t, buses[0], hs)
	got := waitHints(t, recs[1], len(hs))
	if !slices.Equal(slices.Concat(got...), hs) {
		t.Fatalf("delivered %q, want %q", got, hs)
	}
}

func testHintOrder(t *testing.T, buses []ports.HintBus) {
	recs := listen(t, buses)
	var want [][]ports.Hint
	for i := range 5 {
		b := []ports.Hint{hint("q", fmt.Sprint("p", i), ""), hint("q", fmt.Sprint("r", i), "")}
		want = append(want, b)
		publishHints(t, buses[0], b)
	}
	got := waitHints(t, recs[1], 10)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
}

func testHintKinds(t *testing.T, buses []ports.HintBus) {
	recs := listen(t, buses)
	configured := ports.Hint{Tenant: tenant, Queue: "orders", Kind: ports.HintQueueConfigured}
	deleted := ports.Hint{Tenant: tenant, Queue: "orders", Kind: ports.HintQueueDeleted}
	// Alone, then mixed with commit hints of the same queue (which must keep their kind),
	// then commits only: a receiver tells every hint's kind.
	want := [][]ports.Hint{
		{configured, deleted},
		{hint("orders", "p", "id"), deleted, hint("orders", "r", ""), configured},
		{hint("orders", "p", "id")},
	}
	for _, b := range want {
		publishHints(t, buses[0], b)
	}
	for i, r := range recs[1:] {
		if got := waitHints(t, r, 7); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("endpoint %d: delivered %v, want %v", i+1, got, want)
		}
	}
}

func testHintEmpty(t *testing.T, buses []ports.HintBus) {
	recs := listen(t, buses)
	publishHints(t, buses[0], nil)
	publishHints(t, buses[0], []ports.Hint{})
	marker := hint("marker", "m", "")
	publishHints(t, buses[0], []ports.Hint{marker})
	if got := waitHints(t, recs[1], 1); !slices.Equal(got[0], []ports.Hint{marker}) {
		t.Fatalf("delivered %v, want the marker alone", got)
	}
}

func testHintPublishCancelled(t *testing.T, buses []ports.HintBus) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := buses[0].Publish(ctx, []ports.Hint{hint("q", "p", "")}); err == nil {
		t.Fatal("Publish with an ended context succeeded")
	}
}

func testHintListenEnds(t *testing.T, buses []ports.HintBus) {
	tests := []struct {
		name   string
		before bool // the context ends before Listen is called
	}{
		{"while listening", false},
		{"before listening", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			heard := make(chan struct{}, 1)
			done := make(chan error, 1)
			if tt.before {
				cancel()
			}
			go func() {
				done <- buses[1].Listen(ctx, func([]ports.Hint) {
					select {
					case heard <- struct{}{}:
					default:
					}
				})
			}()
			if !tt.before {
				// Listening for sure: it heard a probe.
				probe := []ports.Hint{hint(probeQueue, "p", "")}
				tick := time.NewTicker(20 * time.Millisecond)
				defer tick.Stop()
				deadline := time.After(hintWait)
			wait:
				for {
					publishHints(t, buses[0], probe)
					select {
					case <-heard:
						break wait
					case err := <-done:
						t.Fatalf("Listen returned %v before its context ended", err)
					case <-deadline:
						t.Fatalf("Listen heard nothing within %v", hintWait)
					case <-tick.C:
					}
				}
				cancel()
			}
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Listen returned %v, want context.Canceled", err)
				}
			case <-time.After(hintWait):
				t.Fatalf("Listen did not return within %v of its context's end", hintWait)
			}
		})
	}
}
