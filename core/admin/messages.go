package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/core/envelope"
	"github.com/queen-go/queen/core/loglimit"
	"github.com/queen-go/queen/core/names"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

// Page bounds and defaults of the message browse (docs/api.md §5.8).
const (
	DefaultMessagesLimit = 200
	// MaxMessagesLimit is the largest page; a larger limit is clamped to it (Queen's CLI
	// asks for 10,000 to drain a queue). A page of 10,000 messages of 1 KiB answers in
	// 0.2-0.35 s, 25 MiB of JSON, with at most 120 MiB more live heap during the call
	// (docs/benchmarks.md, "Browsing 10,000 messages").
	MaxMessagesLimit = 10000
	// MaxMessagesOffset bounds how deep a browse pages: each page reads the segment rows
	// (never the blobs) of every message it skips.
	MaxMessagesOffset = 100_000
	// DefaultMessagesWindow is how far back a browse without from looks.
	DefaultMessagesWindow = time.Hour
)

// Pusher is the push use case as dead-letter replays use it (core/push.Service).
type Pusher interface {
	Push(ctx context.Context, tenant, producerSub string, items []push.Item) []push.Result
}

// MessagesOptions configures Messages; zero values take the defaults in brackets.
type MessagesOptions struct {
	// Push replays dead letters through the normal push path. [nil: replays fail]
	Push Pusher
	// PushPaused reports push maintenance (maintenance.Flags.Push): replays are refused
	// while it is on. [nil: never]
	PushPaused func() bool
	Sealer     *envelope.Sealer // [nil] encrypted payloads are shown without data
	Codec      *segment.Codec   // [a new codec] decodes segment blobs
	// ScanBatch is how many segments a browse filtered by status reads per step. [500]
	ScanBatch int
	Now       func() time.Time // [time.Now] the default window's end
	Logger    *slog.Logger
}

// Messages is the admin API's message and dead-letter use case (docs/api.md §5.8): browsing
// messages inside their segments, one message with its status per group, and dead
// letters (deletion, purge, replay).
type Messages struct {
	store ports.MessageStore
	opts  MessagesOptions
}

