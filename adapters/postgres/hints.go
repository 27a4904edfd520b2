package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"weak"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/ports"
)

var _ ports.HintBus = (*Store)(nil)

// The hint bus on LISTEN/NOTIFY; the payload layout is in doc.go.
const (
	// hintChannel is the NOTIFY channel every broker of the database listens on.
	hintChannel = "queen_hints"
	// maxHintPayload is the largest payload PostgreSQL accepts: it refuses 8000 bytes
	// and more (NOTIFY_PAYLOAD_MAX_LENGTH with the default 8 KiB pages).
	maxHintPayload = 7999
	// hintHeaderMax bounds a header line: "qh1", a 16-digit sender, a 20-digit sequence
	// number, two 10-digit part numbers, four separators and the newline.
	hintHeaderMax = 3 + 16 + 20 + 10 + 10 + 4 + 1
	// hintTag opens every payload of a batch of commit hints only: the format and its
	// version, which every broker reads. hintTagKinds opens every payload of a batch
	// holding a queue-level hint: the same layout with a fifth field per hint, its kind.
	hintTag      = "qh1"
	hintTagKinds = "qh2"
	// hintIdle is how long a listener waits for a notification before it checks that
	// its connection is alive (a dead network is otherwise only noticed by TCP
	// keepalive, minutes later); hintPingTimeout bounds that check.
	hintIdle        = 30 * time.Second
	hintPingTimeout = 5 * time.Second
)

// hintState is one Store's side of the bus: its sender id, its batch counter and its
// counters.
type hintState struct {
	sender     string        // 16 lowercase hex digits, random
	seq        atomic.Uint64 // batches published
	malformed  atomic.Uint64 // payloads received that did not parse
	unsendable atomic.Uint64 // hints Publish could not encode
}

// hintStates holds each Store's hint state by weak pointer, so the state lives with the
// bus code and a closed, unreferenced Store takes its entry with it (the cleanup).
var hintStates = struct {
	sync.Mutex
	m map[weak.Pointer[Store]]*hintState
}{m: make(map[weak.Pointer[Store]]*hintState)}

// hints returns the Store's hint state, creating it (with a fresh random sender id) on
// first use.
func (s *Store) hints() *hintState {
	k := weak.Make(s)
	hintStates.Lock()
	defer hintStates.Unlock()
	if h := hintStates.m[k]; h != nil {
		return h
	}
	var id [8]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand panics rather than return short)
	h := &hintState{sender: hex.EncodeToString(id[:])}
	hintStates.m[k] = h
	runtime.AddCleanup(s, func(k weak.Pointer[Store]) {
		hintStates.Lock()
		delete(hintStates.m, k)
		hintStates.Unlock()
	}, k)
	return h
}

// HintStats are the bus's counters of one Store.
type HintStats struct {
	Malformed  uint64 // received payloads that did not parse (skipped)
	Unsendable uint64 // hints not published: a field with a newline, a \x1f, a NUL or invalid UTF-8, or too long
}

// HintStats returns the Store's hint counters.
func (s *Store) HintStats() HintStats {
	h := s.hints()
	return HintStats{Malformed: h.malformed.Load(), Unsendable: h.unsendable.Load()}
}

// Publish implements ports.HintBus: every hint of the call in one statement and one
// transaction, as few payloads as fit under the NOTIFY limit. PostgreSQL delivers a
// transaction's notifications together and in order, so a listener sees the batch's
// payloads back to back and delivers them as one batch. Hints that cannot be encoded are
// left out and counted; the others are still published, and the error says how many.
func (s *Store) Publish(ctx context.Context, hints []ports.Hint) error {
	if len(hints) == 0 {
		return nil
	}
	h := s.hints()
	payloads, bad := encodeHints(h.sender, h.seq.Add(1), hints)
	if len(payloads) > 0 {
		err := s.run(ctx, "publish hints", func(ctx context.Context, c *pgxpool.Conn) error {
			_, err := c.Exec(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, hintChannel, payloads)
			return err
		})
		if err != nil {
			return err
		}
	}
	if bad > 0 {
		h.unsendable.Add(uint64(bad))
		return fmt.Errorf("postgres: publish hints: %d of %d hints not sent (a field longer than a notification, or with a newline, \\x1f, NUL or invalid UTF-8): %w",
			bad, len(hints), ports.ErrInvalid)
	}
	return nil
}

