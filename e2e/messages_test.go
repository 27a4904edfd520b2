package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tests of the message routes (docs/api.md §5.8): the browser, one message's detail, and the
// dead-letter deletion, purge, retry and replay.

// msgListKeys and msgItemKeys are GET /api/v1/messages's keys, in docs/api.md's order.
var (
	msgListKeys = []string{"messages", "mode", "total", "pagination"}
	msgItemKeys = []string{"id", "transactionId", "txnHash", "partitionId", "queuePath", "queue", "partition",
		"namespace", "task", "status", "queueStatus", "busStatus", "traceId", "producerSub", "queuePriority",
		"payloadAvailable", "segment", "createdAt", "leaseExpiresAt", "data", "payload", "isEncrypted"}
	msgDetailKeys = []string{"id", "transactionId", "data", "payload", "traceId", "producerSub", "createdAt",
		"partitionId", "partition", "isEncrypted", "queue", "queuePath", "namespace", "task", "status",
		"errorMessage", "retryCount", "leaseExpiresAt", "queueConfig", "mode", "consumerGroups"}
	msgGroupKeys  = []string{"name", "group", "consumed", "status", "leaseExpiresAt", "errorMessage", "retryCount"}
	msgModeKeys   = []string{"hasQueueMode", "busGroupsCount", "type"}
	msgReplayKeys = []string{"success", "result", "queue", "partition", "consumerGroup", "dlqId",
		"originalTransactionId", "replayedAs", "dlqRowRemoved"}
	msgHex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

type msgMode struct {
	HasQueueMode   bool   `json:"hasQueueMode"`
	BusGroupsCount int    `json:"busGroupsCount"`
	Type           string `json:"type"`
}

type msgItem struct {
	ID            *string `json:"id"`
	TransactionID *string `json:"transactionId"`
	TxnHash       *string `json:"txnHash"`
	PartitionID   string  `json:"partitionId"`
	QueuePath     string  `json:"queuePath"`
	Queue         string  `json:"queue"`
	Partition     string  `json:"partition"`
	Namespace     string  `json:"namespace"`
	Task          string  `json:"task"`
	Status        string  `json:"status"`
	QueueStatus   string  `json:"queueStatus"`
	BusStatus     struct {
		ConsumedBy  int `json:"consumedBy"`
		TotalGroups int `json:"totalGroups"`
	} `json:"busStatus"`
	TraceID          *string `json:"traceId"`
	ProducerSub      *string `json:"producerSub"`
	QueuePriority    int     `json:"queuePriority"`
	PayloadAvailable bool    `json:"payloadAvailable"`
	Segment          struct {
		Seq      int64 `json:"seq"`
		FrameIdx int64 `json:"frameIdx"`
	} `json:"segment"`
	CreatedAt      string          `json:"createdAt"`
	LeaseExpiresAt *string         `json:"leaseExpiresAt"`
	Data           json.RawMessage `json:"data"`
	Payload        json.RawMessage `json:"payload"`
	IsEncrypted    bool            `json:"isEncrypted"`
}

func (m msgItem) txn() string {
	if m.TransactionID == nil {
		return "<unknown>"
	}
	return *m.TransactionID
}

type msgList struct {
	Messages   []msgItem `json:"messages"`
	Mode       msgMode   `json:"mode"`
	Total      int       `json:"total"`
	Pagination struct {
		Limit  int `json:"limit"`
		Offset int `json:"offset"`
	} `json:"pagination"`
}

// msgBrowse reads GET /api/v1/messages?query, checks its shape key by key, and returns it.
func (b *broker) msgBrowse(t testing.TB, query string) msgList {
	t.Helper()
	code, body := b.get(t, "/api/v1/messages"+query)
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/messages%s: %d %s", query, code, body)
	}
	if got := jsonKeys(t, body); !slices.Equal(got, msgListKeys) {
		t.Fatalf("answer keys %v, want %v", got, msgListKeys)
	}
	var raw struct {
		Messages []json.RawMessage `json:"messages"`
		Mode     json.RawMessage   `json:"mode"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	if got := jsonKeys(t, raw.Mode); !slices.Equal(got, msgModeKeys) {
		t.Fatalf("mode keys %v, want %v", got, msgModeKeys)
	}
	for _, m := range raw.Messages {
		if got := jsonKeys(t, m); !slices.Equal(got, msgItemKeys) {
			t.Fatalf("message keys %v, want %v", got, msgItemKeys)
		}
	}
	var out msgList
	if err := decodeStrict(body, &out); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if out.Messages == nil || out.Total != len(out.Messages) {
		t.Fatalf("answer %s: messages must be an array of total elements", body)
	}
	return out
}

func msgTxns(l msgList) []string {
	out := make([]string, len(l.Messages))
	for i, m := range l.Messages {
		out[i] = m.txn()
	}
	return out
}

// msgBrowseFixture is a broker with two queues of one namespace whose messages are in
// every status:
//
//	mb.orders/p1  m0..m4, one segment; group g1 acked m0 m1 and holds a lease on m2,
//	              group g2 acked all five: m0 m1 completed, m2 processing, m3 m4 pending
//	mb.orders/p2  n0 n1, pushed after p1's; the queue-mode group dead-lettered n0: n0
//	              dead_letter, n1 pending
//	mb.other      o0, pushed last, no group: pending
type msgBrowseFixture struct {
	b                    *broker
	before, afterP1, end time.Time
	pushed               map[string]pushResult // by transaction id
	p1, p2               string                // partition ids
}

func newMsgBrowseFixture(t *testing.T) *msgBrowseFixture {
	f := &msgBrowseFixture{b: startBroker(t, nil), pushed: map[string]pushResult{}}
	b := f.b
	f.before = time.Now().Add(-time.Second) // the broker's and the database's clocks are this machine's
	var items []map[string]any
	for i := range 5 {
		items = append(items, map[string]any{"queue": "mb.orders", "partition": "p1", "transactionId": fmt.Sprint("m", i),
			"payload": map[string]any{"m": i}})
	}
	for _, r := range b.push(t, items...) {
		f.pushed[r.TransactionID] = r
	}
	f.afterP1 = time.Now()
	for _, r := range b.push(t, map[string]any{"queue": "mb.orders", "partition": "p2", "transactionId": "n0", "payload": "n-zero"},
		map[string]any{"queue": "mb.orders", "partition": "p2", "transactionId": "n1", "payload": nil}) {
		f.pushed[r.TransactionID] = r
	}
	f.pushed["o0"] = b.push(t, map[string]any{"queue": "mb.other", "transactionId": "o0", "payload": []int{1, 2}})[0]

	p1 := "/api/v1/pop/queue/mb.orders/partition/p1?subscriptionMode=all&consumerGroup="
	g1 := b.popMust(t, p1+"g1&batch=2")
	wantTxns(t, g1, "m0", "m1")
	b.ackAll(t, g1, "")
	// Leased for an hour, not acked: a loaded machine must not see the lease expire.
	wantTxns(t, b.popMust(t, p1+"g1&batch=1&leaseSeconds=3600"), "m2")
	g2 := b.popMust(t, p1+"g2&batch=5")
	b.ackAll(t, g2, "")
	f.p1 = g2.PartitionID
	d := b.deadLetter(t, "/api/v1/pop/queue/mb.orders/partition/p2?batch=1", "", "n0", "boom", 0)
	f.p2 = d.PartitionID
	f.end = time.Now().Add(time.Second)
	return f
}

func TestMessagesBrowse(t *testing.T) {
	t.Parallel()
	f := newMsgBrowseFixture(t)
	b := f.b

	t.Run("fields", func(t *testing.T) {
		t.Parallel()
		l := b.msgBrowse(t, "?queue=mb.orders")
		if l.Mode != (msgMode{HasQueueMode: true, BusGroupsCount: 2, Type: "hybrid"}) {
			t.Errorf("mode %+v, want hybrid with 2 named groups", l.Mode)
		}
		type want struct {
			partition, partitionID, status, queueStatus string
			consumedBy, totalGroups                     int
			data                                        string
			leased                                      bool
		}
		wants := map[string]want{
			"n1": {"p2", f.p2, "pending", "pending", 0, 0, "null", false},
			"n0": {"p2", f.p2, "dead_letter", "dead_letter", 0, 0, `"n-zero"`, false},
			"m4": {"p1", f.p1, "pending", "pending", 1, 2, `{"m":4}`, false},
			"m3": {"p1", f.p1, "pending", "pending", 1, 2, `{"m":3}`, false},
			"m2": {"p1", f.p1, "processing", "pending", 1, 2, `{"m":2}`, true},
			"m1": {"p1", f.p1, "completed", "pending", 2, 2, `{"m":1}`, false},
			"m0": {"p1", f.p1, "completed", "pending", 2, 2, `{"m":0}`, false},
		}
		if got, w := msgTxns(l), []string{"n1", "n0", "m4", "m3", "m2", "m1", "m0"}; !slices.Equal(got, w) {
			t.Fatalf("messages %v, want %v (newest commit first, then offset descending)", got, w)
		}
		for _, m := range l.Messages {
			w, p := wants[m.txn()], f.pushed[m.txn()]
			if m.ID == nil || *m.ID != p.MessageID || m.TxnHash == nil || !msgHex32.MatchString(*m.TxnHash) {
				t.Errorf("%s: id %v txnHash %v, want the pushed id %s and 32 hex digits", m.txn(), m.ID, m.TxnHash, p.MessageID)
			}
			if m.PartitionID != w.partitionID || m.Partition != w.partition || m.Queue != "mb.orders" ||
				m.QueuePath != "mb.orders/"+w.partition || m.Namespace != "mb" || m.Task != "orders" || m.QueuePriority != 0 {
				t.Errorf("%s: place %+v, want mb.orders/%s (%s), namespace mb, task orders", m.txn(), m, w.partition, w.partitionID)
			}
			if m.Status != w.status || m.QueueStatus != w.queueStatus || m.BusStatus.ConsumedBy != w.consumedBy ||
				m.BusStatus.TotalGroups != w.totalGroups {
				t.Errorf("%s: status %s/%s bus %+v, want %s/%s consumed by %d of %d", m.txn(), m.Status, m.QueueStatus,
					m.BusStatus, w.status, w.queueStatus, w.consumedBy, w.totalGroups)
			}
			if (m.LeaseExpiresAt != nil) != w.leased || (w.leased && !microTime.MatchString(*m.LeaseExpiresAt)) {
				t.Errorf("%s: leaseExpiresAt %v, want one: %v", m.txn(), m.LeaseExpiresAt, w.leased)
			}
			if string(m.Data) != w.data || string(m.Payload) != w.data || !m.PayloadAvailable || m.IsEncrypted ||
				m.TraceID != nil || m.ProducerSub != nil {
				t.Errorf("%s: data %s payload %s available %v encrypted %v trace %v producer %v, want %s, no trace, no producer",
					m.txn(), m.Data, m.Payload, m.PayloadAvailable, m.IsEncrypted, m.TraceID, m.ProducerSub, w.data)
			}
			if m.Segment.Seq+m.Segment.FrameIdx != *p.Offset || (w.partition == "p1" && m.Segment.Seq != 0) {
				t.Errorf("%s: segment %+v, want the pushed offset %d (p1's five messages share segment 0)", m.txn(), m.Segment, *p.Offset)
			}
			at, err := time.Parse(time.RFC3339Nano, m.CreatedAt)
			if err != nil || !microTime.MatchString(m.CreatedAt) || at.Before(f.before) || at.After(f.end) {
				t.Errorf("%s: createdAt %s, want a microsecond timestamp of the push", m.txn(), m.CreatedAt)
			}
		}
	})

	t.Run("pages and filters", func(t *testing.T) {
		t.Parallel()
		rfc := func(at time.Time) string { return url.QueryEscape(at.UTC().Format(time.RFC3339Nano)) }
		for _, tt := range []struct {
			name, query string
			want        []string
		}{
			{"default window: every queue", "", []string{"o0", "n1", "n0", "m4", "m3", "m2", "m1", "m0"}},
			{"limit", "?queue=mb.orders&limit=2", []string{"n1", "n0"}},
			{"limit and offset", "?queue=mb.orders&limit=2&offset=1", []string{"n0", "m4"}},
			{"offset past the end", "?queue=mb.orders&offset=7", nil},
			{"partition", "?queue=mb.orders&partition=p1&limit=3", []string{"m4", "m3", "m2"}},
			{"partition of any queue", "?partition=Default", []string{"o0"}},
			{"namespace", "?namespace=mb", []string{"o0", "n1", "n0", "m4", "m3", "m2", "m1", "m0"}},
			{"ns alias", "?ns=mb&task=other", []string{"o0"}},
			{"task", "?task=orders&limit=1", []string{"n1"}},
			{"unknown namespace", "?namespace=zz", nil},
			{"status pending", "?queue=mb.orders&status=pending", []string{"n1", "m4", "m3"}},
			{"status processing", "?queue=mb.orders&status=processing", []string{"m2"}},
			{"status completed", "?status=completed", []string{"m1", "m0"}},
			{"status dead_letter", "?status=dead_letter", []string{"n0"}},
			{"status with a page", "?status=pending&limit=2&offset=1", []string{"n1", "m4"}},
			{"from after p1", "?queue=mb.orders&from=" + rfc(f.afterP1), []string{"n1", "n0"}},
			{"to before the pushes", "?from=" + rfc(f.before.Add(-time.Hour)) + "&to=" + rfc(f.before), nil},
			{"from in the future", "?from=" + rfc(time.Now().Add(time.Hour)), nil},
			{"window around everything", "?queue=mb.other&from=" + rfc(f.before) + "&to=" + rfc(f.end), []string{"o0"}},
			{"from a date", "?queue=mb.other&from=" + f.before.UTC().Format(time.DateOnly), []string{"o0"}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				if got := msgTxns(b.msgBrowse(t, tt.query)); !slices.Equal(got, tt.want) {
					t.Fatalf("messages %v, want %v", got, tt.want)
				}
			})
		}
	})

	t.Run("modes", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct {
			query string
			want  msgMode
		}{
			{"?queue=mb.orders&partition=p1", msgMode{false, 2, "bus"}},
			{"?queue=mb.orders&partition=p2", msgMode{true, 0, "queue"}},
			{"?queue=mb.other", msgMode{false, 0, "none"}},
		} {
			if got := b.msgBrowse(t, tt.query).Mode; got != tt.want {
				t.Errorf("%s: mode %+v, want %+v", tt.query, got, tt.want)
			}
		}
	})

	t.Run("bad parameters", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct{ name, query, want string }{
			{"limit not a number", "?limit=abc", "limit must be an integer"},
			{"limit zero", "?limit=0", "limit must be at least 1"},
			{"negative limit", "?limit=-1", "limit must be at least 1"},
			{"negative offset", "?offset=-1", "offset must be between 0 and 100000"},
			{"offset too deep", "?offset=100001", "offset must be between 0 and 100000"},
			{"unknown status", "?status=done", "status must be one of"},
			{"bad from", "?from=yesterday", "from must be an RFC 3339 timestamp"},
			{"bad to", "?to=2026-13-01T00:00:00Z", "to must be an RFC 3339 timestamp"},
			{"to before from", "?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", "to (2026-01-01T00:00:00Z) must not be before from"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				resp, body := b.doBad(t, http.MethodGet, "/api/v1/messages"+tt.query, nil)
				wantErrorBody(t, resp, body, http.StatusBadRequest, "", tt.want)
			})
		}
	})
}

// TestMessagesBrowsePagesAreBounded: a page never holds more than its limit, 1000 at
// most, and pages of one listing neither overlap nor skip, across many segments and
// partitions.
func TestMessagesBrowsePagesAreBounded(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	// 1,250 messages: 25 requests of 50, each over 5 partitions (125 segments of 10).
	var want []string
	for r := range 25 {
		var items []map[string]any
		for k := range 50 {
			items = append(items, map[string]any{"queue": "bounded", "partition": fmt.Sprint("p", k%5),
				"transactionId": fmt.Sprintf("t%02d-%02d", r, k), "payload": k})
		}
		b.push(t, items...)
	}
	all := b.msgBrowse(t, "?queue=bounded&limit=1000")
	if len(all.Messages) != 1000 {
		t.Fatalf("limit=1000 answered %d messages", len(all.Messages))
	}
	rest := b.msgBrowse(t, "?queue=bounded&limit=1000&offset=1000")
	if len(rest.Messages) != 250 {
		t.Fatalf("the second page has %d messages, want the 250 left", len(rest.Messages))
	}
	seen := map[string]bool{}
	var prev time.Time
	for _, m := range append(all.Messages, rest.Messages...) {
		if seen[m.txn()] {
			t.Fatalf("%s listed twice", m.txn())
		}
		seen[m.txn()] = true
		at, _ := time.Parse(time.RFC3339Nano, m.CreatedAt)
		if !prev.IsZero() && at.After(prev) {
			t.Fatalf("%s (%s) listed after a newer message (%s)", m.txn(), m.CreatedAt, prev.Format(time.RFC3339Nano))
		}
		prev = at
	}
	for r := range 25 {
		for k := range 50 {
			want = append(want, fmt.Sprintf("t%02d-%02d", r, k))
		}
	}
	for _, txn := range want {
		if !seen[txn] {
			t.Fatalf("%s not listed", txn)
		}
	}
	// Small pages walk the same listing.
	var walked []string
	for off := 0; off < 1250; off += 300 {
		walked = append(walked, msgTxns(b.msgBrowse(t, fmt.Sprintf("?queue=bounded&limit=300&offset=%d", off)))...)
	}
	if big := append(msgTxns(all), msgTxns(rest)...); !slices.Equal(walked, big) {
		t.Fatal("pages of 300 do not walk the listing of pages of 1000")
	}
}

// msgDetailAnswer is GET /api/v1/messages/{partitionId}/{transactionId}.
type msgDetailAnswer struct {
	ID             string          `json:"id"`
	TransactionID  string          `json:"transactionId"`
	Data           json.RawMessage `json:"data"`
	Payload        json.RawMessage `json:"payload"`
	TraceID        *string         `json:"traceId"`
	ProducerSub    *string         `json:"producerSub"`
	CreatedAt      string          `json:"createdAt"`
	PartitionID    string          `json:"partitionId"`
	Partition      string          `json:"partition"`
	IsEncrypted    bool            `json:"isEncrypted"`
	Queue          string          `json:"queue"`
	QueuePath      string          `json:"queuePath"`
	Namespace      string          `json:"namespace"`
	Task           string          `json:"task"`
	Status         string          `json:"status"`
	ErrorMessage   *string         `json:"errorMessage"`
	RetryCount     int             `json:"retryCount"`
	LeaseExpiresAt *string         `json:"leaseExpiresAt"`
	QueueConfig    map[string]any  `json:"queueConfig"`
	Mode           msgMode         `json:"mode"`
	ConsumerGroups []struct {
		Name           string  `json:"name"`
		Group          string  `json:"group"`
		Consumed       bool    `json:"consumed"` // what Queen's dashboard reads
		Status         string  `json:"status"`
		LeaseExpiresAt *string `json:"leaseExpiresAt"`
		ErrorMessage   *string `json:"errorMessage"`
		RetryCount     int     `json:"retryCount"`
	} `json:"consumerGroups"`
}

// msgPath is the route of one message, its transaction id escaped.
func msgPath(pid, txn string) string {
	return "/api/v1/messages/" + pid + "/" + url.PathEscape(txn)
}

func (b *broker) msgDetail(t testing.TB, pid, txn string) msgDetailAnswer {
	t.Helper()
	code, body := b.get(t, msgPath(pid, txn))
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", msgPath(pid, txn), code, body)
	}
	if got := jsonKeys(t, body); !slices.Equal(got, msgDetailKeys) {
		t.Fatalf("detail keys %v, want %v", got, msgDetailKeys)
	}
	var raw struct {
		Mode   json.RawMessage   `json:"mode"`
		Groups []json.RawMessage `json:"consumerGroups"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	if got := jsonKeys(t, raw.Mode); !slices.Equal(got, msgModeKeys) {
		t.Fatalf("mode keys %v, want %v", got, msgModeKeys)
	}
	for _, g := range raw.Groups {
		if got := jsonKeys(t, g); !slices.Equal(got, msgGroupKeys) {
			t.Fatalf("consumer group keys %v, want %v", got, msgGroupKeys)
		}
	}
	var d msgDetailAnswer
	if err := decodeStrict(body, &d); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return d
}

func TestMessageDetail(t *testing.T) {
	t.Parallel()
	f := newMsgBrowseFixture(t)
	b := f.b
	// A transaction id with a slash, a space and a percent sign travels escaped.
	odd := "a/b c%d"
	b.push(t, map[string]any{"queue": "mb.orders", "partition": "p1", "transactionId": odd, "payload": true})

	type group struct{ name, status string }
	for _, tt := range []struct {
		name, pid, txn   string
		status, data     string
		leased           bool
		errorMessage     *string
		groups           []group
		mode             msgMode
		namespace, queue string
	}{
		{name: "processing for one group, completed for the other", pid: f.p1, txn: "m2", status: "processing",
			data: `{"m":2}`, leased: true, groups: []group{{"g1", "processing"}, {"g2", "completed"}},
			mode: msgMode{false, 2, "bus"}, queue: "mb.orders"},
		{name: "pending for one group", pid: f.p1, txn: "m4", status: "pending", data: `{"m":4}`,
			groups: []group{{"g1", "pending"}, {"g2", "completed"}}, mode: msgMode{false, 2, "bus"}, queue: "mb.orders"},
		{name: "completed", pid: f.p1, txn: "m0", status: "completed", data: `{"m":0}`,
			groups: []group{{"g1", "completed"}, {"g2", "completed"}}, mode: msgMode{false, 2, "bus"}, queue: "mb.orders"},
		{name: "dead letter", pid: f.p2, txn: "n0", status: "dead_letter", data: `"n-zero"`, errorMessage: msgPtr("boom"),
			groups: []group{{"__QUEUE_MODE__", "dead_letter"}}, mode: msgMode{true, 0, "queue"}, queue: "mb.orders"},
		{name: "escaped transaction id", pid: f.p1, txn: odd, status: "pending", data: "true",
			groups: []group{{"g1", "pending"}, {"g2", "pending"}}, mode: msgMode{false, 2, "bus"}, queue: "mb.orders"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := b.msgDetail(t, tt.pid, tt.txn)
			if d.TransactionID != tt.txn || d.PartitionID != tt.pid || d.Queue != tt.queue ||
				d.QueuePath != tt.queue+"/"+d.Partition || d.Namespace != "mb" || d.Task != "orders" {
				t.Errorf("identity %+v", d)
			}
			if p, ok := f.pushed[tt.txn]; ok && d.ID != p.MessageID {
				t.Errorf("id %s, want the pushed %s", d.ID, p.MessageID)
			}
			if string(d.Data) != tt.data || string(d.Payload) != tt.data || d.IsEncrypted || d.TraceID != nil ||
				d.ProducerSub != nil || !microTime.MatchString(d.CreatedAt) {
				t.Errorf("data %s payload %s encrypted %v trace %v producer %v createdAt %s, want %s", d.Data, d.Payload,
					d.IsEncrypted, d.TraceID, d.ProducerSub, d.CreatedAt, tt.data)
			}
			if d.Status != tt.status || (d.LeaseExpiresAt != nil) != tt.leased || d.Mode != tt.mode {
				t.Errorf("status %s lease %v mode %+v, want %s leased %v mode %+v", d.Status, d.LeaseExpiresAt, d.Mode,
					tt.status, tt.leased, tt.mode)
			}
			if (d.ErrorMessage == nil) != (tt.errorMessage == nil) || (d.ErrorMessage != nil && *d.ErrorMessage != *tt.errorMessage) ||
				d.RetryCount != 0 {
				t.Errorf("errorMessage %v retryCount %d, want %v and 0", d.ErrorMessage, d.RetryCount, tt.errorMessage)
			}
			var got []group
			for _, g := range d.ConsumerGroups {
				got = append(got, group{g.Name, g.Status})
				if (g.LeaseExpiresAt != nil) != (g.Status == "processing") || (g.ErrorMessage != nil) != (g.Status == "dead_letter") {
					t.Errorf("group %+v: a lease expiry only when processing, an error only when dead-lettered", g)
				}
				// Queen's consumed: the group's cursor passed the message, acknowledged or
				// dead-lettered.
				if g.Group != g.Name || g.Consumed != (g.Status == "completed" || g.Status == "dead_letter") {
					t.Errorf("group %+v: group must repeat the name, consumed follow the status", g)
				}
			}
			if !slices.Equal(got, tt.groups) {
				t.Errorf("consumer groups %v, want %v", got, tt.groups)
			}
			if d.QueueConfig["leaseTime"] != 300.0 || d.QueueConfig["retryLimit"] != 3.0 || len(d.QueueConfig) != 19 {
				t.Errorf("queueConfig %v, want the 19 options with their defaults", d.QueueConfig)
			}
		})
	}

	t.Run("not found and bad addresses", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct {
			name, path string
			status     int
			want       string
		}{
			{"unknown transaction id", msgPath(f.p1, "nope"), 404, "Message not found"},
			{"transaction id of another partition", msgPath(f.p1, "n1"), 404, "Message not found"},
			{"unknown partition", msgPath("00000000-0000-4000-8000-000000000000", "m0"), 404, "Message not found"},
			{"partition id not a UUID", msgPath("p1", "m0"), 400, "partitionId must be a UUID"},
		} {
			resp, body := b.do(t, http.MethodGet, tt.path, nil)
			wantErrorBody(t, resp, body, tt.status, "", tt.want)
			if tt.status == 404 && string(body) != `{"error":"Message not found"}` {
				t.Errorf("%s: body %s", tt.name, body)
			}
		}
	})
}

