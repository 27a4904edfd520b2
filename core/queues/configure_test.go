package queues

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/queen-go/queen/ports"
)

func opts(kv ...string) map[string]json.RawMessage {
	m := make(map[string]json.RawMessage)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = json.RawMessage(kv[i+1])
	}
	return m
}

func TestResolve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		req     Request
		wantSet ports.QueueOption
		edit    func(c *ports.QueueConfig) // applied to Defaults(req.Queue)
	}{
		{"merge without options changes nothing", Request{Queue: "q"}, 0, nil},
		{"merge sets only what is present", Request{Queue: "q", Options: opts("leaseTime", "30", "encryptionEnabled", "true")},
			ports.OptLeaseTime | ports.OptEncryptionEnabled,
			func(c *ports.QueueConfig) { c.LeaseTime, c.EncryptionEnabled = 30, true }},
		{"explicit merge mode", Request{Queue: "q", Mode: "merge", Options: opts("priority", "5")}, ports.OptPriority,
			func(c *ports.QueueConfig) { c.Priority = 5 }},
		{"null resets to the default", Request{Queue: "q", Options: opts("leaseTime", "null", "deadLetterQueue", " null ")},
			ports.OptLeaseTime | ports.OptDeadLetterQueue, nil},
		{"replace sets every option", Request{Queue: "q", Mode: "replace", Options: opts("retryLimit", "9")},
			ports.AllQueueOptions, func(c *ports.QueueConfig) { c.RetryLimit = 9 }},
		{"unknown options are ignored", Request{Queue: "q", Options: opts("bogus", `"x"`)}, 0, nil},
		{"every kind", Request{Queue: "q", Options: opts("namespace", `"ns"`, "task", `"t"`, "retentionSinkHold", `"sink-1.a_b"`,
			"retentionSinkHoldMaxSeconds", "60", "dlqAfterMaxRetries", "false", "maxWaitTimeSeconds", "3e2", "ttl", "7.0")},
			ports.OptNamespace | ports.OptTask | ports.OptRetentionSinkHold | ports.OptRetentionSinkHoldMaxSeconds |
				ports.OptDLQAfterMaxRetries | ports.OptMaxWaitTimeSeconds | ports.OptTTL,
			func(c *ports.QueueConfig) {
				c.Namespace, c.Task, c.RetentionSinkHold, c.RetentionSinkHoldMaxSeconds = "ns", "t", "sink-1.a_b", 60
				c.DLQAfterMaxRetries, c.MaxWaitTimeSeconds, c.TTL = false, 300, 7
			}},
		{"dedupWindowSeconds clamps at 0", Request{Queue: "q", Options: opts("dedupWindowSeconds", "-5")}, ports.OptDedupWindowSeconds,
			func(c *ports.QueueConfig) { c.DedupWindowSeconds = 0 }},
		{"minPopWaitTime clamps below", Request{Queue: "q", Options: opts("minPopWaitTime", "-1")}, ports.OptMinPopWaitTime, nil},
		{"minPopWaitTime clamps above", Request{Queue: "q", Options: opts("minPopWaitTime", "70000")}, ports.OptMinPopWaitTime,
			func(c *ports.QueueConfig) { c.MinPopWaitTime = 60000 }},
		{"sink hold max seconds upper bound", Request{Queue: "q", Options: opts("retentionSinkHoldMaxSeconds", "31536000")},
			ports.OptRetentionSinkHoldMaxSeconds, func(c *ports.QueueConfig) { c.RetentionSinkHoldMaxSeconds = 31536000 }},
		// The bounds hold their ends, and 0 stays valid where it means none or off.
		{"zero is off or none", Request{Queue: "q", Options: opts("retryLimit", "0", "retryDelay", "0", "maxSize", "0",
			"ttl", "0", "delayedProcessing", "0", "windowBuffer", "0", "retentionSeconds", "0",
			"completedRetentionSeconds", "0", "maxWaitTimeSeconds", "0", "priority", "0")},
			ports.OptRetryLimit | ports.OptRetryDelay | ports.OptMaxSize | ports.OptTTL | ports.OptDelayedProcessing |
				ports.OptWindowBuffer | ports.OptRetentionSeconds | ports.OptCompletedRetentionSeconds |
				ports.OptMaxWaitTimeSeconds | ports.OptPriority,
			func(c *ports.QueueConfig) { c.RetryLimit, c.RetryDelay, c.TTL = 0, 0, 0 }},
		{"leaseTime of one second", Request{Queue: "q", Options: opts("leaseTime", "1")}, ports.OptLeaseTime,
			func(c *ports.QueueConfig) { c.LeaseTime = 1 }},
		{"a year of lease, delay and window", Request{Queue: "q", Options: opts("leaseTime", "31536000",
			"delayedProcessing", "31536000", "windowBuffer", "31536000")},
			ports.OptLeaseTime | ports.OptDelayedProcessing | ports.OptWindowBuffer,
			func(c *ports.QueueConfig) {
				c.LeaseTime, c.DelayedProcessing, c.WindowBuffer = 31536000, 31536000, 31536000
			}},
		{"negative priority ranks below the default", Request{Queue: "q", Options: opts("priority", "-5")}, ports.OptPriority,
			func(c *ports.QueueConfig) { c.Priority = -5 }},
		{"counts up to the column", Request{Queue: "q", Options: opts("retryLimit", "2147483647", "maxSize", "2147483647")},
			ports.OptRetryLimit | ports.OptMaxSize, func(c *ports.QueueConfig) { c.RetryLimit, c.MaxSize = math.MaxInt32, math.MaxInt32 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, set, err := Resolve(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			want := Defaults(tt.req.Queue)
			if tt.edit != nil {
				tt.edit(&want)
			}
			if cfg != want {
				t.Errorf("config\n got %+v\nwant %+v", cfg, want)
			}
			if set != tt.wantSet {
				t.Errorf("set %b, want %b", set, tt.wantSet)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, queue, ns, task string }{
		{"plain", "orders", "", ""},
		{"dotted", "billing.invoice", "billing", "invoice"},
		{"more parts", "billing.invoice.v2", "billing", "invoice"},
		{"trailing dot", "billing.", "billing", ""},
		{"leading dot", ".invoice", "", "invoice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := Defaults(tt.queue)
			if d.Namespace != tt.ns || d.Task != tt.task {
				t.Fatalf("namespace %q task %q, want %q %q", d.Namespace, d.Task, tt.ns, tt.task)
			}
		})
	}
	d := Defaults("q")
	want := ports.QueueConfig{Name: "q", QueueOptions: ports.QueueOptions{LeaseTime: 300, RetryLimit: 3, RetryDelay: 1000,
		TTL: 3600, DeadLetterQueue: true, DLQAfterMaxRetries: true, DedupWindowSeconds: 3600, RetentionSinkHoldMaxSeconds: 604800}}
	if d != want {
		t.Fatalf("defaults %+v, want %+v (docs/api.md §5.6)", d, want)
	}
}

func TestResolveRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		req         Request
		option      string // named in the error
		invalid     bool   // answered with "invalid"
		msgContains string
	}{
		{"bad mode", Request{Queue: "q", Mode: "upsert"}, "", false, `mode must be "merge" or "replace", got "upsert"`},
		{"queue with a control character", Request{Queue: "a\x01b"}, "", false, "queue contains a control character"},
		{"queue too long", Request{Queue: strings.Repeat("q", 256)}, "", false, "queue is 256 bytes"},
		{"int given a string", Request{Queue: "q", Options: opts("leaseTime", `"300"`)}, "leaseTime", false, "option leaseTime must be an integer"},
		{"int given a fraction", Request{Queue: "q", Options: opts("retryLimit", "1.5")}, "retryLimit", false, "retryLimit must be an integer"},
		{"int given a bool", Request{Queue: "q", Options: opts("ttl", "true")}, "ttl", false, "ttl must be an integer"},
		{"int beyond int32", Request{Queue: "q", Options: opts("priority", "2147483648")}, "priority", true, "priority must be between"},
		{"empty queue name", Request{Queue: "", Options: opts("priority", "1")}, "", false, "queue must not be empty"},
		{"leaseTime -1: every lease born expired", Request{Queue: "q", Options: opts("leaseTime", "-1")}, "leaseTime", true,
			"option leaseTime must be between 1 and 31536000, got -1"},
		{"leaseTime 0", Request{Queue: "q", Options: opts("leaseTime", "0")}, "leaseTime", true, "between 1 and 31536000"},
		{"leaseTime above a year", Request{Queue: "q", Options: opts("leaseTime", "31536001")}, "leaseTime", true, "between 1 and 31536000"},
		{"negative retryLimit", Request{Queue: "q", Options: opts("retryLimit", "-1")}, "retryLimit", true, "between 0 and 2147483647, got -1"},
		{"negative retryDelay", Request{Queue: "q", Options: opts("retryDelay", "-1000")}, "retryDelay", true, "between 0 and"},
		{"negative maxSize", Request{Queue: "q", Options: opts("maxSize", "-1")}, "maxSize", true, "between 0 and"},
		{"negative ttl", Request{Queue: "q", Options: opts("ttl", "-3600")}, "ttl", true, "between 0 and"},
		{"negative delayedProcessing", Request{Queue: "q", Options: opts("delayedProcessing", "-1")}, "delayedProcessing", true, "between 0 and 31536000"},
		{"delayedProcessing above a year", Request{Queue: "q", Options: opts("delayedProcessing", "31536001")}, "delayedProcessing", true, "between 0 and 31536000"},
		{"negative windowBuffer", Request{Queue: "q", Options: opts("windowBuffer", "-1")}, "windowBuffer", true, "between 0 and 31536000"},
		{"negative retentionSeconds", Request{Queue: "q", Options: opts("retentionSeconds", "-1")}, "retentionSeconds", true, "between 0 and"},
		{"negative completedRetentionSeconds", Request{Queue: "q", Options: opts("completedRetentionSeconds", "-1")}, "completedRetentionSeconds", true, "between 0 and"},
		{"negative maxWaitTimeSeconds", Request{Queue: "q", Options: opts("maxWaitTimeSeconds", "-1")}, "maxWaitTimeSeconds", true, "between 0 and"},
		{"clamped option beyond int32", Request{Queue: "q", Options: opts("dedupWindowSeconds", "1e12")}, "dedupWindowSeconds", true, "between -2147483648 and 2147483647"},
		{"bool given a number", Request{Queue: "q", Options: opts("encryptionEnabled", "1")}, "encryptionEnabled", false, "encryptionEnabled must be true or false"},
		{"string given a number", Request{Queue: "q", Options: opts("namespace", "5")}, "namespace", false, "namespace must be a string"},
		{"namespace with a control character", Request{Queue: "q", Options: opts("task", `"a\u0007"`)}, "task", false, "task contains a control character"},
		{"sink hold pattern", Request{Queue: "q", Options: opts("retentionSinkHold", `"has space"`)}, "retentionSinkHold", true, "retentionSinkHold must match"},
		{"sink hold too long", Request{Queue: "q", Options: opts("retentionSinkHold", `"`+strings.Repeat("a", 65)+`"`)}, "retentionSinkHold", true, "must match"},
		{"sink hold max below 60", Request{Queue: "q", Options: opts("retentionSinkHoldMaxSeconds", "59")}, "retentionSinkHoldMaxSeconds", true, "between 60 and 31536000"},
		{"sink hold max above a year", Request{Queue: "q", Options: opts("retentionSinkHoldMaxSeconds", "31536001")}, "retentionSinkHoldMaxSeconds", true, "between 60 and 31536000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := Resolve(tt.req)
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v, want an *InputError", err)
			}
			if ie.Option != tt.option || ie.Invalid != tt.invalid || !strings.Contains(ie.Msg, tt.msgContains) {
				t.Fatalf("error %+v, want option %q invalid %v and a message containing %q", ie, tt.option, tt.invalid, tt.msgContains)
			}
		})
	}
}

// Every integer option has bounds, and its default lies within them (a default outside
// would make "null" or replace store what an explicit value cannot).
func TestOptionBounds(t *testing.T) {
	t.Parallel()
	d := Defaults("q")
	for _, o := range options {
		t.Run(o.name, func(t *testing.T) {
			p, isInt := o.field(&d).(*int)
			switch {
			case !isInt && o.b != notInt:
				t.Fatalf("bounds %+v on a non-integer option", o.b)
			case !isInt:
				return
			case o.b.lo >= o.b.hi || o.b.lo < math.MinInt32 || o.b.hi > math.MaxInt32:
				t.Fatalf("bounds %+v: want lo < hi within int32", o.b)
			case *p < o.b.lo || *p > o.b.hi:
				t.Fatalf("default %d outside %+v", *p, o.b)
			}
		})
	}
}
