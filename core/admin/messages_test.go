package admin

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/core/envelope"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

var (
	msgT0    = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	msgQuiet = slog.New(slog.DiscardHandler)
)

func msgCodec(t testing.TB) *segment.Codec {
	t.Helper()
	c, err := segment.NewCodec(1)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMessagesStateOf(t *testing.T) {
	t.Parallel()
	now := msgT0
	live, gone := now.Add(time.Minute), now.Add(-time.Second)
	cur := func(g string, committed, batchEnd int64, lease time.Time) ports.GroupCursor {
		return ports.GroupCursor{Group: g, Committed: committed, BatchEnd: batchEnd, LeaseExpires: lease}
	}
	qm := ports.QueueModeGroup
	tests := []struct {
		name    string
		cursors []ports.GroupCursor
		off     int64
		dead    bool
		want    MessageState
	}{
		{"no cursor: pending", nil, 3, false, MessageState{Status: StatusPending, QueueStatus: StatusPending}},
		{"queue mode passed it", []ports.GroupCursor{cur(qm, 3, 3, time.Time{})}, 3, false,
			MessageState{Status: StatusCompleted, QueueStatus: StatusCompleted}},
		{"queue mode leases it", []ports.GroupCursor{cur(qm, 2, 5, live)}, 3, false,
			MessageState{Status: StatusProcessing, QueueStatus: StatusProcessing, LeaseExpires: live}},
		{"an expired lease is no lease", []ports.GroupCursor{cur(qm, 2, 5, gone)}, 3, false,
			MessageState{Status: StatusPending, QueueStatus: StatusPending}},
		{"beyond the leased span", []ports.GroupCursor{cur(qm, 2, 3, live)}, 4, false,
			MessageState{Status: StatusPending, QueueStatus: StatusPending}},
		{"named groups govern: one behind", []ports.GroupCursor{cur(qm, 9, 9, time.Time{}), cur("a", 3, 3, time.Time{}), cur("b", 2, 2, time.Time{})}, 3, false,
			MessageState{Status: StatusPending, QueueStatus: StatusCompleted, ConsumedBy: 1, TotalGroups: 2}},
		{"named groups govern: all passed", []ports.GroupCursor{cur(qm, 0, 0, time.Time{}), cur("a", 3, 3, time.Time{}), cur("b", 4, 4, time.Time{})}, 3, false,
			MessageState{Status: StatusCompleted, QueueStatus: StatusPending, ConsumedBy: 2, TotalGroups: 2}},
		{"one group leases it, the latest lease shown", []ports.GroupCursor{cur("a", 2, 3, live), cur("b", 1, 6, live.Add(time.Hour)), cur("c", 5, 5, time.Time{})}, 3, false,
			MessageState{Status: StatusProcessing, QueueStatus: StatusPending, ConsumedBy: 1, TotalGroups: 3, LeaseExpires: live.Add(time.Hour)}},
		{"a queue-mode lease does not make it processing for named groups", []ports.GroupCursor{cur(qm, 2, 5, live), cur("a", 1, 1, time.Time{})}, 3, false,
			MessageState{Status: StatusPending, QueueStatus: StatusProcessing, TotalGroups: 1}},
		{"dead letter wins", []ports.GroupCursor{cur("a", 3, 3, time.Time{})}, 3, true,
			MessageState{Status: StatusDeadLetter, QueueStatus: StatusDeadLetter, ConsumedBy: 1, TotalGroups: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := &ports.MessagePartition{Cursors: tt.cursors}
			if got := stateOf(p, tt.off, tt.dead, now); got != tt.want {
				t.Fatalf("stateOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// msgBrowse is the browse fixture: the use case over the memory store of w (through
// spy), and the ids of partitions q/a and q/b.
type msgBrowse struct {
	m    *Messages
	w    *memWorld
	spy  *msgSpy
	a, b string
}

// msgSpy is the memory store's MessageStore, recording the segments whose blobs were read.
type msgSpy struct {
	ports.MessageStore

	mu           sync.Mutex
	blobReads    []ports.SegmentRef
	browseLimits []int
}

func (s *msgSpy) BrowseSegments(ctx context.Context, tenant string, f ports.MessageFilter, after *ports.BrowseKey, limit int) (ports.BrowsePage, error) {
	s.mu.Lock()
	s.browseLimits = append(s.browseLimits, limit)
	s.mu.Unlock()
	return s.MessageStore.BrowseSegments(ctx, tenant, f, after, limit)
}

func (s *msgSpy) SegmentBlobs(ctx context.Context, refs []ports.SegmentRef) ([]ports.SegmentBlob, error) {
	s.mu.Lock()
	s.blobReads = append(s.blobReads, refs...)
	s.mu.Unlock()
	return s.MessageStore.SegmentBlobs(ctx, refs)
}

// msgBrowseFixture: queue q (namespace ns, task tk) partitions a and b, and queue r, with
// segments committed one second apart, oldest first:
//
//	a: a0 a1 a2 (t0)   b: b0 (t0+1s)   a: a3 (t0+2s)   r/x: r0 (t0+3s)   b: b1 b2 (t0+4s)
//
// Group g committed a0..a1 and leases a2..a3; b has no cursor (b1 was dead-lettered, at
// t0+5s, by group gone, deleted since). The clock reads t0+1min.
func msgBrowseFixture(t *testing.T) *msgBrowse {
	t.Helper()
	w := newMemWorld(t, msgT0)
	w.configure("tenant", "q", func(c *ports.QueueConfig) { c.Namespace, c.Task = "ns", "tk" })
	fr := func(txn, payload string) segment.Frame {
		return segment.Frame{TransactionID: txn, Payload: []byte(payload)}
	}
	f := &msgBrowse{w: w}
	f.a = w.push("tenant", "q", "a", fr("a0", `0`), fr("a1", `1`), fr("a2", `2`)).PartitionID
	f.b = w.at(msgT0.Add(time.Second)).push("tenant", "q", "b", fr("b0", `"b"`)).PartitionID
	w.at(msgT0.Add(2*time.Second)).push("tenant", "q", "a", fr("a3", `3`))
	w.at(msgT0.Add(3*time.Second)).push("tenant", "r", "x", fr("r0", `null`))
	w.at(msgT0.Add(4*time.Second)).push("tenant", "q", "b", fr("b1", `{"b":1}`), fr("b2", `{"b":2}`))

	w.at(msgT0.Add(5 * time.Second))
	w.pop("tenant", "q", "b", "gone", 1, true) // b0
	w.kill("tenant", "q", "b", "gone", "b1", "gone's failure")
	if d, err := w.s.DeleteGroup(context.Background(), "tenant", "gone", "q", true); err != nil || d.Cursors != 1 {
		t.Fatalf("deleting group gone: %+v %v", d, err)
	}
	lease, c := w.pop("tenant", "q", "a", "g", 2, false) // a0 a1
	w.ack(c, "g", lease, "a1", ports.AckCompleted, "")
	if _, c = w.pop("tenant", "q", "a", "g", 2, false); c.Start != 2 || c.End != 3 {
		t.Fatalf("g leases %d..%d, want 2..3", c.Start, c.End)
	}
	w.at(msgT0.Add(time.Minute))

	f.spy = &msgSpy{MessageStore: w.s.Messages()}
	f.m = NewMessages(f.spy, MessagesOptions{Codec: w.codec, Logger: msgQuiet, Now: w.clock})
	return f
}

func msgTxnsOf(l MessageList) []string {
	out := make([]string, len(l.Messages))
	for i, m := range l.Messages {
		out[i] = m.TransactionID
	}
	return out
}

func TestMessagesList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		q         MessageQuery
		scanBatch int
		want      []string
		browses   int // store steps, 0: not checked
	}{
		{"everything, newest first", MessageQuery{Limit: 100}, 0, []string{"b2", "b1", "r0", "a3", "b0", "a2", "a1", "a0"}, 1},
		{"limit", MessageQuery{Limit: 3}, 0, []string{"b2", "b1", "r0"}, 1},
		{"offset inside a segment", MessageQuery{Limit: 2, Offset: 1}, 0, []string{"b1", "r0"}, 1},
		{"offset past the end", MessageQuery{Limit: 2, Offset: 8}, 0, nil, 1},
		{"queue", MessageQuery{Queue: "q", Limit: 100}, 0, []string{"b2", "b1", "a3", "b0", "a2", "a1", "a0"}, 0},
		{"partition", MessageQuery{Queue: "q", Partition: "a", Limit: 100}, 0, []string{"a3", "a2", "a1", "a0"}, 0},
		{"namespace and task", MessageQuery{Namespace: "ns", Task: "tk", Limit: 2}, 0, []string{"b2", "b1"}, 0},
		{"window", MessageQuery{From: msgT0.Add(time.Second), To: msgT0.Add(3 * time.Second), Limit: 100}, 0,
			[]string{"r0", "a3", "b0"}, 0},
		// Steps of max(offset+limit, scan batch) segments until the page is full.
		{"status completed, read in steps", MessageQuery{Status: StatusCompleted, Limit: 2}, 1, []string{"a1", "a0"}, 3},
		{"status processing", MessageQuery{Status: StatusProcessing, Limit: 2}, 1, []string{"a3", "a2"}, 3},
		{"status pending with a page", MessageQuery{Status: StatusPending, Limit: 2, Offset: 1}, 1, []string{"r0", "b0"}, 2},
		{"status dead_letter", MessageQuery{Status: StatusDeadLetter, Limit: 1}, 2, []string{"b1"}, 1},
		{"status, a full step then nothing", MessageQuery{Status: StatusCompleted, Limit: 5}, 1, []string{"a1", "a0"}, 2},
		{"status over the whole listing", MessageQuery{Status: StatusPending, Limit: 100}, 1, []string{"b2", "r0", "b0"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := msgBrowseFixture(t)
			f.m.opts.ScanBatch = max(tt.scanBatch, 1)
			if tt.q.From.IsZero() {
				tt.q.From = msgT0.Add(-time.Hour)
			}
			l, err := f.m.List(context.Background(), "tenant", tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := msgTxnsOf(l); !slices.Equal(got, tt.want) {
				t.Fatalf("listed %v, want %v", got, tt.want)
			}
			if n := f.w.callsOf("BrowseSegments"); tt.browses > 0 && n != tt.browses {
				t.Errorf("%d store steps, want %d", n, tt.browses)
			}
			// Only the page's segments are read, each once.
			seen := map[ports.SegmentRef]bool{}
			for _, r := range f.spy.blobReads {
				if seen[r] {
					t.Errorf("segment %+v read twice", r)
				}
				seen[r] = true
			}
			pageSegs := map[ports.SegmentRef]bool{}
			for _, msg := range l.Messages {
				pageSegs[ports.SegmentRef{PartitionID: msg.PartitionID, BaseOffset: msg.SegmentBase}] = true
			}
			if len(seen) != len(pageSegs) {
				t.Errorf("read %d segments for a page of %d", len(seen), len(pageSegs))
			}
		})
	}
}

func TestMessagesListFields(t *testing.T) {
	t.Parallel()
	f := msgBrowseFixture(t)
	l, err := f.m.List(context.Background(), "tenant", MessageQuery{Queue: "q", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if l.Mode != (Mode{BusGroups: 1, Type: ModeBus}) {
		t.Errorf("mode %+v", l.Mode)
	}
	byTxn := map[string]Message{}
	for _, msg := range l.Messages {
		byTxn[msg.TransactionID] = msg
	}
	for _, tt := range []struct {
		txn, status, data string
		offset, base      int64
		leased            bool
	}{
		{"a0", StatusCompleted, `0`, 0, 0, false},
		{"a2", StatusProcessing, `2`, 2, 0, true},
		{"a3", StatusProcessing, `3`, 3, 3, true},
		{"b0", StatusPending, `"b"`, 0, 0, false},
		{"b1", StatusDeadLetter, `{"b":1}`, 1, 1, false},
		{"b2", StatusPending, `{"b":2}`, 2, 1, false},
	} {
		msg := byTxn[tt.txn]
		if msg.Status != tt.status || string(msg.Data) != tt.data || msg.Offset != tt.offset || msg.SegmentBase != tt.base ||
			!msg.LeaseExpires.IsZero() != tt.leased || !msg.PayloadAvailable || msg.ID == "" || len(msg.TxnHash) != 32 ||
			msg.Queue.Namespace != "ns" {
			t.Errorf("%s: %+v, want status %s data %s offset %d in the segment at %d, leased %v", tt.txn, msg, tt.status,
				tt.data, tt.offset, tt.base, tt.leased)
		}
	}
}

// TestMessagesListDefaultWindow: without from, a browse lists the messages committed
// since DefaultMessagesWindow before now, that instant included, with no end.
func TestMessagesListDefaultWindow(t *testing.T) {
	t.Parallel()
	now := msgT0.Add(time.Minute)
	from := now.Add(-DefaultMessagesWindow)
	w := newMemWorld(t, from.Add(-time.Nanosecond))
	w.pushTxns("tenant", "q", "p", "before")
	w.at(from).pushTxns("tenant", "q", "p", "from")
	w.at(now.Add(24*time.Hour)).pushTxns("tenant", "q", "p", "later")
	w.at(now)
	m := NewMessages(w.s.Messages(), MessagesOptions{Codec: w.codec, Logger: msgQuiet, Now: w.clock})
	l, err := m.List(context.Background(), "tenant", MessageQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := msgTxnsOf(l); !slices.Equal(got, []string{"later", "from"}) {
		t.Fatalf("listed %v, want the messages from %v on, with no end", got, from)
	}
}

// A limit above the maximum is clamped, not refused (Queen's CLI drains with 10,000):
// the store is asked for at most a maximum page, and the list says what was applied.
func TestMessagesListClampsTheLimit(t *testing.T) {
	t.Parallel()
	all := []string{"b2", "b1", "r0", "a3", "b0", "a2", "a1", "a0"}
	for _, tt := range []struct {
		name      string
		q         MessageQuery
		wantLimit int
		wantStep  int // the store's first step
	}{
		{"the maximum", MessageQuery{Limit: MaxMessagesLimit}, MaxMessagesLimit, MaxMessagesLimit},
		{"what Queen's CLI asks", MessageQuery{Limit: 10000}, min(10000, MaxMessagesLimit), min(10000, MaxMessagesLimit)},
		{"one above", MessageQuery{Limit: MaxMessagesLimit + 1}, MaxMessagesLimit, MaxMessagesLimit},
		{"far above, with an offset", MessageQuery{Limit: math.MaxInt32, Offset: 3}, MaxMessagesLimit, MaxMessagesLimit + 3},
		{"with a status", MessageQuery{Limit: math.MaxInt32, Status: StatusPending}, MaxMessagesLimit, MaxMessagesLimit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := msgBrowseFixture(t)
			tt.q.From = msgT0.Add(-time.Hour)
			l, err := f.m.List(context.Background(), "tenant", tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if l.Limit != tt.wantLimit || l.Offset != tt.q.Offset {
				t.Errorf("applied limit %d offset %d, want %d %d", l.Limit, l.Offset, tt.wantLimit, tt.q.Offset)
			}
			if len(f.spy.browseLimits) == 0 || f.spy.browseLimits[0] != tt.wantStep {
				t.Errorf("store steps %v, want a first step of %d", f.spy.browseLimits, tt.wantStep)
			}
			if tt.q.Status == "" && !slices.Equal(msgTxnsOf(l), all[min(tt.q.Offset, len(all)):]) {
				t.Errorf("listed %v", msgTxnsOf(l))
			}
		})
	}
}

func TestMessagesListRejectsBadQueries(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		q     MessageQuery
		param string
	}{
		{"unknown status", MessageQuery{Status: "done", Limit: 1}, "status"},
		{"limit zero", MessageQuery{}, "limit"},
		{"negative limit", MessageQuery{Limit: -1}, "limit"},
		{"negative offset", MessageQuery{Limit: 1, Offset: -1}, "offset"},
		{"offset too deep", MessageQuery{Limit: 1, Offset: MaxMessagesOffset + 1}, "offset"},
		{"to before from", MessageQuery{Limit: 1, From: msgT0, To: msgT0.Add(-time.Nanosecond)}, "to"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := msgBrowseFixture(t)
			before := f.w.count()
			_, err := f.m.List(context.Background(), "tenant", tt.q)
			var ie *InputError
			if !errors.As(err, &ie) || ie.Param != tt.param {
				t.Fatalf("err %v, want an InputError naming %s", err, tt.param)
			}
			if f.w.count() != before {
				t.Fatal("the store was asked")
			}
		})
	}
}

// msgSameGroups compares group states, error messages by value.
func msgSameGroups(got, want []GroupState) bool {
	return slices.EqualFunc(got, want, func(a, b GroupState) bool {
		return a.Group == b.Group && a.Status == b.Status && a.Consumed == b.Consumed && a.LeaseExpires.Equal(b.LeaseExpires) &&
			a.RetryCount == b.RetryCount && (a.ErrorMessage == nil) == (b.ErrorMessage == nil) &&
			(a.ErrorMessage == nil || *a.ErrorMessage == *b.ErrorMessage)
	})
}

func TestMessagesGet(t *testing.T) {
	t.Parallel()
	f := msgBrowseFixture(t)
	w, m := f.w, f.m
	// On b, the queue-mode group consumed b0, and g, after two failures, dead-lettered b1
	// (the newest of its two rows).
	w.pop("tenant", "q", "b", ports.QueueModeGroup, 1, true)
	lease, c := w.pop("tenant", "q", "b", "g", 1, false)
	w.ack(c, "g", lease, "b0", ports.AckCompleted, "")
	for range 2 {
		lease, c = w.pop("tenant", "q", "b", "g", 1, false)
		w.ack(c, "g", lease, "b1", ports.AckFailed, "try")
	}
	w.kill("tenant", "q", "b", "g", "b1", "boom")
	ctx := context.Background()

	d, err := m.Get(ctx, "tenant", f.a, "a2")
	if err != nil {
		t.Fatal(err)
	}
	if d.TransactionID != "a2" || d.Offset != 2 || string(d.Data) != "2" || d.Status != StatusProcessing ||
		d.Mode != (Mode{BusGroups: 1, Type: ModeBus}) || len(d.Groups) != 1 || d.Groups[0].Status != StatusProcessing ||
		d.ErrorMessage != nil {
		t.Fatalf("a2: %+v", d)
	}
	d, err = m.Get(ctx, "tenant", f.b, "b1")
	if err != nil {
		t.Fatal(err)
	}
	msg := "boom"
	// A dead-lettering group's cursor moved past the message: consumed, as Queen counts it.
	want := []GroupState{{Group: ports.QueueModeGroup, Status: StatusPending},
		{Group: "g", Status: StatusDeadLetter, Consumed: true, ErrorMessage: &msg, RetryCount: 2}}
	if d.Status != StatusDeadLetter || d.ErrorMessage == nil || *d.ErrorMessage != msg || d.RetryCount != 2 ||
		d.Mode != (Mode{HasQueueMode: true, BusGroups: 1, Type: ModeHybrid}) || !msgSameGroups(d.Groups, want) {
		t.Fatalf("b1: %+v, want dead_letter with groups %+v", d, want)
	}
	d, err = m.Get(ctx, "tenant", f.b, "b0")
	if err != nil {
		t.Fatal(err)
	}
	want = []GroupState{{Group: ports.QueueModeGroup, Status: StatusCompleted, Consumed: true},
		{Group: "g", Status: StatusCompleted, Consumed: true}}
	if d.Status != StatusCompleted || !msgSameGroups(d.Groups, want) {
		t.Fatalf("b0: %+v, want completed with groups %+v", d, want)
	}

	for _, tt := range []struct {
		name, pid, txn string
		param          string // "" = not found
	}{
		{"unknown transaction id", f.a, "zz", ""},
		{"another partition's message", f.a, "b1", ""},
		{"unknown partition", "00000000-0000-4000-8000-000000000000", "a1", ""},
		{"partition id not a UUID", "a", "a1", "partitionId"},
		{"empty transaction id", f.a, "", "transactionId"},
		{"control character", f.a, "a\x01", "transactionId"},
	} {
		_, err := m.Get(ctx, "tenant", tt.pid, tt.txn)
		var ie *InputError
		switch {
		case tt.param == "" && (!errors.Is(err, ErrNotFound) || err.Error() != "Message not found"):
			t.Errorf("%s: %v, want Message not found", tt.name, err)
		case tt.param != "" && (!errors.As(err, &ie) || ie.Param != tt.param):
			t.Errorf("%s: %v, want an InputError naming %s", tt.name, err, tt.param)
		}
	}
}

// TestMessagesGetHashCollision: the hash sidecar names a message whose transaction id is
// not the one asked for (another id with the same hash): not found.
func TestMessagesGetHashCollision(t *testing.T) {
	t.Parallel()
	f := msgBrowseFixture(t)
	f.m.store = msgCollidingStore{f.m.store}
	if _, err := f.m.Get(context.Background(), "tenant", f.a, "not-a0"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("err %v, want not found", err)
	}
}

// msgCollidingStore resolves every hash to the partition's message a0.
type msgCollidingStore struct{ ports.MessageStore }

func (c msgCollidingStore) FindMessage(ctx context.Context, tenant, pid string, _ [16]byte) (ports.StoredMessage, bool, error) {
	return c.MessageStore.FindMessage(ctx, tenant, pid, dedup.Hash("a0"))
}

// msgReplayFixture: a message of q/p dead-lettered by group g at t0, and the use case with
// a pusher into the same store. The clock reads t0+1s.
func msgReplayFixture(t *testing.T, sealer *envelope.Sealer, frame segment.Frame) (*Messages, *memWorld, *memPusher, ports.DeadLetter) {
	t.Helper()
	w := newMemWorld(t, msgT0)
	w.push("tenant", "q", "p", frame)
	d := w.kill("tenant", "q", "p", "g", frame.TransactionID, "rejected")
	w.at(msgT0.Add(time.Second))
	pusher := w.pusher()
	m := NewMessages(w.s.Messages(), MessagesOptions{Codec: w.codec, Sealer: sealer, Push: pusher, Logger: msgQuiet})
	return m, w, pusher, d
}

var errMsgStore = errors.New("store failure")

func TestMessagesReplay(t *testing.T) {
	t.Parallel()
	sealer, err := envelope.New(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := sealer.Seal([]byte(`{"secret":1}`))
	if err != nil {
		t.Fatal(err)
	}
	no, yes := false, true
	plain := segment.Frame{TransactionID: "t", ProducerSub: "alice", Payload: []byte(`{"v": 1}`)}
	tests := []struct {
		name   string
		frame  segment.Frame
		sealer *envelope.Sealer
		setup  func(w *memWorld, p *memPusher, m *Messages, d ports.DeadLetter)
		to     ReplayTarget
		// want
		result      string // Replay.Result, or ReplayError.Result
		refused     bool   // a ReplayError
		removed     *bool
		keptRow     bool
		pushes      int
		payload     string // of the push
		unavailable bool
	}{
		{name: "moved", frame: plain, result: ReplayMoved, removed: &yes, pushes: 1, payload: `{"v": 1}`},
		{name: "moved elsewhere", frame: plain, to: ReplayTarget{Queue: "q2", Partition: "p2"}, result: ReplayMoved,
			removed: &yes, pushes: 1, payload: `{"v": 1}`},
		{name: "encrypted, decrypted to be pushed again", frame: segment.Frame{TransactionID: "t", Payload: sealed, Encrypted: true},
			sealer: sealer, result: ReplayMoved, removed: &yes, pushes: 1, payload: `{"secret":1}`},
		{name: "already pushed by an earlier replay", frame: plain,
			setup: func(w *memWorld, _ *memPusher, _ *Messages, d ports.DeadLetter) {
				w.push("tenant", "q", "p", segment.Frame{TransactionID: "dlq:" + d.ID, Payload: []byte(`{"v":1}`)})
			},
			result: ReplayDuplicate, removed: &yes, pushes: 1, payload: `{"v": 1}`},
		{name: "a decoy under the derived id", frame: plain,
			setup: func(w *memWorld, _ *memPusher, _ *Messages, d ports.DeadLetter) {
				w.push("tenant", "q", "p", segment.Frame{TransactionID: "dlq:" + d.ID, Payload: []byte(`"decoy"`)})
			},
			result: ReplayDuplicate, removed: &no, keptRow: true, pushes: 1, payload: `{"v": 1}`},
		{name: "spooled", frame: plain, setup: func(_ *memWorld, p *memPusher, _ *Messages, _ ports.DeadLetter) { p.status = push.StatusBuffered },
			result: ReplayBuffered, refused: true, removed: &no, keptRow: true, pushes: 1, payload: `{"v": 1}`, unavailable: true},
		{name: "spooled by maintenance switched on meanwhile", frame: plain,
			setup: func(_ *memWorld, p *memPusher, m *Messages, _ ports.DeadLetter) {
				p.status = push.StatusBuffered
				calls := 0
				m.opts.PushPaused = func() bool { calls++; return calls > 1 }
			},
			result: ReplayMaintenance, refused: true, removed: &no, keptRow: true, pushes: 1, payload: `{"v": 1}`, unavailable: true},
		{name: "push failed", frame: plain, setup: func(_ *memWorld, p *memPusher, _ *Messages, _ ports.DeadLetter) { p.status = push.StatusFailed },
			result: ReplayFailed, refused: true, removed: &no, keptRow: true, pushes: 1, payload: `{"v": 1}`},
		{name: "push maintenance", frame: plain,
			setup: func(_ *memWorld, _ *memPusher, m *Messages, _ ports.DeadLetter) {
				m.opts.PushPaused = func() bool { return true }
			},
			result: ReplayMaintenance, refused: true, removed: &no, keptRow: true, unavailable: true},
		{name: "encrypted without the key", frame: segment.Frame{TransactionID: "t", Payload: sealed, Encrypted: true},
			result: ReplayFailed, refused: true, removed: &no, keptRow: true},
		{name: "row deletion fails after the push", frame: plain,
			setup: func(w *memWorld, _ *memPusher, _ *Messages, _ ports.DeadLetter) {
				w.fail("MoveDeadLetter/remove", errMsgStore)
			},
			result: ReplayMoved, refused: true, removed: nil, keptRow: true, pushes: 1, payload: `{"v": 1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, w, pusher, d := msgReplayFixture(t, tt.sealer, tt.frame)
			if tt.setup != nil {
				tt.setup(w, pusher, m, d)
			}
			rep, err := m.Replay(context.Background(), "tenant", d.ID, tt.to)
			var re *ReplayError
			switch {
			case tt.refused && !errors.As(err, &re):
				t.Fatalf("err %v, want a ReplayError", err)
			case tt.refused:
				if re.Result != tt.result || re.Unavailable != tt.unavailable || (re.RowRemoved == nil) != (tt.removed == nil) ||
					(re.RowRemoved != nil && *re.RowRemoved != *tt.removed) {
					t.Fatalf("refusal %+v (removed %v), want result %s unavailable %v removed %v", re, re.RowRemoved, tt.result,
						tt.unavailable, tt.removed)
				}
			case err != nil:
				t.Fatal(err)
			default:
				wantQ, wantP := "q", "p"
				if tt.to.Queue != "" {
					wantQ, wantP = tt.to.Queue, tt.to.Partition
				}
				if rep.Result != tt.result || rep.RowRemoved != *tt.removed || rep.DeadLetterID != d.ID || rep.ConsumerGroup != "g" ||
					rep.OriginalTransactionID != "t" || rep.Queue != wantQ || rep.Partition != wantP ||
					rep.Pushed.TransactionID != "dlq:"+d.ID || !rep.Pushed.HasOffset {
					t.Fatalf("replay %+v, want %s to %s/%s removing the row: %v", rep, tt.result, wantQ, wantP, *tt.removed)
				}
			}
			if kept := slices.Contains(w.deadIDs(), d.ID); kept != tt.keptRow {
				t.Errorf("row kept: %v, want %v", kept, tt.keptRow)
			}
			pushes, subs := pusher.pushed()
			if len(pushes) != tt.pushes {
				t.Fatalf("%d pushes, want %d", len(pushes), tt.pushes)
			}
			if tt.pushes > 0 {
				it := pushes[0]
				if string(it.Payload) != tt.payload || it.TransactionID != "dlq:"+d.ID || subs[0] != tt.frame.ProducerSub {
					t.Errorf("pushed %+v (payload %s) by %q, want payload %s as dlq:%s by the original producer",
						it, it.Payload, subs[0], tt.payload, d.ID)
				}
			}
		})
	}
}

// TestMessagesReplayIsIdempotent: two replays of one row, concurrent or not, push one message.
func TestMessagesReplayIsIdempotent(t *testing.T) {
	t.Parallel()
	m, w, pusher, d := msgReplayFixture(t, nil, segment.Frame{TransactionID: "t", Payload: []byte(`1`)})
	var wg sync.WaitGroup
	results := make([]string, 3)
	for i := range results {
		wg.Go(func() {
			rep, err := m.Replay(context.Background(), "tenant", d.ID, ReplayTarget{})
			switch {
			case errors.Is(err, ErrNotFound):
				results[i] = "gone"
			case err != nil:
				results[i] = err.Error()
			default:
				results[i] = rep.Result
			}
		})
	}
	wg.Wait()
	slices.Sort(results)
	if !slices.Equal(results, []string{"gone", "gone", ReplayMoved}) {
		t.Fatalf("results %v, want one move", results)
	}
	pushes, _ := pusher.pushed()
	segs := w.s.Segments("tenant", "q", "p")
	if last := segs[len(segs)-1]; len(pushes) != 1 || last.BaseOffset+int64(last.Count)-1 != 1 {
		t.Fatalf("%d pushes, last offset %d", len(pushes), last.BaseOffset+int64(last.Count)-1)
	}
}

func TestMessagesReplayRejects(t *testing.T) {
	t.Parallel()
	m, _, pusher, d := msgReplayFixture(t, nil, segment.Frame{TransactionID: "t", Payload: []byte(`1`)})
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		id    string
		to    ReplayTarget
		param string // "" = not found
	}{
		{"id not a UUID", "x", ReplayTarget{}, "id"},
		{"bad queue", d.ID, ReplayTarget{Queue: "a\x00"}, "queue"},
		{"bad partition", d.ID, ReplayTarget{Partition: string(make([]byte, 256))}, "partition"},
		{"unknown row", "00000000-0000-4000-8000-000000000000", ReplayTarget{}, ""},
	} {
		_, err := m.Replay(ctx, "tenant", tt.id, tt.to)
		var ie *InputError
		switch {
		case tt.param == "" && (!errors.Is(err, ErrNotFound) || err.Error() != "Dead letter not found"):
			t.Errorf("%s: %v, want not found", tt.name, err)
		case tt.param != "" && (!errors.As(err, &ie) || ie.Param != tt.param):
			t.Errorf("%s: %v, want an InputError naming %s", tt.name, err, tt.param)
		}
	}
	if pushes, _ := pusher.pushed(); len(pushes) != 0 {
		t.Fatal("a rejected replay pushed")
	}
	unconfigured := NewMessages(m.store, MessagesOptions{})
	if _, err := unconfigured.Replay(ctx, "tenant", d.ID, ReplayTarget{}); !errors.Is(err, errReplayNotConfigured) {
		t.Fatalf("without a pusher: %v", err)
	}
}

func TestMessagesRetryReplaysTheNewestRow(t *testing.T) {
	t.Parallel()
	m, w, pusher, older := msgReplayFixture(t, nil, segment.Frame{TransactionID: "t", Payload: []byte(`1`)})
	newer := w.at(msgT0.Add(time.Minute)).kill("tenant", "q", "p", "h", "t", "rejected by h")
	pid := older.PartitionID
	ctx := context.Background()
	rep, err := m.Retry(ctx, "tenant", pid, "t")
	if err != nil || rep.DeadLetterID != newer.ID || rep.ConsumerGroup != "h" {
		t.Fatalf("retry: %+v %v, want the newest row %s", rep, err, newer.ID)
	}
	if rep, err = m.Retry(ctx, "tenant", pid, "t"); err != nil || rep.DeadLetterID != older.ID {
		t.Fatalf("second retry: %+v %v, want the older row %s", rep, err, older.ID)
	}
	if _, err = m.Retry(ctx, "tenant", pid, "t"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("third retry: %v, want not found", err)
	}
	if pushes, _ := pusher.pushed(); len(pushes) != 2 {
		t.Fatalf("%d pushes, want 2", len(pushes))
	}
	m.opts.PushPaused = func() bool { return true }
	var re *ReplayError
	if _, err = m.Retry(ctx, "tenant", pid, "t"); !errors.As(err, &re) || re.Result != ReplayMaintenance {
		t.Fatalf("retry during maintenance: %v", err)
	}
}

func TestMessagesDeadLetterDeletion(t *testing.T) {
	t.Parallel()
	m, w, _, d := msgReplayFixture(t, nil, segment.Frame{TransactionID: "t", Payload: []byte(`1`)})
	ctx := context.Background()
	w.kill("tenant", "q", "p", "h", "t", "rejected by h")
	if err := m.DeleteDeadLetter(ctx, "tenant", d.PartitionID, "t"); err != nil {
		t.Fatal(err)
	}
	if left := w.deadIDs(); len(left) != 0 {
		t.Fatalf("%d rows left, want every group's row of the message gone", len(left))
	}
	if err := m.DeleteDeadLetter(ctx, "tenant", d.PartitionID, "t"); !errors.Is(err, ErrNotFound) || err.Error() != "Message not found" {
		t.Fatalf("second deletion: %v", err)
	}
	var ie *InputError
	if err := m.DeleteDeadLetter(ctx, "tenant", "p", "t"); !errors.As(err, &ie) || ie.Param != "partitionId" {
		t.Fatalf("bad partition id: %v", err)
	}

	// Rows of q: g's of u1 and u2, h's of u1.
	w.pushTxns("tenant", "q", "p", "u1", "u2")
	for _, k := range []struct{ group, txn string }{{"g", "u1"}, {"h", "u1"}, {"g", "u2"}} {
		w.kill("tenant", "q", "p", k.group, k.txn, "rejected")
	}
	if _, err := m.PurgeDeadLetters(ctx, "tenant", "", "g"); !errors.As(err, &ie) || ie.Param != "queue" {
		t.Fatalf("purge without a queue: %v", err)
	}
	for _, tt := range []struct {
		queue, group string
		want         int64
	}{{"q", "g", 2}, {"other", "", 0}, {"q", "", 1}} {
		if n, err := m.PurgeDeadLetters(ctx, "tenant", tt.queue, tt.group); err != nil || n != tt.want {
			t.Fatalf("purge %s/%s: %d %v, want %d", tt.queue, tt.group, n, err, tt.want)
		}
	}
}

func TestMessagesSameJSON(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{`{"a": 1}`, `{"a":1}`, true},
		{`[1, 2]`, `[1,2]`, true},
		{`{"a":1}`, `{"a":2}`, false},
		{``, ``, true},
		{``, `null`, false},
		{`{`, `{`, false},
	} {
		if got := sameJSON([]byte(tt.a), []byte(tt.b)); got != tt.want {
			t.Errorf("sameJSON(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}