func msgPtr[T any](v T) *T { return &v }

// msgReplayAnswer is the answer of a retry or a replay.
type msgReplayAnswer struct {
	Success               bool    `json:"success"`
	Result                string  `json:"result"`
	Queue                 string  `json:"queue"`
	Partition             string  `json:"partition"`
	ConsumerGroup         string  `json:"consumerGroup"`
	DLQID                 string  `json:"dlqId"`
	OriginalTransactionID *string `json:"originalTransactionId"`
	ReplayedAs            *struct {
		Index         int    `json:"index"`
		MessageID     string `json:"message_id"`
		TransactionID string `json:"transaction_id"`
		QueueName     string `json:"queueName"`
		Status        string `json:"status"`
		Offset        *int64 `json:"offset"`
	} `json:"replayedAs"`
	DLQRowRemoved *bool  `json:"dlqRowRemoved"`
	Error         string `json:"error"`
	Message       string `json:"message"`
}

// msgReplay posts to path (body "" = none) and decodes the answer; a 200 is checked key
// by key.
func (b *broker) msgReplay(t testing.TB, path, body string) (int, msgReplayAnswer) {
	t.Helper()
	code, raw := b.post(t, path, body)
	var out msgReplayAnswer
	if code == http.StatusOK {
		if got := jsonKeys(t, raw); !slices.Equal(got, msgReplayKeys) {
			t.Fatalf("replay keys %v, want %v: %s", got, msgReplayKeys, raw)
		}
		var inner struct {
			ReplayedAs json.RawMessage `json:"replayedAs"`
		}
		if err := json.Unmarshal(raw, &inner); err != nil {
			t.Fatal(err)
		}
		if got := jsonKeys(t, inner.ReplayedAs); !slices.Equal(got, []string{"index", "message_id", "transaction_id", "queueName", "status", "offset"}) {
			t.Fatalf("replayedAs keys %v", got)
		}
	}
	if err := decodeStrict(raw, &out); err != nil {
		t.Fatalf("%s: %d %s: %v", path, code, raw, err)
	}
	return code, out
}