// Listen implements ports.HintBus on a connection of its own, opened here and closed on
// return (a pooled connection would be held for ever, and LISTEN state must not leak
// into the pool). It returns ctx's error when ctx ends, or why the connection failed.
// A payload that does not parse is skipped and counted (HintStats); this Store's own
// payloads are dropped.
func (s *Store) Listen(ctx context.Context, deliver func([]ports.Hint)) error {
	h := s.hints()
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = s.opts.ApplicationName + " hints"
	// Ending a wait must not cancel a statement on the server (there is none while the
	// connection waits) nor wait seconds for it, as the pool's handler does: the read
	// deadline alone ends it at once and leaves the connection usable.
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: c.Conn()}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return translate("listen: connect", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = conn.Close(cctx)
		cancel()
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+hintChannel); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return translate("listen", err)
	}
	a := hintAssembler{self: h.sender, deliver: deliver}
	for {
		wctx, cancel := context.WithTimeout(ctx, hintIdle)
		n, err := conn.WaitForNotification(wctx)
		idle := wctx.Err() != nil
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && idle && !conn.IsClosed() {
			pctx, cancel := context.WithTimeout(ctx, hintPingTimeout)
			err = conn.Ping(pctx)
			cancel()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err == nil {
				continue
			}
		}
		if err != nil {
			return translate("listen", err)
		}
		if !a.take(n.Payload) {
			h.malformed.Add(1)
		}
	}
}

// encodeHints packs hints into payloads of at most maxHintPayload bytes each (layout in
// doc.go) and reports how many hints could not be encoded.
func encodeHints(sender string, seq uint64, hints []ports.Hint) (payloads []string, bad int) {
	const room = maxHintPayload - hintHeaderMax
	// A batch of commit hints only keeps the first layout, which brokers that know no
	// kinds read; any other kind makes the whole batch qh2.
	tag := hintTag
	for _, h := range hints {
		if h.Kind != ports.HintCommit {
			tag = hintTagKinds
			break
		}
	}
	var bodies []string
	var b strings.Builder
	for _, h := range hints {
		fields := [4]string{h.Tenant, h.Queue, h.Partition, h.PartitionID}
		n := 4 // three separators and the newline
		ok := int(h.Kind) < len(hintKindCodes)
		for _, f := range fields {
			n += len(f)
			ok = ok && hintFieldOK(f)
		}
		if tag == hintTagKinds {
			n += 2 // a separator and the kind
		}
		if !ok || n > room {
			bad++
			continue
		}
		if b.Len()+n > room {
			bodies = append(bodies, b.String())
			b.Reset()
		}
		if b.Len() == 0 {
			b.Grow(room)
		}
		for i, f := range fields {
			if i > 0 {
				b.WriteByte(0x1f)
			}
			b.WriteString(f)
		}
		if tag == hintTagKinds {
			b.WriteByte(0x1f)
			b.WriteString(hintKindCodes[h.Kind])
		}
		b.WriteByte('\n')
	}
	if b.Len() > 0 {
		bodies = append(bodies, b.String())
	}
	payloads = make([]string, len(bodies))
	for i, body := range bodies {
		payloads[i] = tag + "\x1f" + sender + "\x1f" + strconv.FormatUint(seq, 10) + "\x1f" +
			strconv.Itoa(i+1) + "\x1f" + strconv.Itoa(len(bodies)) + "\n" + body
	}
	return payloads, bad
}

// hintKindCodes are the kind field's values in a qh2 payload (doc.go), by ports.HintKind.
var hintKindCodes = [...]string{
	ports.HintCommit:          "c",
	ports.HintQueueConfigured: "q",
	ports.HintQueueDeleted:    "d",
}

// hintKindOf is the kind a qh2 kind field names; ok is false for any other value.
func hintKindOf(code string) (k ports.HintKind, ok bool) {
	for i, c := range hintKindCodes {
		if c == code {
			return ports.HintKind(i), true
		}
	}
	return 0, false
}

