package queues

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/queen-go/queen/core/envelope"
	"github.com/queen-go/queen/core/loglimit"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

// Page bounds of the dead-letter listing. A larger limit is clamped to the maximum,
// as every admin listing's is: Queen's clients ask for big pages to drain.
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

// DeadLetterPage is one page of dead letters with the paging applied to it.
type DeadLetterPage struct {
	Letters       []DeadLetter
	Limit, Offset int
}

// DeadLetters lists dead letters matching f, newest failure first: a page of at most
// MaxDeadLetterLimit (a larger f.Limit is clamped); a negative limit or offset is an
// *InputError.
func (s *Service) DeadLetters(ctx context.Context, tenant string, f ports.DeadLetterFilter) (DeadLetterPage, error) {
	if f.Limit < 0 {
		return DeadLetterPage{}, inputErrorf("limit", "limit must not be negative, got %d", f.Limit)
	}
	if f.Offset < 0 {
		return DeadLetterPage{}, inputErrorf("offset", "offset must not be negative, got %d", f.Offset)
	}
	f.Limit = min(f.Limit, MaxDeadLetterLimit)
	rows, err := s.store.DeadLetters(ctx, tenant, f)
	if err != nil {
		return DeadLetterPage{}, fmt.Errorf("dead letters: %w", err)
	}
	out := DeadLetterPage{Letters: make([]DeadLetter, len(rows)), Limit: f.Limit, Offset: f.Offset}
	for i := range rows {
		out.Letters[i] = s.decode(&rows[i])
	}
	return out, nil
}

// decode extracts a row's message from its copy of the segment.
func (s *Service) decode(r *ports.DeadLetter) DeadLetter {
	d := DeadLetter{DeadLetterInfo: r.DeadLetterInfo}
	f, err := DeadLetterFrame(s.opts.Codec, r)
	if err != nil {
		s.opts.Logger.Error("queues: dead letter not decodable, listed without data", loglimit.Cause("dead letter corrupt"), "dlq_id", r.ID, "err", err)
		return d
	}
	d.ProducerSub = f.ProducerSub
	p, err := OpenPayload(&f, s.opts.Sealer)
	switch {
	case p.Sealed:
		s.opts.Logger.Warn("queues: dead letter payload cannot be decrypted", loglimit.Cause("dead letter sealed"), "dlq_id", r.ID, "err", err)
	case err != nil:
		s.opts.Logger.Error("queues: dead letter payload is not JSON, listed without data", loglimit.Cause("dead letter not JSON"), "dlq_id", r.ID)
	}
	d.Data, d.Encrypted = p.Data, p.Sealed
	return d
}

// DeadLetterFrame decodes the dead message of row r from the row's copy of its segment
// (frame r.FrameIndex of r.Blob). Every reader of dead letters decodes them here: the
// listing, the message routes and the replays (core/admin).
func DeadLetterFrame(codec *segment.Codec, r *ports.DeadLetter) (segment.Frame, error) {
	frames, err := codec.Decode(r.Blob)
	if err != nil {
		return segment.Frame{}, err
	}
	if r.FrameIndex < 0 || r.FrameIndex >= len(frames) {
		return segment.Frame{}, fmt.Errorf("%w: frame index %d outside the segment's %d frames",
			segment.ErrCorrupt, r.FrameIndex, len(frames))
	}
	return frames[r.FrameIndex], nil
}

// Payload is a stored payload as a reader is shown it.
type Payload struct {
	// Data is the payload as pushed (raw JSON, byte for byte); nil when it is empty, is
	// not JSON, or is still encrypted.
	Data json.RawMessage
	// Sealed: the payload is stored encrypted and no configured key opened it.
	Sealed bool
}

// ErrNotJSON: a stored payload (after decryption) is not valid JSON.
var ErrNotJSON = errors.New("stored payload is not JSON")

// OpenPayload returns the payload of frame f as readers are shown it: decrypted with
// sealer (nil: no key configured) when it is stored encrypted. A payload that no key
// opens comes back Sealed, with the reason; one that is not JSON (payloads are stored as
// pushed, which was valid JSON: the copy is damaged, and passing it on would break the
// whole answer) comes back without data and with ErrNotJSON. The error is for the log:
// the payload is still reported, without data.
func OpenPayload(f *segment.Frame, sealer *envelope.Sealer) (Payload, error) {
	payload := f.Payload
	if f.Encrypted {
		if sealer == nil {
			return Payload{Sealed: true}, errors.New("QUEEN_ENCRYPTION_KEY is not set")
		}
		var err error
		if payload, err = sealer.Open(f.Payload); err != nil {
			return Payload{Sealed: true}, err
		}
	}
	switch {
	case len(payload) == 0:
		return Payload{}, nil
	case !json.Valid(payload):
		return Payload{}, ErrNotJSON
	}
	return Payload{Data: json.RawMessage(payload)}, nil
}