// msgDeadLetterOf dead-letters txn of queue/partition for group (pushing it first with
// payload) and returns its dead-letter row as listed.
func (b *broker) msgDeadLetterOf(t testing.TB, queue, partition, group, txn string, payload any) dlqMessage {
	t.Helper()
	b.push(t, map[string]any{"queue": queue, "partition": partition, "transactionId": txn, "payload": payload})
	path := "/api/v1/pop/queue/" + queue + "/partition/" + partition + "?batch=1&subscriptionMode=all&consumerGroup=" + group
	b.deadLetter(t, path, group, txn, "why", 0)
	_, ms := b.deadLetters(t, "?queue="+queue+"&consumerGroup="+group)
	for _, m := range ms {
		if m.TransactionID == txn {
			return m
		}
	}
	t.Fatalf("%s is not listed as a dead letter", txn)
	return dlqMessage{}
}

// msgDrain pops everything group g has left in queue/partition, acking it, and returns
// the transaction ids and payloads delivered, in order.
func (b *broker) msgDrain(t testing.TB, queue, partition, group string) (txns, payloads []string) {
	t.Helper()
	path := "/api/v1/pop/queue/" + queue + "/partition/" + partition + "?batch=100&subscriptionMode=all&consumerGroup=" + group
	for {
		p := b.pop(t, path)
		if p == nil {
			return txns, payloads
		}
		for _, m := range p.Messages {
			txns, payloads = append(txns, m.TransactionID), append(payloads, string(m.Data))
		}
		b.ackAll(t, p, "")
	}
}

