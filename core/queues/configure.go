package queues

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/queen-go/queen/core/names"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/ports"
)

// Modes of a configure request.
const (
	ModeMerge   = "merge"
	ModeReplace = "replace"
)

// Request is one configure call.
type Request struct {
	Queue string
	// Mode is ModeMerge (also when "") or ModeReplace; anything else is refused, and
	// quoted in the error as given.
	Mode string
	// Options maps option names (docs/api.md §5.6) to their JSON values; JSON null resets an
	// option to its default. Unknown names are ignored, as Queen ignores them.
	Options map[string]json.RawMessage
	// Shard, when set, places a new queue on that shard (an index into QUEEN_SHARDS);
	// nil: the placement rules.
	Shard *int
}

// Clamping bounds and sink rules of docs/api.md §5.6.
const (
	MaxMinPopWaitTime              = 60000
	MinRetentionSinkHoldMaxSeconds = 60
	MaxRetentionSinkHoldMaxSeconds = 31536000
)

// MaxDelaySeconds (one year, as for a lease extension) bounds the options that hold a
// message back or keep it leased: leaseTime, delayedProcessing and windowBuffer.
const MaxDelaySeconds = 365 * 24 * 3600

// bounds is the range of an integer option. A value outside it is refused with an
// *InputError naming the option, or clamped into it when clamp is set (the two
// options Queen clamps, docs/api.md §5.6). Every bound lies within the int32 column.
type bounds struct {
	lo, hi int
	clamp  bool
}

var (
	any32    = bounds{lo: math.MinInt32, hi: math.MaxInt32}
	natural  = bounds{lo: 0, hi: math.MaxInt32}   // counts, and durations where 0 means none or off
	delay    = bounds{lo: 0, hi: MaxDelaySeconds} // 0: off
	lease    = bounds{lo: 1, hi: MaxDelaySeconds} // 0 would make every lease born expired
	popWait  = bounds{lo: 0, hi: MaxMinPopWaitTime, clamp: true}
	dedupWin = bounds{lo: 0, hi: math.MaxInt32, clamp: true}
	sinkMax  = bounds{lo: MinRetentionSinkHoldMaxSeconds, hi: MaxRetentionSinkHoldMaxSeconds}
	notInt   = bounds{} // string and boolean options
)

var sinkHold = regexp.MustCompile(`^[A-Za-z0-9._-]{0,64}$`)

// option describes one configuration option: its wire name, its bit, where its value
// lives in a QueueConfig (a *string, *int or *bool) and, for an integer, its bounds.
type option struct {
	name  string
	bit   ports.QueueOption
	field func(*ports.QueueConfig) any
	b     bounds
}