// hintFieldOK reports whether f can travel in a payload: valid UTF-8 (PostgreSQL refuses
// anything else in text) without the two separators or a NUL (which text cannot hold).
// Queue and partition names never contain control characters (core/names).
func hintFieldOK(f string) bool {
	return utf8.ValidString(f) && strings.IndexByte(f, 0x1f) < 0 && strings.IndexByte(f, '\n') < 0 &&
		strings.IndexByte(f, 0) < 0
}

// hintHeader is a payload's first line.
type hintHeader struct {
	sender      string
	seq         uint64
	part, parts int
}

// decodeHints parses one payload; ok is false when it does not follow the layout.
func decodeHints(payload string) (hdr hintHeader, hints []ports.Hint, ok bool) {
	line, body, found := strings.Cut(payload, "\n")
	if !found {
		return hdr, nil, false
	}
	f := strings.Split(line, "\x1f")
	if len(f) != 5 || (f[0] != hintTag && f[0] != hintTagKinds) || len(f[1]) != 16 || strings.Trim(f[1], "0123456789abcdef") != "" {
		return hdr, nil, false
	}
	seq, err1 := strconv.ParseUint(f[2], 10, 64)
	part, err2 := strconv.ParseUint(f[3], 10, 31)
	parts, err3 := strconv.ParseUint(f[4], 10, 31)
	if err1 != nil || err2 != nil || err3 != nil || part < 1 || part > parts {
		return hdr, nil, false
	}
	hdr = hintHeader{sender: f[1], seq: seq, part: int(part), parts: int(parts)}
	if body == "" {
		return hdr, nil, true
	}
	if body[len(body)-1] != '\n' {
		return hdr, nil, false // every hint ends with a newline: the payload was cut
	}
	hints = make([]ports.Hint, 0, strings.Count(body, "\n"))
	for rest := body; rest != ""; {
		line, rest, _ = strings.Cut(rest, "\n")
		h, ok := decodeHint(line, f[0] == hintTagKinds)
		if !ok {
			return hdr, nil, false
		}
		hints = append(hints, h)
	}
	return hdr, hints, true
}

// decodeHint parses one hint line (without its newline): four fields, or five with the
// kind when kinds is set (a qh2 payload).
func decodeHint(line string, kinds bool) (h ports.Hint, ok bool) {
	var ok1, ok2, ok3, ok4 bool
	h.Tenant, line, ok1 = strings.Cut(line, "\x1f")
	h.Queue, line, ok2 = strings.Cut(line, "\x1f")
	h.Partition, line, ok3 = strings.Cut(line, "\x1f")
	h.PartitionID, ok4 = line, true
	if kinds {
		var code string
		h.PartitionID, code, _ = strings.Cut(line, "\x1f")
		h.Kind, ok4 = hintKindOf(code)
	}
	if !ok1 || !ok2 || !ok3 || !ok4 || strings.IndexByte(h.PartitionID, 0x1f) >= 0 {
		return ports.Hint{}, false
	}
	return h, true
}

// hintAssembler puts the payloads of one published batch back together. A batch's
// payloads come from one transaction, which PostgreSQL delivers contiguously and in
// order; a payload that does not continue the batch under way (which that guarantee
// rules out, short of a sender with another layout) first delivers what had arrived:
// hints are best effort, so a partial batch is delivered rather than dropped.
type hintAssembler struct {
	self    string // this Store's sender id: its own payloads are dropped
	deliver func([]ports.Hint)
	cur     hintHeader   // the batch under way (cur.parts == 0: none)
	hints   []ports.Hint // what arrived of it
}

// take handles one payload and reports whether it parsed.
func (a *hintAssembler) take(payload string) bool {
	hdr, hints, ok := decodeHints(payload)
	if !ok {
		return false
	}
	if hdr.sender == a.self {
		return true
	}
	if a.cur.parts > 0 && (hdr.sender != a.cur.sender || hdr.seq != a.cur.seq || hdr.part != a.cur.part+1) {
		a.flush()
	}
	if a.hints == nil {
		a.hints = hints // the common case, one payload: no copy
	} else {
		a.hints = append(a.hints, hints...)
	}
	a.cur = hdr
	if hdr.part == hdr.parts {
		a.flush()
	}
	return true
}

// flush delivers the batch under way, if it holds any hint, and forgets it.
func (a *hintAssembler) flush() {
	if len(a.hints) > 0 {
		a.deliver(a.hints)
	}
	a.cur, a.hints = hintHeader{}, nil
}