// NewMessages returns the use case over store.
func NewMessages(store ports.MessageStore, opts MessagesOptions) *Messages {
	if opts.Codec == nil {
		// Decoding does not depend on the compression level.
		c, err := segment.NewCodec(1)
		if err != nil {
			panic(fmt.Sprintf("admin: segment codec: %v", err)) // fixed, valid options
		}
		opts.Codec = c
	}
	if opts.PushPaused == nil {
		opts.PushPaused = func() bool { return false }
	}
	if opts.ScanBatch <= 0 {
		opts.ScanBatch = 500
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Messages{store: store, opts: opts}
}

// MessageQuery is a browse request. Empty strings select every value.
type MessageQuery struct {
	Queue, Partition, Namespace, Task string
	Status                            string    // "" or one of the Status constants
	From                              time.Time // inclusive; zero: DefaultMessagesWindow before now
	To                                time.Time // inclusive; zero: no upper bound
	Limit, Offset                     int
}

// Message is one message as the views show it.
type Message struct {
	ID            string // "" when the segment could not be read
	TransactionID string // "" when the segment could not be read
	TxnHash       string // 32 hex digits of the transaction id's hash; "" with TransactionID
	PartitionID   string
	Partition     string
	Queue         ports.QueueConfig
	Offset        int64
	SegmentBase   int64 // the base offset of the segment holding it (frame Offset-SegmentBase)
	CreatedAt     time.Time
	TraceID       string // "" when none
	ProducerSub   string // "" when none
	MessageState
	// PayloadAvailable: the segment was read and decoded. Data is the payload as pushed
	// (nil when empty or when it cannot be shown), Encrypted the stored flag.
	PayloadAvailable bool
	Data             json.RawMessage
	Encrypted        bool
}

// MessageList is a browse page.
type MessageList struct {
	Messages []Message
	Mode     Mode
	// Limit and Offset are the paging applied: the limit asked for, clamped to
	// MaxMessagesLimit.
	Limit, Offset int
}

// List browses the messages matching q, newest commit first (then partition id, then
// offset, descending), a page of q.Limit after q.Offset matches. Only messages still
// retained with their transaction-id hash are listed. The page's statuses are computed
// from the cursor and dead-letter rows; segment blobs are read only for the page.
func (m *Messages) List(ctx context.Context, tenant string, q MessageQuery) (MessageList, error) {
	if err := m.checkQuery(&q); err != nil {
		return MessageList{}, err
	}
	f := ports.MessageFilter{Queue: q.Queue, Partition: q.Partition, Namespace: q.Namespace, Task: q.Task,
		From: q.From, To: q.To}
	need := q.Offset + q.Limit
	batch := need
	if q.Status != "" {
		// Matches may be sparse: read bigger steps than the page.
		batch = max(need, m.opts.ScanBatch)
	}
	var (
		page    []Message
		skipped int
		after   *ports.BrowseKey
		parts   = make(map[string]*ports.MessagePartition)
	)
scan:
	for {
		step, err := m.store.BrowseSegments(ctx, tenant, f, after, batch)
		if err != nil {
			return MessageList{}, fmt.Errorf("browse messages: %w", err)
		}
		for i := range step.Partitions {
			parts[step.Partitions[i].ID] = &step.Partitions[i]
		}
		dead := make(map[ports.MessageAddr]bool, len(step.DeadLetters))
		for _, a := range step.DeadLetters {
			dead[a] = true
		}
		for _, seg := range step.Segments {
			p := parts[seg.PartitionID]
			if p == nil {
				return MessageList{}, fmt.Errorf("browse messages: segment of partition %s without its partition", seg.PartitionID)
			}
			for off := min(seg.EndOffset, p.LastOffset); off >= max(seg.BaseOffset, p.First); off-- {
				st := stateOf(p, off, dead[ports.MessageAddr{PartitionID: p.ID, Offset: off}], step.Now)
				if q.Status != "" && st.Status != q.Status {
					continue
				}
				if skipped < q.Offset {
					skipped++
					continue
				}
				page = append(page, Message{PartitionID: p.ID, Partition: p.Name, Queue: p.Queue, Offset: off,
					SegmentBase: seg.BaseOffset, CreatedAt: seg.CreatedAt, MessageState: st})
				if len(page) == q.Limit {
					break scan
				}
			}
		}
		if len(step.Segments) < batch {
			break
		}
		k := step.Segments[len(step.Segments)-1].Key()
		after = &k
	}
	if err := m.fill(ctx, page); err != nil {
		return MessageList{}, err
	}
	modes, err := m.store.BrowseModes(ctx, tenant, f)
	if err != nil {
		return MessageList{}, fmt.Errorf("browse messages: group modes: %w", err)
	}
	return MessageList{Messages: page, Mode: modeOf(modes), Limit: q.Limit, Offset: q.Offset}, nil
}

// checkQuery validates a browse and applies its defaults and the clamp of its limit.
func (m *Messages) checkQuery(q *MessageQuery) error {
	if q.Status != "" && !validStatus(q.Status) {
		return inputErrorf("status", "status must be one of %s, %s, %s, %s; got %q",
			StatusPending, StatusProcessing, StatusCompleted, StatusDeadLetter, q.Status)
	}
	if q.Limit < 1 {
		return inputErrorf("limit", "limit must be at least 1, got %d", q.Limit)
	}
	q.Limit = min(q.Limit, MaxMessagesLimit)
	if q.Offset < 0 || q.Offset > MaxMessagesOffset {
		return inputErrorf("offset", "offset must be between 0 and %d, got %d", MaxMessagesOffset, q.Offset)
	}
	if q.From.IsZero() {
		q.From = m.opts.Now().Add(-DefaultMessagesWindow)
	}
	if !q.To.IsZero() && q.To.Before(q.From) {
		return inputErrorf("to", "to (%s) must not be before from (%s)",
			q.To.UTC().Format(time.RFC3339Nano), q.From.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// fill reads and decodes the segments of the page's messages, each once.
func (m *Messages) fill(ctx context.Context, page []Message) error {
	if len(page) == 0 {
		return nil
	}
	seen := make(map[ports.SegmentRef]bool)
	var refs []ports.SegmentRef
	for i := range page {
		r := ports.SegmentRef{PartitionID: page[i].PartitionID, BaseOffset: page[i].SegmentBase}
		if !seen[r] {
			seen[r] = true
			refs = append(refs, r)
		}
	}
	blobs, err := m.store.SegmentBlobs(ctx, refs)
	if err != nil {
		return fmt.Errorf("browse messages: segments: %w", err)
	}
	frames := make(map[ports.SegmentRef][]segment.Frame, len(blobs))
	for _, b := range blobs {
		r := ports.SegmentRef{PartitionID: b.PartitionID, BaseOffset: b.BaseOffset}
		fs, err := m.opts.Codec.Decode(b.Blob)
		if err == nil && len(fs) != b.Count {
			err = fmt.Errorf("%w: %d frames, want %d", segment.ErrCorrupt, len(fs), b.Count)
		}
		if err != nil {
			m.opts.Logger.Error("admin: segment not decodable, messages listed without data", loglimit.Cause("admin segment corrupt"),
				"partition_id", b.PartitionID, "base_offset", b.BaseOffset, "err", err)
			continue
		}
		frames[r] = fs
	}
	for i := range page {
		msg := &page[i]
		fs := frames[ports.SegmentRef{PartitionID: msg.PartitionID, BaseOffset: msg.SegmentBase}]
		if k := msg.Offset - msg.SegmentBase; k >= 0 && k < int64(len(fs)) {
			m.setFrame(msg, &fs[k])
		}
	}
	return nil
}

// setFrame fills a message from its decoded frame.
func (m *Messages) setFrame(msg *Message, f *segment.Frame) {
	msg.PayloadAvailable = true
	msg.ID = uuid.UUID(f.ID).String()
	msg.TransactionID = f.TransactionID
	h := dedup.Hash(f.TransactionID)
	msg.TxnHash = fmt.Sprintf("%x", h[:])
	msg.ProducerSub = f.ProducerSub
	if f.HasTrace {
		msg.TraceID = uuid.UUID(f.TraceID).String()
	}
	msg.Encrypted = f.Encrypted
	p, err := queues.OpenPayload(f, m.opts.Sealer)
	if err != nil {
		m.opts.Logger.Warn("admin: message shown without its payload", loglimit.Cause("admin payload sealed"), "partition_id", msg.PartitionID,
			"offset", msg.Offset, "err", err)
	}
	msg.Data = p.Data
}

// GroupState is one consumer group's view of a message.
type GroupState struct {
	Group  string
	Status string // one of the Status constants
	// Consumed: the group's cursor is at or past the message (Queen's per-group
	// "consumed"), whether it acknowledged it or dead-lettered it.
	Consumed     bool
	LeaseExpires time.Time
	// ErrorMessage is the reason the group dead-lettered the message (nil: none given,
	// or not dead-lettered by this group).
	ErrorMessage *string
	RetryCount   int
}

// MessageDetail is one message with everything the detail view shows.
type MessageDetail struct {
	Message
	// ErrorMessage and RetryCount come from the newest dead-letter row of the message
	// (nil and 0 when it has none).
	ErrorMessage *string
	RetryCount   int
	Mode         Mode         // the kinds of group with a cursor on the partition
	Groups       []GroupState // every group with a cursor on the partition, by name
}

// Get returns the message of the partition whose transaction id is transactionID,
// resolved through the hash sidecar: the newest one when the id was used again after
// its dedup window. Messages outside the retained hash window are not found.
func (m *Messages) Get(ctx context.Context, tenant, partitionID, transactionID string) (MessageDetail, error) {
	if err := checkMessageAddr(partitionID, transactionID); err != nil {
		return MessageDetail{}, err
	}
	sm, found, err := m.store.FindMessage(ctx, tenant, partitionID, dedup.Hash(transactionID))
	if err != nil {
		return MessageDetail{}, fmt.Errorf("message: %w", err)
	}
	if !found {
		return MessageDetail{}, notFound("Message not found")
	}
	frames, err := m.opts.Codec.Decode(sm.Segment.Blob)
	k := sm.Offset - sm.Segment.BaseOffset
	if err == nil && (k < 0 || k >= int64(len(frames))) {
		err = fmt.Errorf("%w: offset %d outside the segment at %d of %d frames", segment.ErrCorrupt,
			sm.Offset, sm.Segment.BaseOffset, len(frames))
	}
	if err != nil {
		return MessageDetail{}, fmt.Errorf("message: partition %s: %w", partitionID, err)
	}
	if frames[k].TransactionID != transactionID {
		// Another id with the same 128-bit hash: not this message.
		return MessageDetail{}, notFound("Message not found")
	}
	p := &sm.Partition
	d := MessageDetail{Message: Message{PartitionID: p.ID, Partition: p.Name, Queue: p.Queue, Offset: sm.Offset,
		SegmentBase: sm.Segment.BaseOffset, CreatedAt: sm.Segment.CreatedAt,
		MessageState: stateOf(p, sm.Offset, len(sm.Dead) > 0, sm.Now)}}
	m.setFrame(&d.Message, &frames[k])
	if len(sm.Dead) > 0 {
		d.ErrorMessage, d.RetryCount = sm.Dead[0].ErrorMessage, sm.Dead[0].RetryCount
	}
	modes := ports.GroupModes{}
	for i := range p.Cursors {
		c := &p.Cursors[i]
		g := GroupState{Group: c.Group, Consumed: sm.Offset <= c.Committed}
		g.Status, g.LeaseExpires = groupStatus(c, sm.Offset, sm.Now)
		for _, dl := range sm.Dead {
			if dl.ConsumerGroup == c.Group {
				g.Status, g.LeaseExpires, g.ErrorMessage, g.RetryCount = StatusDeadLetter, time.Time{}, dl.ErrorMessage, dl.RetryCount
				break
			}
		}
		d.Groups = append(d.Groups, g)
		if c.Group == ports.QueueModeGroup {
			modes.QueueMode = true
		} else {
			modes.NamedGroups++
		}
	}
	d.Mode = modeOf(modes)
	return d, nil
}

// checkMessageAddr validates a message's address as given in a path.
func checkMessageAddr(partitionID, transactionID string) error {
	if err := uuid.Validate(partitionID); err != nil {
		return inputErrorf("partitionId", "partitionId must be a UUID, got %q", partitionID)
	}
	if transactionID == "" {
		return inputErrorf("transactionId", "transactionId must not be empty")
	}
	if err := names.CheckTransactionID(transactionID); err != nil {
		return inputErrorf("transactionId", "transactionId %s", err)
	}
	return nil
}

// errReplayNotConfigured: the service was built without a push use case.
var errReplayNotConfigured = errors.New("admin: dead-letter replays need MessagesOptions.Push")
