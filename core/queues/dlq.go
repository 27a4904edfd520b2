package queues

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/queen-go/queen/ports"
)

// Page bounds of the dead-letter listing.
const (
	DefaultDeadLetterLimit = 100
	MaxDeadLetterLimit     = 10000
)

// DeadLetter is one listed dead letter with its message decoded.
type DeadLetter struct {
	ports.DeadLetterInfo
	// Data is the payload as pushed (raw JSON); nil when it is empty, cannot be decoded,
	// or is still encrypted.
	Data        json.RawMessage
	ProducerSub string // "" when none
	// Encrypted: the payload is stored encrypted and no configured key opened it.
	Encrypted bool
}

// DeadLetters lists dead letters matching f, newest failure first.
func (s *Service) DeadLetters(ctx context.Context, tenant string, f ports.DeadLetterFilter) ([]DeadLetter, error) {
	if f.Limit < 0 || f.Limit > MaxDeadLetterLimit {
		return nil, inputErrorf("limit", "limit must be between 0 and %d, got %d", MaxDeadLetterLimit, f.Limit)
	}
	if f.Offset < 0 {
		return nil, inputErrorf("offset", "offset must not be negative, got %d", f.Offset)
	}
	rows, err := s.store.DeadLetters(ctx, tenant, f)
	if err != nil {
		return nil, fmt.Errorf("dead letters: %w", err)
	}
	out := make([]DeadLetter, len(rows))
	for i := range rows {
		out[i] = s.decode(&rows[i])
	}
	return out, nil
}

// decode extracts a row's message from its copy of the segment.
func (s *Service) decode(r *ports.DeadLetter) DeadLetter {
	d := DeadLetter{DeadLetterInfo: r.DeadLetterInfo}
	frames, err := s.opts.Codec.Decode(r.Blob)
	if err == nil && (r.FrameIndex < 0 || r.FrameIndex >= len(frames)) {
		err = fmt.Errorf("frame index %d outside the segment's %d frames", r.FrameIndex, len(frames))
	}
	if err != nil {
		s.opts.Logger.Error("queues: dead letter not decodable, listed without data", "dlq_id", r.ID, "err", err)
		return d
	}
	f := frames[r.FrameIndex]
	d.ProducerSub = f.ProducerSub
	payload := f.Payload
	if f.Encrypted {
		if s.opts.Sealer == nil {
			d.Encrypted = true
			return d
		}
		if payload, err = s.opts.Sealer.Open(f.Payload); err != nil {
			s.opts.Logger.Warn("queues: dead letter payload cannot be decrypted", "dlq_id", r.ID, "err", err)
			d.Encrypted = true
			return d
		}
	}
	switch {
	case len(payload) == 0:
	case !json.Valid(payload):
		// Payloads are stored as pushed, which was valid JSON: this copy is damaged, and
		// passing it on would break the whole answer.
		s.opts.Logger.Error("queues: dead letter payload is not JSON, listed without data", "dlq_id", r.ID)
	default:
		d.Data = json.RawMessage(payload)
	}
	return d
}
