package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/queen-go/queen/core/names"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/ports"
)

// DeleteDeadLetter deletes the dead-letter rows of the message (partitionID,
// transactionID), of every group. Live messages are immutable: a message without a
// dead-letter row is not found.
func (m *Messages) DeleteDeadLetter(ctx context.Context, tenant, partitionID, transactionID string) error {
	if err := checkMessageAddr(partitionID, transactionID); err != nil {
		return err
	}
	n, err := m.store.DeleteDeadLetters(ctx, tenant, partitionID, transactionID)
	if err != nil {
		return fmt.Errorf("delete dead letter: %w", err)
	}
	if n == 0 {
		return notFound("Message not found")
	}
	return nil
}

// PurgeDeadLetters deletes the dead letters of queue (required), of group only when
// group is not empty, and returns how many were deleted.
func (m *Messages) PurgeDeadLetters(ctx context.Context, tenant, queue, group string) (int64, error) {
	if queue == "" {
		return 0, inputErrorf("queue", "queue is required")
	}
	n, err := m.store.PurgeDeadLetters(ctx, tenant, queue, group)
	if err != nil {
		return 0, fmt.Errorf("purge dead letters: %w", err)
	}
	return n, nil
}

// Replay results: what a replay did with the dead message.
const (
	ReplayMoved     = "moved"     // pushed back: a new message of its partition
	ReplayDuplicate = "duplicate" // already pushed back by an earlier replay of the row
	// The refusals (ReplayError.Result).
	ReplayMaintenance = "maintenance" // push maintenance is on: nothing was written
	ReplayBuffered    = "buffered"    // the push went to the spool: it commits later
	ReplayFailed      = "failed"      // nothing was written
)

// Replay is a completed dead-letter replay.
type Replay struct {
	Result                string // ReplayMoved or ReplayDuplicate
	Queue, Partition      string // where the message was pushed
	ConsumerGroup         string // the group that dead-lettered it
	DeadLetterID          string
	OriginalTransactionID string
	// Pushed is the push's result: for a duplicate, the id and offset of the message
	// already there.
	Pushed push.Result
	// RowRemoved: the dead-letter row was deleted. A duplicate keeps the row unless the
	// message already there is this dead letter's (see Messages.Replay).
	RowRemoved bool
}

// ReplayError is a replay that did not complete.
type ReplayError struct {
	Result string // ReplayMaintenance, ReplayBuffered, ReplayFailed, or the push's when it was pushed
	// Unavailable: the replay may succeed later (maintenance, spooled push): HTTP 503.
	Unavailable bool
	// RowRemoved is false when the dead-letter row is certainly still there, nil when it
	// is not known (the push committed, the row's deletion did not confirm).
	RowRemoved *bool
	// Replay is what was pushed, when the push committed.
	Replay *Replay
	Err    error
}

func (e *ReplayError) Error() string {
	return fmt.Sprintf("dead-letter replay %s: %v", e.Result, e.Err)
}

func (e *ReplayError) Unwrap() error { return e.Err }

// ReplayTarget overrides where a replay pushes; empty fields keep the dead letter's own
// queue and partition.
type ReplayTarget struct {
	Queue, Partition string
}

// Retry replays the newest dead-letter row of the message (partitionID, transactionID)
// into its own queue and partition (see Replay).
func (m *Messages) Retry(ctx context.Context, tenant, partitionID, transactionID string) (Replay, error) {
	if err := checkMessageAddr(partitionID, transactionID); err != nil {
		return Replay{}, err
	}
	if m.opts.PushPaused() {
		return Replay{}, maintenanceError()
	}
	id, found, err := m.store.NewestDeadLetter(ctx, tenant, partitionID, transactionID)
	if err != nil {
		return Replay{}, fmt.Errorf("retry: %w", err)
	}
	if !found {
		return Replay{}, notFound("Dead letter not found")
	}
	return m.replay(ctx, tenant, id, ReplayTarget{})
}

// Replay pushes dead letter id back through the normal push path, to its own queue and
// partition or to the target's, as a new message whose transaction id is "dlq:<id>",
// and deletes the row once the message is in.
//
// The transaction id makes replays idempotent: a replay of a row that an earlier replay
// already pushed (the push committed, the row's deletion did not) is a duplicate, and
// nothing is delivered twice. A duplicate removes the row only when the message already
// there is this dead letter's (same transaction id and payload): anyone able to push
// could otherwise erase a dead letter by pushing a decoy under its derived id.
// Concurrent replays of one row run one after the other; the second finds the row gone.
//
// Refusals leave the row as it was: push maintenance (nothing may be written), a push
// the spool took (it commits later, under the same transaction id: replay again then),
// a payload this broker cannot decrypt (it could not be pushed as what it was).
func (m *Messages) Replay(ctx context.Context, tenant, id string, to ReplayTarget) (Replay, error) {
	if err := uuid.Validate(id); err != nil {
		return Replay{}, inputErrorf("id", "id must be a UUID, got %q", id)
	}
	if to.Queue != "" {
		if err := names.Check(to.Queue); err != nil {
			return Replay{}, inputErrorf("queue", "queue %s", err)
		}
	}
	if to.Partition != "" {
		if err := names.Check(to.Partition); err != nil {
			return Replay{}, inputErrorf("partition", "partition %s", err)
		}
	}
	if m.opts.PushPaused() {
		return Replay{}, maintenanceError()
	}
	return m.replay(ctx, tenant, id, to)
}