func (b *broker) msgListed(t testing.TB, queue, id string) bool {
	t.Helper()
	_, ms := b.deadLetters(t, "?queue="+queue)
	return slices.ContainsFunc(ms, func(m dlqMessage) bool { return m.ID == id })
}

func TestDeadLetterReplay(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)

	t.Run("replay twice: moved, then gone", func(t *testing.T) {
		t.Parallel()
		d := b.msgDeadLetterOf(t, "rp-twice", "p", "g", "x", map[string]any{"v": 1})
		code, r := b.msgReplay(t, "/api/v1/dlq/"+d.ID+"/replay", "")
		if code != 200 || !r.Success || r.Result != "moved" || r.Queue != "rp-twice" || r.Partition != "p" ||
			r.ConsumerGroup != "g" || r.DLQID != d.ID || r.OriginalTransactionID == nil || *r.OriginalTransactionID != "x" ||
			r.DLQRowRemoved == nil || !*r.DLQRowRemoved {
			t.Fatalf("replay: %d %+v", code, r)
		}
		ra := r.ReplayedAs
		if ra.Index != 0 || !uuidV7.MatchString(ra.MessageID) || ra.TransactionID != "dlq:"+d.ID || ra.QueueName != "rp-twice" ||
			ra.Status != "queued" || ra.Offset == nil || *ra.Offset != 1 {
			t.Fatalf("replayedAs %+v, want queued at offset 1 as dlq:%s", ra, d.ID)
		}
		if b.msgListed(t, "rp-twice", d.ID) {
			t.Fatal("the dead letter is still listed after the replay")
		}
		code, r = b.msgReplay(t, "/api/v1/dlq/"+d.ID+"/replay", "{}")
		if code != 404 || r.Error != "Dead letter not found" {
			t.Fatalf("second replay: %d %+v, want 404", code, r)
		}
		txns, payloads := b.msgDrain(t, "rp-twice", "p", "g")
		if !slices.Equal(txns, []string{"dlq:" + d.ID}) || payloads[0] != `{"v":1}` {
			t.Fatalf("group g received %v %v, want the replayed message once", txns, payloads)
		}
	})

	t.Run("a replay whose push already committed is a duplicate", func(t *testing.T) {
		t.Parallel()
		d := b.msgDeadLetterOf(t, "rp-dup", "p", "g", "x", map[string]any{"v": 2})
		// What an earlier replay that pushed but never removed the row leaves behind.
		earlier := b.push(t, map[string]any{"queue": "rp-dup", "partition": "p", "transactionId": "dlq:" + d.ID,
			"payload": map[string]any{"v": 2}})[0]
		code, r := b.msgReplay(t, "/api/v1/dlq/"+d.ID+"/replay", "")
		if code != 200 || r.Result != "duplicate" || r.ReplayedAs.Status != "duplicate" || r.ReplayedAs.MessageID != earlier.MessageID ||
			*r.ReplayedAs.Offset != *earlier.Offset || r.DLQRowRemoved == nil || !*r.DLQRowRemoved {
			t.Fatalf("replay: %d %+v (replayedAs %+v), want a duplicate of %+v that removes the row", code, r, r.ReplayedAs, earlier)
		}
		if b.msgListed(t, "rp-dup", d.ID) {
			t.Fatal("the dead letter is still listed")
		}
		if txns, _ := b.msgDrain(t, "rp-dup", "p", "g"); !slices.Equal(txns, []string{"dlq:" + d.ID}) {
			t.Fatalf("group g received %v, want the message once", txns)
		}
	})

	t.Run("a decoy under the derived id does not remove the row", func(t *testing.T) {
		t.Parallel()
		d := b.msgDeadLetterOf(t, "rp-decoy", "p", "g", "x", map[string]any{"v": 3})
		b.push(t, map[string]any{"queue": "rp-decoy", "partition": "p", "transactionId": "dlq:" + d.ID, "payload": "decoy"})
		code, r := b.msgReplay(t, "/api/v1/dlq/"+d.ID+"/replay", "")
		if code != 200 || r.Result != "duplicate" || r.DLQRowRemoved == nil || *r.DLQRowRemoved {
			t.Fatalf("replay: %d %+v, want a duplicate that keeps the row", code, r)
		}
		if !b.msgListed(t, "rp-decoy", d.ID) {
			t.Fatal("the dead letter was removed")
		}
	})

	t.Run("concurrent replays move once", func(t *testing.T) {
		t.Parallel()
		d := b.msgDeadLetterOf(t, "rp-race", "p", "g", "x", 7)
		var wg sync.WaitGroup
		codes := make([]int, 4)
		answers := make([]msgReplayAnswer, 4)
		for i := range codes {
			wg.Go(func() {
				resp, raw, err := b.request(t.Context(), http.MethodPost, "/api/v1/dlq/"+d.ID+"/replay", nil)
				if err != nil {
					t.Error(err)
					return
				}
				codes[i] = resp.StatusCode
				_ = json.Unmarshal(raw, &answers[i])
			})
		}
		wg.Wait()
		moved := 0
		for i, c := range codes {
			switch {
			case c == 200 && answers[i].Result == "moved":
				moved++
			case c == 404, c == 200 && answers[i].Result == "duplicate":
			default:
				t.Errorf("replay %d: %d %+v", i, c, answers[i])
			}
		}
		if moved != 1 {
			t.Fatalf("%d replays moved the message, want 1: %v", moved, codes)
		}
		if txns, _ := b.msgDrain(t, "rp-race", "p", "g"); !slices.Equal(txns, []string{"dlq:" + d.ID}) {
			t.Fatalf("group g received %v, want the message once", txns)
		}
	})

	t.Run("replay elsewhere", func(t *testing.T) {
		t.Parallel()
		d := b.msgDeadLetterOf(t, "rp-src", "p", "g", "x", "moved away")
		code, r := b.msgReplay(t, "/api/v1/dlq/"+d.ID+"/replay", `{"queue":"rp-dst","partition":"q/1"}`)
		if code != 200 || r.Result != "moved" || r.Queue != "rp-dst" || r.Partition != "q/1" || r.ReplayedAs.QueueName != "rp-dst" ||
			*r.ReplayedAs.Offset != 0 || !*r.DLQRowRemoved {
			t.Fatalf("replay: %d %+v", code, r)
		}
		read := b.readBack(t, "rp-dst")
		if len(read["q/1"]) != 1 || string(read["q/1"][0].Data) != `"moved away"` || read["q/1"][0].TransactionID != "dlq:"+d.ID {
			t.Fatalf("rp-dst holds %v", read)
		}
		if txns, _ := b.msgDrain(t, "rp-src", "p", "g"); len(txns) != 0 {
			t.Fatalf("the source partition received %v", txns)
		}
	})

	t.Run("retry by address", func(t *testing.T) {
		t.Parallel()
		d := b.msgDeadLetterOf(t, "rp-retry", "p", "g", "r/1", []string{"a"})
		path := msgPath(d.PartitionID, "r/1") + "/retry"
		code, r := b.msgReplay(t, path, `ignored`)
		if code != 200 || r.Result != "moved" || r.DLQID != d.ID || r.ReplayedAs.TransactionID != "dlq:"+d.ID || !*r.DLQRowRemoved {
			t.Fatalf("retry: %d %+v", code, r)
		}
		if code, r = b.msgReplay(t, path, ""); code != 404 || r.Error != "Dead letter not found" {
			t.Fatalf("second retry: %d %+v, want 404", code, r)
		}
		if txns, _ := b.msgDrain(t, "rp-retry", "p", "g"); !slices.Equal(txns, []string{"dlq:" + d.ID}) {
			t.Fatalf("group g received %v", txns)
		}
	})

	t.Run("bad requests", func(t *testing.T) {
		t.Parallel()
		d := b.msgDeadLetterOf(t, "rp-bad", "p", "g", "x", 1)
		for _, tt := range []struct {
			name, path, body string
			status           int
			want             string
		}{
			{"id not a UUID", "/api/v1/dlq/abc/replay", "", 400, "id must be a UUID"},
			{"unknown id", "/api/v1/dlq/00000000-0000-4000-8000-000000000000/replay", "", 404, "Dead letter not found"},
			{"body not an object", "/api/v1/dlq/" + d.ID + "/replay", `["q"]`, 400, "bad body"},
			{"body null", "/api/v1/dlq/" + d.ID + "/replay", `null`, 400, "bad body"},
			{"empty queue override", "/api/v1/dlq/" + d.ID + "/replay", `{"queue":""}`, 400, "queue must not be empty"},
			{"queue override not a string", "/api/v1/dlq/" + d.ID + "/replay", `{"queue":1}`, 400, "bad body"},
			{"bad partition override", "/api/v1/dlq/" + d.ID + "/replay", `{"partition":"a\u0001"}`, 400, "partition contains a control character"},
			{"retry of a message without dead letter", msgPath(d.PartitionID, "nope") + "/retry", "", 404, "Dead letter not found"},
			{"retry with a bad partition id", msgPath("p", "x") + "/retry", "", 400, "partitionId must be a UUID"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				resp, body := b.doBad(t, http.MethodPost, tt.path, strings.NewReader(tt.body))
				wantErrorBody(t, resp, body, tt.status, "", tt.want)
			})
		}
	})
}

