package queues

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"testing"

	"github.com/queen-go/queen/core/envelope"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

func TestDecodeDeadLetter(t *testing.T) {
	t.Parallel()
	codec, err := segment.NewCodec(3)
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := envelope.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := sealer.Seal([]byte(`{"secret":1}`))
	if err != nil {
		t.Fatal(err)
	}
	blob := codec.Encode([]segment.Frame{
		{TransactionID: "plain", Payload: []byte(`{"n": 1}`)},
		{TransactionID: "empty"},
		{TransactionID: "sealed", Payload: sealed, Encrypted: true, ProducerSub: "alice"},
		{TransactionID: "damaged", Payload: []byte(`{"n":`)},
	})
	quiet := slog.New(slog.DiscardHandler)
	tests := []struct {
		name       string
		sealer     *envelope.Sealer
		blob       []byte
		frame      int
		wantData   string // "" = nil
		wantSub    string
		wantSealed bool
	}{
		{"plain payload, byte for byte", nil, blob, 0, `{"n": 1}`, "", false},
		{"empty payload", nil, blob, 1, "", "", false},
		{"encrypted, key configured", sealer, blob, 2, `{"secret":1}`, "alice", false},
		{"encrypted, no key", nil, blob, 2, "", "alice", true},
		{"not JSON", nil, blob, 3, "", "", false},
		{"frame index beyond the segment", nil, blob, 4, "", "", false},
		{"corrupt blob", nil, []byte("not zstd"), 0, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := New(nil, Options{Sealer: tt.sealer, Codec: codec, Logger: quiet})
			msg := "why"
			row := ports.DeadLetter{
				DeadLetterInfo: ports.DeadLetterInfo{ID: "id", Queue: "q", TransactionID: "t", ErrorMessage: &msg, RetryCount: 2},
				FrameIndex:     tt.frame, Blob: tt.blob}
			d := s.decode(&row)
			if string(d.Data) != tt.wantData || (tt.wantData == "" && d.Data != nil) {
				t.Errorf("data %q, want %q", d.Data, tt.wantData)
			}
			if d.ProducerSub != tt.wantSub || d.Encrypted != tt.wantSealed {
				t.Errorf("producerSub %q encrypted %v, want %q %v", d.ProducerSub, d.Encrypted, tt.wantSub, tt.wantSealed)
			}
			if d.ID != "id" || d.Queue != "q" || d.TransactionID != "t" || d.ErrorMessage != &msg || d.RetryCount != 2 {
				t.Errorf("row fields not carried over: %+v", d)
			}
		})
	}
}

func TestDeadLettersRejectsBadPages(t *testing.T) {
	t.Parallel()
	s := New(nil, Options{}) // refused before the store is asked
	for _, tt := range []struct {
		name   string
		f      ports.DeadLetterFilter
		option string
	}{
		{"negative limit", ports.DeadLetterFilter{Limit: -1}, "limit"},
		{"negative offset", ports.DeadLetterFilter{Limit: 1, Offset: -1}, "offset"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := s.DeadLetters(t.Context(), ports.DefaultTenant, tt.f)
			var ie *InputError
			if !errors.As(err, &ie) || ie.Option != tt.option {
				t.Fatalf("error %v, want an *InputError about %s", err, tt.option)
			}
		})
	}
}

// pageStore is a QueueAdmin that records the filter of a listing and answers no rows.
type pageStore struct {
	ports.QueueAdmin
	got ports.DeadLetterFilter
}

func (p *pageStore) DeadLetters(_ context.Context, _ string, f ports.DeadLetterFilter) ([]ports.DeadLetter, error) {
	p.got = f
	return nil, nil
}

// A limit above the maximum is clamped, and the page says what was applied.
func TestDeadLettersClampsTheLimit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		limit     int
		wantLimit int
	}{
		{"zero", 0, 0},
		{"the default", DefaultDeadLetterLimit, DefaultDeadLetterLimit},
		{"the maximum", MaxDeadLetterLimit, MaxDeadLetterLimit},
		{"one above the maximum", MaxDeadLetterLimit + 1, MaxDeadLetterLimit},
		{"far above", math.MaxInt32, MaxDeadLetterLimit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := &pageStore{}
			page, err := New(store, Options{}).DeadLetters(t.Context(), ports.DefaultTenant,
				ports.DeadLetterFilter{Queue: "q", Limit: tt.limit, Offset: 7})
			if err != nil {
				t.Fatal(err)
			}
			if store.got.Limit != tt.wantLimit || page.Limit != tt.wantLimit || page.Offset != 7 || store.got.Offset != 7 {
				t.Fatalf("store asked for %+v, page %d/%d; want limit %d offset 7", store.got, page.Limit, page.Offset, tt.wantLimit)
			}
		})
	}
}