// Options lists the 21 options in the order of docs/api.md §5.6.
var options = []option{
	{"namespace", ports.OptNamespace, func(c *ports.QueueConfig) any { return &c.Namespace }, notInt},
	{"task", ports.OptTask, func(c *ports.QueueConfig) any { return &c.Task }, notInt},
	{"priority", ports.OptPriority, func(c *ports.QueueConfig) any { return &c.Priority }, any32},
	{"leaseTime", ports.OptLeaseTime, func(c *ports.QueueConfig) any { return &c.LeaseTime }, lease},
	{"retryLimit", ports.OptRetryLimit, func(c *ports.QueueConfig) any { return &c.RetryLimit }, natural},
	{"retryDelay", ports.OptRetryDelay, func(c *ports.QueueConfig) any { return &c.RetryDelay }, natural},
	{"maxSize", ports.OptMaxSize, func(c *ports.QueueConfig) any { return &c.MaxSize }, natural},
	{"ttl", ports.OptTTL, func(c *ports.QueueConfig) any { return &c.TTL }, natural},
	{"deadLetterQueue", ports.OptDeadLetterQueue, func(c *ports.QueueConfig) any { return &c.DeadLetterQueue }, notInt},
	{"dlqAfterMaxRetries", ports.OptDLQAfterMaxRetries, func(c *ports.QueueConfig) any { return &c.DLQAfterMaxRetries }, notInt},
	{"delayedProcessing", ports.OptDelayedProcessing, func(c *ports.QueueConfig) any { return &c.DelayedProcessing }, delay},
	{"windowBuffer", ports.OptWindowBuffer, func(c *ports.QueueConfig) any { return &c.WindowBuffer }, delay},
	{"retentionSeconds", ports.OptRetentionSeconds, func(c *ports.QueueConfig) any { return &c.RetentionSeconds }, natural},
	{"completedRetentionSeconds", ports.OptCompletedRetentionSeconds, func(c *ports.QueueConfig) any { return &c.CompletedRetentionSeconds }, natural},
	{"retentionEnabled", ports.OptRetentionEnabled, func(c *ports.QueueConfig) any { return &c.RetentionEnabled }, notInt},
	{"encryptionEnabled", ports.OptEncryptionEnabled, func(c *ports.QueueConfig) any { return &c.EncryptionEnabled }, notInt},
	{"maxWaitTimeSeconds", ports.OptMaxWaitTimeSeconds, func(c *ports.QueueConfig) any { return &c.MaxWaitTimeSeconds }, natural},
	{"minPopWaitTime", ports.OptMinPopWaitTime, func(c *ports.QueueConfig) any { return &c.MinPopWaitTime }, popWait},
	{"dedupWindowSeconds", ports.OptDedupWindowSeconds, func(c *ports.QueueConfig) any { return &c.DedupWindowSeconds }, dedupWin},
	{"retentionSinkHold", ports.OptRetentionSinkHold, func(c *ports.QueueConfig) any { return &c.RetentionSinkHold }, notInt},
	{"retentionSinkHoldMaxSeconds", ports.OptRetentionSinkHoldMaxSeconds, func(c *ports.QueueConfig) any { return &c.RetentionSinkHoldMaxSeconds }, sinkMax},
}

// IsOption reports whether name is one of the 21 configuration options.
func IsOption(name string) bool {
	for _, o := range options {
		if o.name == name {
			return true
		}
	}
	return false
}

// Defaults returns the configuration a queue named name gets when nothing is configured
// (docs/api.md §5.6): a dotted name "ns.task..." defaults namespace and task to its first two
// parts, as when a push creates the queue.
func Defaults(name string) ports.QueueConfig {
	c := ports.QueueConfig{Name: name, QueueOptions: ports.QueueOptions{
		LeaseTime: 300, RetryLimit: 3, RetryDelay: 1000, TTL: 3600,
		DeadLetterQueue: true, DLQAfterMaxRetries: true, DedupWindowSeconds: 3600,
		RetentionSinkHoldMaxSeconds: 604800,
	}}
	if strings.Contains(name, ".") {
		parts := strings.SplitN(name, ".", 3)
		c.Namespace, c.Task = parts[0], parts[1]
	}
	return c
}

// Configure validates req, stores it and returns the queue's stored configuration.
func (s *Service) Configure(ctx context.Context, tenant string, req Request) (ports.QueueConfig, error) {
	cfg, set, err := Resolve(req)
	if err != nil {
		return ports.QueueConfig{}, err
	}
	if req.Shard != nil {
		if n := *req.Shard; n < 0 || n >= s.opts.Shards {
			return ports.QueueConfig{}, inputErrorf("shard", "option shard must be the index of a shard of QUEEN_SHARDS, 0 to %d, got %d",
				s.opts.Shards-1, n)
		}
		cfg.Shard = req.Shard
	}
	stored, err := s.store.Configure(ctx, tenant, cfg, set)
	if err != nil {
		return ports.QueueConfig{}, fmt.Errorf("configure: %w", err)
	}
	s.opts.Changes.Announce(notify.QueueChange{Tenant: tenant, Queue: req.Queue})
	return stored, nil
}