// TestDeadLetterReplayDuringPushMaintenance: both replay routes answer 503 while push
// maintenance is on, and nothing changes: the row stays, nothing is pushed or spooled.
func TestDeadLetterReplayDuringPushMaintenance(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	d := b.msgDeadLetterOf(t, "rp-maint", "p", "g", "x", "held")
	if code, body := b.post(t, "/api/v1/system/maintenance", `{"enabled":true}`); code != 200 {
		t.Fatalf("maintenance on: %d %s", code, body)
	}
	for _, path := range []string{"/api/v1/dlq/" + d.ID + "/replay", msgPath(d.PartitionID, "x") + "/retry"} {
		code, raw := b.post(t, path, "")
		want := `{"success":false,"result":"maintenance","dlqRowRemoved":false,"error":"push maintenance is on",` +
			`"message":"Nothing was replayed and the dead letter is untouched: replay it again later"}`
		if code != http.StatusServiceUnavailable || string(raw) != want {
			t.Fatalf("%s during maintenance: %d %s, want 503 %s", path, code, raw, want)
		}
	}
	if pending, _, _ := b.bufferStatus(t); pending != 0 {
		t.Fatalf("%d records spooled", pending)
	}
	if !b.msgListed(t, "rp-maint", d.ID) {
		t.Fatal("the dead letter is gone")
	}
	if code, body := b.post(t, "/api/v1/system/maintenance", `{"enabled":false}`); code != 200 {
		t.Fatalf("maintenance off: %d %s", code, body)
	}
	if txns, _ := b.msgDrain(t, "rp-maint", "p", "g"); len(txns) != 0 {
		t.Fatalf("group g received %v during maintenance", txns)
	}
	code, r := b.msgReplay(t, "/api/v1/dlq/"+d.ID+"/replay", "")
	if code != 200 || r.Result != "moved" {
		t.Fatalf("replay after maintenance: %d %+v", code, r)
	}
	if txns, _ := b.msgDrain(t, "rp-maint", "p", "g"); !slices.Equal(txns, []string{"dlq:" + d.ID}) {
		t.Fatalf("group g received %v", txns)
	}
}

