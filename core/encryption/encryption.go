package encryption

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/queen-go/queen/core/envelope"
	"github.com/queen-go/queen/core/loglimit"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

var (
	// ErrNoKey refuses a payload for a queue with encryptionEnabled on a broker without a
	// valid QUEEN_ENCRYPTION_KEY: storing it in plaintext would break the queue's promise.
	ErrNoKey = errors.New("the queue has encryptionEnabled but this broker has no valid QUEEN_ENCRYPTION_KEY; the payload was not stored")
	// ErrFlagUnknown refuses a payload whose queue's encryptionEnabled flag could not be
	// read, on a broker without a key to seal it anyway.
	ErrFlagUnknown = errors.New("the queue's encryptionEnabled flag could not be read and this broker has no QUEEN_ENCRYPTION_KEY to seal the payload anyway; the payload was not stored")
	// ErrSeal refuses a payload whose encryption failed.
	ErrSeal = errors.New("encrypting the payload failed; the payload was not stored")
)

// DefaultCacheTTL is how long a flag read is trusted by default;
// QUEEN_CACHE_REFRESH_INTERVAL_MS defaults to it too (config's tests check it).
const DefaultCacheTTL = time.Minute

// Options tunes a Policy; zero values take the defaults in brackets.
type Options struct {
	CacheTTL time.Duration // [60s] QUEEN_CACHE_REFRESH_INTERVAL_MS: how long a flag read is trusted
	Logger   *slog.Logger
}

// Sealer seals payloads; *envelope.Sealer is the broker's (tests inject failures).
type Sealer interface {
	Seal(plaintext []byte) ([]byte, error)
}

// Policy seals the payloads of encrypted queues and caches the queues' flags. It is
// safe for concurrent use. A nil *Policy encrypts nothing (tests, tools without a
// database).
type Policy struct {
	sealer   Sealer              // nil: no key
	settings ports.QueueSettings // nil: no queue encrypts
	opts     Options

	mu     sync.RWMutex      // read on every pushed item, written on reads and Forget
	flags  map[queueKey]flag // last flag read
	forgot uint64            // Forget calls so far: a read that overlapped one is not cached
}

// queueKey is (tenant, queue): a map key built without allocating, which matters on the
// push path, where every item looks its queue up in the request's memo.
type queueKey [2]string

type flag struct {
	on bool
	at time.Time
}