// Resolve turns a request into what the store applies: the complete configuration of a
// new queue (defaults overlaid with the request) and the set of options an existing
// queue takes from it. It returns an *InputError for a request it refuses.
func Resolve(req Request) (ports.QueueConfig, ports.QueueOption, error) {
	// Queen takes the empty name here (docs/api.md §1), but no push or pop can name that
	// queue (names.Check refuses it there too): it would only ever be an empty row.
	if err := names.Check(req.Queue); err != nil {
		return ports.QueueConfig{}, 0, inputErrorf("", "queue %v", err)
	}
	var set ports.QueueOption
	switch req.Mode {
	case "", ModeMerge:
	case ModeReplace:
		set = ports.AllQueueOptions
	default:
		return ports.QueueConfig{}, 0, inputErrorf("", `mode must be "merge" or "replace", got %q`, req.Mode)
	}
	cfg := Defaults(req.Queue)
	for _, o := range options {
		raw, ok := req.Options[o.name]
		if !ok {
			continue
		}
		set |= o.bit
		if isNull(raw) {
			continue // back to the default already in cfg
		}
		if err := o.parse(raw, &cfg); err != nil {
			return ports.QueueConfig{}, 0, err
		}
	}
	return cfg, set, nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// parse stores raw, checked, into o's field of cfg.
func (o option) parse(raw json.RawMessage, cfg *ports.QueueConfig) error {
	switch p := o.field(cfg).(type) {
	case *string:
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return inputErrorf(o.name, "option %s must be a string, got %s", o.name, excerpt(raw))
		}
		if err := o.checkString(v); err != nil {
			return err
		}
		*p = v
	case *bool:
		var v bool
		if err := json.Unmarshal(raw, &v); err != nil {
			return inputErrorf(o.name, "option %s must be true or false, got %s", o.name, excerpt(raw))
		}
		*p = v
	case *int:
		v, err := o.integer(raw)
		if err != nil {
			return err
		}
		*p = v
	}
	return nil
}

func (o option) checkString(v string) error {
	switch o.bit {
	case ports.OptRetentionSinkHold:
		if !sinkHold.MatchString(v) {
			return &InputError{Option: o.name, Invalid: true,
				Msg: fmt.Sprintf("option %s must match [A-Za-z0-9._-]{0,64}, got %q", o.name, v)}
		}
	case ports.OptNamespace, ports.OptTask:
		// Discovery pops filter on them: the naming rules apply, but empty means none.
		if v != "" {
			if err := names.Check(v); err != nil {
				return inputErrorf(o.name, "option %s %v", o.name, err)
			}
		}
	}
	return nil
}

// integer reads an integral JSON number and applies the option's bounds: refused
// outside them, or clamped into them (never beyond the int32 column).
func (o option) integer(raw json.RawMessage) (int, error) {
	n := json.Number(bytes.TrimSpace(raw)) // a JSON number token: nothing to unquote
	var f float64
	if len(n) == 0 || !strings.ContainsRune("-0123456789", rune(n[0])) || !isIntegral(n, &f) {
		return 0, inputErrorf(o.name, "option %s must be an integer, got %s", o.name, excerpt(raw))
	}
	lo, hi := o.b.lo, o.b.hi
	if o.b.clamp {
		lo, hi = math.MinInt32, math.MaxInt32 // the column's range; the bounds clamp
	}
	if f < float64(lo) || f > float64(hi) {
		return 0, &InputError{Option: o.name, Invalid: true, Msg: fmt.Sprintf("option %s must be between %d and %d, got %s",
			o.name, lo, hi, n)}
	}
	return min(max(int(f), o.b.lo), o.b.hi), nil
}

// isIntegral reports whether n is a whole number (300, 3e2 and 300.0 are), storing it in f.
func isIntegral(n json.Number, f *float64) bool {
	v, err := n.Float64()
	if err != nil || math.IsInf(v, 0) || v != math.Trunc(v) {
		return false
	}
	*f = v
	return true
}

// excerpt quotes at most 64 bytes of a raw JSON value for an error message.
func excerpt(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return s
}