func TestDeadLetterDeletion(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	// One message dead-lettered by two groups, one by one group, one live message.
	both := b.msgDeadLetterOf(t, "del", "p", "g1", "both", 1)
	b.deadLetter(t, "/api/v1/pop/queue/del/partition/p?batch=1&subscriptionMode=all&consumerGroup=g2", "g2", "both", "why", 0)
	one := b.msgDeadLetterOf(t, "del", "p", "g1", "one", 2)
	b.push(t, map[string]any{"queue": "del", "partition": "p", "transactionId": "live", "payload": 3})

	t.Run("one message", func(t *testing.T) {
		resp, body := b.do(t, http.MethodDelete, msgPath(both.PartitionID, "both"), nil)
		want := `{"success":true,"partitionId":"` + both.PartitionID + `","transactionId":"both","message":"Message deleted successfully"}`
		if resp.StatusCode != 200 || string(body) != want {
			t.Fatalf("DELETE: %d %s, want 200 %s", resp.StatusCode, body, want)
		}
		_, ms := b.deadLetters(t, "?queue=del")
		if len(ms) != 1 || ms[0].ID != one.ID {
			t.Fatalf("dead letters left %+v, want %s only (both groups' rows of the message go)", ms, one.ID)
		}
		for _, txn := range []string{"both", "live", "never"} {
			resp, body = b.do(t, http.MethodDelete, msgPath(both.PartitionID, txn), nil)
			want := `{"success":false,"partitionId":"` + both.PartitionID + `","transactionId":"` + txn + `","error":"Message not found",` +
				`"message":"No dead-letter row for this address: live messages are immutable and cannot be deleted"}`
			if resp.StatusCode != 404 || string(body) != want {
				t.Fatalf("DELETE %s: %d %s, want 404 %s", txn, resp.StatusCode, body, want)
			}
		}
		// The live message is still there.
		if d := b.msgDetail(t, both.PartitionID, "live"); d.Status != "pending" {
			t.Fatalf("live message: %+v", d)
		}
		resp, body = b.do(t, http.MethodDelete, msgPath("nope", "x"), nil)
		wantErrorBody(t, resp, body, 400, "", "partitionId must be a UUID")
	})

	t.Run("purge", func(t *testing.T) {
		for _, g := range []string{"g1", "g2"} {
			b.msgDeadLetterOf(t, "purge", "p", g, "a-"+g, 1)
			b.msgDeadLetterOf(t, "purge", "p", g, "b-"+g, 2)
		}
		b.msgDeadLetterOf(t, "purge-other", "p", "g1", "c", 3)
		resp, body := b.doBad(t, http.MethodDelete, "/api/v1/dlq", nil)
		wantErrorBody(t, resp, body, 400, "", "queue is required")
		resp, body = b.doBad(t, http.MethodDelete, "/api/v1/dlq?consumerGroup=g1", nil)
		wantErrorBody(t, resp, body, 400, "", "queue is required")

		for _, tt := range []struct{ query, want string }{
			{"?queue=purge&consumerGroup=g1", `{"success":true,"deleted":2,"queue":"purge","consumerGroup":"g1"}`},
			{"?queue=purge&consumerGroup=g1", `{"success":true,"deleted":0,"queue":"purge","consumerGroup":"g1"}`},
			{"?queue=purge", `{"success":true,"deleted":2,"queue":"purge","consumerGroup":null}`},
			{"?queue=nope", `{"success":true,"deleted":0,"queue":"nope","consumerGroup":null}`},
		} {
			resp, body := b.do(t, http.MethodDelete, "/api/v1/dlq"+tt.query, nil)
			if resp.StatusCode != 200 || string(body) != tt.want {
				t.Fatalf("DELETE /api/v1/dlq%s: %d %s, want %s", tt.query, resp.StatusCode, body, tt.want)
			}
		}
		if _, ms := b.deadLetters(t, "?queue=purge-other"); len(ms) != 1 {
			t.Fatalf("another queue's dead letters were purged: %+v", ms)
		}
	})
}