// New returns the policy sealing with sealer (nil: this broker has no key) the payloads
// of the queues settings says encrypt (nil settings: none does).
func New(sealer Sealer, settings ports.QueueSettings, opts Options) *Policy {
	if s, ok := sealer.(*envelope.Sealer); ok && s == nil {
		sealer = nil // a nil *envelope.Sealer (no key configured) is no sealer, not one that panics
	}
	if opts.CacheTTL <= 0 {
		opts.CacheTTL = DefaultCacheTTL
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Policy{sealer: sealer, settings: settings, opts: opts, flags: make(map[queueKey]flag)}
}

// HasKey reports whether the policy can seal.
func (p *Policy) HasKey() bool { return p != nil && p.sealer != nil }

// QueueChanged is Forget as a queue-change subscriber.
func (p *Policy) QueueChanged(c notify.QueueChange) { p.Forget(c.Tenant, c.Queue) }

// Forget drops a queue's cached flag (its configuration changed, here or on another
// broker).
func (p *Policy) Forget(tenant, queue string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	delete(p.flags, queueKey{tenant, queue})
	p.forgot++
	p.mu.Unlock()
}

// state is a queue's flag as one Memo resolved it.
type state struct {
	on    bool
	known bool
	err   error // why it is not known
}

// errNotRead: the flag had expired (or was never read) and the Memo may not read it.
var errNotRead = errors.New("not read: every push is being spooled")

// flag resolves a queue's flag: fresh from the cache, else read (when read), else the
// last value read however old.
func (p *Policy) flag(ctx context.Context, tenant, queue string, read bool) state {
	if p.settings == nil {
		return state{known: true}
	}
	key := queueKey{tenant, queue}
	p.mu.RLock()
	f, cached := p.flags[key]
	gen := p.forgot
	p.mu.RUnlock()
	switch {
	case cached && time.Since(f.at) < p.opts.CacheTTL:
		return state{on: f.on, known: true}
	case !read && cached:
		return state{on: f.on, known: true}
	case !read:
		return state{err: errNotRead}
	}
	on, err := p.settings.EncryptionEnabled(ctx, tenant, queue)
	if err != nil {
		p.opts.Logger.Warn("encryption: cannot read the queue's encryptionEnabled flag", loglimit.Cause("encryption flag unreadable"),
			"queue", queue, "err", err)
		return state{err: err}
	}
	p.mu.Lock()
	if p.forgot == gen {
		// Otherwise the read may predate the configure that called Forget: caching it
		// would bring the old flag back for CacheTTL.
		p.flags[key] = flag{on: on, at: time.Now()}
	}
	p.mu.Unlock()
	return state{on: on, known: true}
}

// Memo is one request's (or one replay batch's) view of the flags: each queue's flag is
// resolved at most once. It is not safe for concurrent use.
type Memo struct {
	p    *Policy
	ctx  context.Context
	read bool
	// The first queue's flag is kept inline (most requests name one queue); the others
	// in flags, allocated on use.
	first    queueKey
	firstSt  state
	hasFirst bool
	flags    map[queueKey]state
}

// lookup returns the flag this memo resolved for key, if any.
func (m *Memo) lookup(key queueKey) (state, bool) {
	if m.hasFirst && m.first == key {
		return m.firstSt, true
	}
	st, ok := m.flags[key]
	return st, ok
}

// keep records the flag resolved for key.
func (m *Memo) keep(key queueKey, st state) {
	if !m.hasFirst {
		m.first, m.firstSt, m.hasFirst = key, st, true
		return
	}
	if m.flags == nil {
		m.flags = make(map[queueKey]state)
	}
	m.flags[key] = st
}

// Memo returns a memo resolving flags under ctx. read false forbids reading expired
// flags from the database (see the package documentation: only for payloads that can
// only reach the spool).
func (p *Policy) Memo(ctx context.Context, read bool) *Memo {
	return &Memo{p: p, ctx: ctx, read: read}
}

// Seal prepares frame f of tenant/queue for writing: its payload is replaced by its
// envelope when the queue encrypts (or its flag is unknown and there is a key), and left
// as it is when the queue does not encrypt or f is already sealed. An error says why f
// must not be written: it wraps ErrNoKey, ErrFlagUnknown or ErrSeal, and f is unchanged.
func (m *Memo) Seal(tenant, queue string, f *segment.Frame) error {
	if m == nil || m.p == nil || f.Encrypted {
		return nil
	}
	key := queueKey{tenant, queue}
	st, ok := m.lookup(key)
	if !ok {
		st = m.p.flag(m.ctx, tenant, queue, m.read)
		m.keep(key, st)
		if m.p.sealer == nil && st.on {
			// A broker missing the key its queues need is misconfigured, and the operator
			// must hear of it, not only the producer. An unknown flag is no such sign: its
			// read failure is logged above (or it was not read, every push being spooled:
			// the replay decides), and the payload is spooled or refused as retryable.
			m.p.opts.Logger.Warn("encryption: payloads for this queue cannot be encrypted: QUEEN_ENCRYPTION_KEY is not set",
				loglimit.Cause("encryption key missing"), "queue", queue)
		}
	}
	switch {
	case st.known && !st.on:
		return nil
	case m.p.sealer == nil && st.known:
		return fmt.Errorf("queue %q: %w", queue, ErrNoKey)
	case m.p.sealer == nil:
		return fmt.Errorf("queue %q: %w (%w)", queue, ErrFlagUnknown, st.err)
	}
	env, err := m.p.sealer.Seal(f.Payload)
	if err != nil {
		return fmt.Errorf("queue %q: %w: %w", queue, ErrSeal, err)
	}
	f.Payload, f.Encrypted = env, true
	return nil
}