func maintenanceError() *ReplayError {
	no := false
	return &ReplayError{Result: ReplayMaintenance, Unavailable: true, RowRemoved: &no,
		Err: errors.New("push maintenance is on")}
}

func (m *Messages) replay(ctx context.Context, tenant, id string, to ReplayTarget) (Replay, error) {
	if m.opts.Push == nil {
		return Replay{}, errReplayNotConfigured
	}
	var (
		rep    Replay
		pushed bool
	)
	mv, err := m.store.MoveDeadLetter(ctx, tenant, id, func(ctx context.Context, d ports.DeadLetter) (bool, error) {
		payload, producer, err := m.deadPayload(&d)
		if err != nil {
			no := false
			return false, &ReplayError{Result: ReplayFailed, RowRemoved: &no, Err: err}
		}
		rep = Replay{Queue: d.Queue, Partition: d.Partition, ConsumerGroup: d.ConsumerGroup, DeadLetterID: d.ID,
			OriginalTransactionID: d.TransactionID}
		if to.Queue != "" {
			rep.Queue = to.Queue
		}
		if to.Partition != "" {
			rep.Partition = to.Partition
		}
		it := push.Item{Queue: rep.Queue, Partition: rep.Partition, TransactionID: "dlq:" + d.ID, Payload: payload}
		rep.Pushed = m.opts.Push.Push(ctx, tenant, producer, []push.Item{it})[0]
		no := false
		switch rep.Pushed.Status {
		case push.StatusQueued:
			pushed, rep.Result = true, ReplayMoved
			return true, nil
		case push.StatusDuplicate:
			pushed, rep.Result = true, ReplayDuplicate
			same, err := m.alreadyReplayed(ctx, tenant, &rep.Pushed, payload)
			if err != nil {
				return false, &ReplayError{Result: ReplayDuplicate, RowRemoved: &no, Replay: &rep,
					Err: fmt.Errorf("reading the message already there: %w", err)}
			}
			return same, nil
		case push.StatusBuffered:
			// Spooled: it commits when the spool drains, under the same transaction id.
			result := ReplayBuffered
			if m.opts.PushPaused() {
				result = ReplayMaintenance
			}
			return false, &ReplayError{Result: result, Unavailable: true, RowRemoved: &no,
				Err: errors.New("the push was spooled; replay again once it is committed to remove the dead letter")}
		case push.StatusFailed:
			if rep.Pushed.Err != nil { // refused: e.g. an encrypted destination this broker has no key for
				return false, &ReplayError{Result: ReplayFailed, RowRemoved: &no,
					Err: fmt.Errorf("the push was not stored: %w", rep.Pushed.Err)}
			}
			fallthrough
		default:
			return false, &ReplayError{Result: ReplayFailed, RowRemoved: &no,
				Err: fmt.Errorf("the push was not stored (%s)", rep.Pushed.Status)}
		}
	})
	// Errors of the move itself are ReplayErrors and leave the row (the store rolls back);
	// others are the store's.
	var re *ReplayError
	switch {
	case errors.As(err, &re):
		return Replay{}, re
	case err != nil && pushed:
		// The message is in; whether the row's deletion committed is not known.
		return Replay{}, &ReplayError{Result: rep.Result, Replay: &rep, Err: err}
	case err != nil:
		return Replay{}, fmt.Errorf("replay: %w", err)
	case !mv.Found:
		return Replay{}, notFound("Dead letter not found")
	}
	rep.RowRemoved = mv.Removed
	return rep, nil
}

// deadPayload decodes a dead letter's message: its payload in plaintext (to be pushed
// as what it was, and encrypted again if its destination encrypts) and its producer.
func (m *Messages) deadPayload(d *ports.DeadLetter) ([]byte, string, error) {
	f, err := queues.DeadLetterFrame(m.opts.Codec, d)
	if err != nil {
		return nil, "", fmt.Errorf("the dead letter cannot be decoded: %w", err)
	}
	p, err := queues.OpenPayload(&f, m.opts.Sealer)
	switch {
	case p.Sealed:
		return nil, "", fmt.Errorf("the dead letter's payload is encrypted and this broker cannot decrypt it: %w", err)
	case err != nil:
		return nil, "", fmt.Errorf("the dead letter's payload: %w", err)
	}
	return p.Data, f.ProducerSub, nil
}

// alreadyReplayed reports whether the message a duplicate push found is the one a
// replay pushes: its transaction id and payload (compared as JSON, decrypted) are.
func (m *Messages) alreadyReplayed(ctx context.Context, tenant string, r *push.Result, payload []byte) (bool, error) {
	if !r.HasOffset {
		return false, nil
	}
	seg, found, err := m.store.SegmentAt(ctx, tenant, r.PartitionID, r.Offset)
	if err != nil || !found {
		return false, err
	}
	frames, err := m.opts.Codec.Decode(seg.Blob)
	k := r.Offset - seg.BaseOffset
	if err != nil || k < 0 || k >= int64(len(frames)) || frames[k].TransactionID != r.TransactionID {
		return false, nil
	}
	there, err := queues.OpenPayload(&frames[k], m.opts.Sealer)
	if err != nil {
		return false, nil
	}
	return sameJSON(there.Data, payload), nil
}

// sameJSON compares two JSON texts ignoring insignificant white space; empty texts are
// equal to each other only.
func sameJSON(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