// TestMessagesEncrypted: payloads of an encrypted queue are shown decrypted, and a
// replay pushes the plaintext, encrypted again by the push path.
func TestMessagesEncrypted(t *testing.T) {
	t.Parallel()
	b := startBroker(t, map[string]string{"QUEEN_ENCRYPTION_KEY": strings.Repeat("0123456789abcdef", 4)})
	b.setOptions(t, "enc", map[string]any{"encryptionEnabled": true})
	d := b.msgDeadLetterOf(t, "enc", "p", "g", "secret", map[string]any{"card": "4111"})
	l := b.msgBrowse(t, "?queue=enc")
	if len(l.Messages) != 1 || string(l.Messages[0].Data) != `{"card":"4111"}` || !l.Messages[0].IsEncrypted ||
		l.Messages[0].Status != "dead_letter" {
		t.Fatalf("browse: %+v", l.Messages)
	}
	if det := b.msgDetail(t, d.PartitionID, "secret"); string(det.Data) != `{"card":"4111"}` || !det.IsEncrypted {
		t.Fatalf("detail: %+v", det)
	}
	if code, r := b.msgReplay(t, "/api/v1/dlq/"+d.ID+"/replay", ""); code != 200 || r.Result != "moved" {
		t.Fatalf("replay: %d %+v", code, r)
	}
	l = b.msgBrowse(t, "?queue=enc&limit=1")
	if m := l.Messages[0]; m.txn() != "dlq:"+d.ID || string(m.Data) != `{"card":"4111"}` || !m.IsEncrypted {
		t.Fatalf("the replayed message: %+v (data %s)", m, m.Data)
	}
}
