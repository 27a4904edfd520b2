package queen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Helpers of the consume-path integration tests (consume*_test.go).

// pushN pushes n messages to queue/partition in one request (so one segment), with
// transaction ids prefix-0 .. prefix-(n-1) and payloads {"i": k}.
func (a *testApp) pushN(t testing.TB, queue, partition, prefix string, n int) []pushResult {
	t.Helper()
	items := make([]map[string]any, n)
	for k := range n {
		items[k] = map[string]any{"queue": queue, "partition": partition,
			"transactionId": fmt.Sprintf("%s-%d", prefix, k), "payload": map[string]any{"i": k}}
	}
	return a.push(t, items...)
}

// popMust pops path and fails unless it answered 200.
func (a *testApp) popMust(t testing.TB, path string) *popResp {
	t.Helper()
	p := a.pop(t, path)
	if p == nil {
		t.Fatalf("pop %s: 204, want messages", path)
	}
	return p
}

// popEmpty pops path and fails unless it answered 204.
func (a *testApp) popEmpty(t testing.TB, path string) {
	t.Helper()
	if p := a.pop(t, path); p != nil {
		t.Fatalf("pop %s: got %s, want 204", path, txnsOf(p))
	}
}

// txnsOf lists a pop's transaction ids in delivery order.
func txnsOf(p *popResp) []string {
	if p == nil {
		return nil
	}
	out := make([]string, len(p.Messages))
	for i, m := range p.Messages {
		out[i] = m.TransactionID
	}
	return out
}

// wantTxns fails unless the pop delivered exactly want, in order.
func wantTxns(t testing.TB, p *popResp, want ...string) {
	t.Helper()
	if got := txnsOf(p); !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
}

// txnRange is prefix-from .. prefix-to.
func txnRange(prefix string, from, to int) []string {
	var out []string
	for k := from; k <= to; k++ {
		out = append(out, fmt.Sprintf("%s-%d", prefix, k))
	}
	return out
}

// ackItem is the ack of message m with status ("" = no status key) under its lease.
func ackItemOf(m popMsg, status string) map[string]any {
	it := map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": m.LeaseID}
	if status != "" {
		it["status"] = status
	}
	return it
}

// eventually polls cond every 50 ms until it holds or timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// provision creates queue's row as a first pop would, so tests can configure it by SQL.
func (d *pushLogDB) provision(t testing.TB, queue string) {
	t.Helper()
	d.exec(t, `SELECT queen.log_queue_id_v1('00000000-0000-0000-0000-000000000001', $1)`, queue)
}

// configure provisions queue and applies set (an SQL SET list) to its row, as
// /api/v1/configure would.
func (d *pushLogDB) configure(t testing.TB, queue, set string) {
	t.Helper()
	d.provision(t, queue)
	if n := d.exec(t, `UPDATE queen.queues SET `+set+`, configured = true WHERE name = $1`, queue); n != 1 {
		t.Fatalf("configure %s: %d rows", queue, n)
	}
}

// consumerRow is the (partition, group) consumer row.
type consumerRow struct {
	Committed, BatchEnd int64
	LeaseID             *string
	Expires             *time.Time
	RetryCount          int32
}

// consumerRowOf reads the consumer row of queue/partition for group; ok false when none.
func (d *pushLogDB) consumerRowOf(t testing.TB, queue, partition, group string) (consumerRow, bool) {
	t.Helper()
	var c consumerRow
	err := d.pool.QueryRow(context.Background(), `
		SELECT lc.committed, lc.batch_end, lc.lease_id::text, lc.lease_expires_at, lc.retry_count
		  FROM queen.log_consumers lc
		  JOIN queen.log_partitions p ON p.id = lc.partition_id
		  JOIN queen.queues q ON q.id = p.queue_id
		 WHERE q.name = $1 AND p.name = $2 AND lc.consumer_group = $3`, queue, partition, group).
		Scan(&c.Committed, &c.BatchEnd, &c.LeaseID, &c.Expires, &c.RetryCount)
	if err != nil {
		if strings.Contains(err.Error(), "no rows") {
			return c, false
		}
		t.Fatalf("consumer row of %s/%s/%s: %v", queue, partition, group, err)
	}
	return c, true
}

// committed is the group's cursor on queue/partition (fails when there is no row).
func (d *pushLogDB) committed(t testing.TB, queue, partition, group string) int64 {
	t.Helper()
	c, ok := d.consumerRowOf(t, queue, partition, group)
	if !ok {
		t.Fatalf("no consumer row for %s/%s/%s", queue, partition, group)
	}
	return c.Committed
}

// jsonKeys returns the keys of a JSON object in document order.
func jsonKeys(t testing.TB, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s is not a JSON object (%v)", raw, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// microTime is the wire form of message and lease timestamps.
var microTime = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$`)

var (
	popKeys     = []string{"success", "queue", "partition", "partitionId", "leaseId", "consumerGroup", "messages", "partitionsClaimed"}
	popMsgKeys  = []string{"id", "transactionId", "traceId", "data", "producerSub", "createdAt", "partitionId", "partition", "leaseId", "consumerGroup", "deliveryAttempt"}
	ackRespKeys = []string{"index", "transactionId", "success", "error", "leaseReleased", "dlq", "noop"}
)

func TestPopResponseShape(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	db := openPushLogDB(t, a)
	pushed := a.push(t,
		map[string]any{"queue": "shape", "partition": "eu", "transactionId": "order-1", "payload": map[string]any{"total": 19.99}},
		map[string]any{"queue": "shape", "partition": "eu", "transactionId": "order-2", "payload": []any{1, "two"}})
	var pid string
	var segAt time.Time
	if err := db.pool.QueryRow(context.Background(), `SELECT p.id::text, s.created_at FROM queen.log_partitions p
		JOIN queen.queues q ON q.id = p.queue_id JOIN queen.log_segments s ON s.partition_id = p.id
		WHERE q.name = 'shape' AND p.name = 'eu'`).Scan(&pid, &segAt); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, path, group string
	}{
		{"queue mode, wildcard", "/api/v1/pop/queue/shape?batch=10", "__QUEUE_MODE__"},
		{"named group, pinned", "/api/v1/pop/queue/shape/partition/eu?batch=10&consumerGroup=fulfilment&subscriptionMode=all", "fulfilment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := sendRaw(t, a, http.MethodGet, tt.path, nil, 0)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, body %s", resp.StatusCode, body)
			}
			wantJSONContentType(t, resp)
			if got := jsonKeys(t, body); !slices.Equal(got, popKeys) {
				t.Errorf("top-level keys %v, want %v", got, popKeys)
			}
			var generic struct{ Messages []json.RawMessage }
			if err := json.Unmarshal(body, &generic); err != nil {
				t.Fatal(err)
			}
			for i, m := range generic.Messages {
				if got := jsonKeys(t, m); !slices.Equal(got, popMsgKeys) {
					t.Errorf("message %d keys %v, want %v", i, got, popMsgKeys)
				}
			}
			var p popResp
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&p); err != nil {
				t.Fatal(err)
			}
			if _, err := uuid.Parse(p.LeaseID); err != nil {
				t.Errorf("leaseId %q is not a UUID", p.LeaseID)
			}
			want := popResp{Success: true, Queue: "shape", Partition: "eu", PartitionID: pid, LeaseID: p.LeaseID,
				ConsumerGroup: tt.group, PartitionsClaimed: 1}
			data := []string{`{"total":19.99}`, `[1,"two"]`}
			for i, txn := range []string{"order-1", "order-2"} {
				want.Messages = append(want.Messages, popMsg{ID: pushed[i].MessageID, TransactionID: txn,
					Data: json.RawMessage(data[i]), CreatedAt: segAt.UTC().Format("2006-01-02T15:04:05.000000Z"),
					PartitionID: pid, Partition: "eu", LeaseID: p.LeaseID, ConsumerGroup: tt.group, DeliveryAttempt: 1})
			}
			if !reflect.DeepEqual(p, want) {
				t.Errorf("pop answered\n%+v\nwant\n%+v", p, want)
			}
			for _, m := range p.Messages {
				if !microTime.MatchString(m.CreatedAt) {
					t.Errorf("createdAt %q is not microseconds with Z", m.CreatedAt)
				}
			}
			if !bytes.Contains(body, []byte(`"traceId":null`)) || !bytes.Contains(body, []byte(`"producerSub":null`)) {
				t.Errorf("traceId and producerSub must be null: %s", body)
			}
		})
	}

	t.Run("204 without a body when nothing is deliverable", func(t *testing.T) {
		for _, path := range []string{"/api/v1/pop/queue/shape", "/api/v1/pop/queue/empty-queue",
			"/api/v1/pop/queue/shape/partition/nope", "/api/v1/pop?namespace=none"} {
			resp, body := sendRaw(t, a, http.MethodGet, path, nil, 0)
			if resp.StatusCode != http.StatusNoContent || len(body) != 0 {
				t.Errorf("%s: status %d body %q, want 204 and no body", path, resp.StatusCode, body)
			}
		}
	})
}

func TestPopWildcardAndPinned(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	for _, q := range []string{"wild", "global", "pinned"} {
		for _, p := range []string{"p1", "p2", "p3"} {
			a.pushN(t, q, p, q+"-"+p, 2)
		}
	}

	t.Run("claims up to partitions partitions under one lease", func(t *testing.T) {
		first := a.popMust(t, "/api/v1/pop/queue/wild?partitions=2&batch=3")
		if first.PartitionsClaimed != 2 || len(first.Messages) != 3 {
			t.Fatalf("claimed %d partitions, %d messages; want 2 and 3: %v", first.PartitionsClaimed, len(first.Messages), txnsOf(first))
		}
		parts := map[string]bool{}
		for _, m := range first.Messages {
			parts[m.Partition] = true
			if m.LeaseID != first.LeaseID {
				t.Errorf("message %s has lease %s, the pop %s", m.TransactionID, m.LeaseID, first.LeaseID)
			}
		}
		if len(parts) != 2 || first.Partition != first.Messages[0].Partition || first.PartitionID != first.Messages[0].PartitionID {
			t.Fatalf("partitions %v, top-level %s/%s, first message %s", parts, first.Partition, first.PartitionID, first.Messages[0].Partition)
		}
		// The two claimed partitions are leased: only the third is left.
		second := a.popMust(t, "/api/v1/pop/queue/wild?partitions=5&batch=100")
		if second.PartitionsClaimed != 1 || len(second.Messages) != 2 || parts[second.Partition] {
			t.Fatalf("second pop claimed %d partitions (%s): %v", second.PartitionsClaimed, second.Partition, txnsOf(second))
		}
		if second.LeaseID == first.LeaseID {
			t.Errorf("two pops share lease %s", first.LeaseID)
		}
		a.popEmpty(t, "/api/v1/pop/queue/wild?partitions=5")
	})

	t.Run("batch is global across partitions", func(t *testing.T) {
		p := a.popMust(t, "/api/v1/pop/queue/global?partitions=3&batch=1")
		if p.PartitionsClaimed != 1 || len(p.Messages) != 1 {
			t.Fatalf("batch=1 over 3 partitions: %d partitions, %v", p.PartitionsClaimed, txnsOf(p))
		}
		p = a.popMust(t, "/api/v1/pop/queue/global?partitions=3&batch=3")
		if p.PartitionsClaimed != 2 || len(p.Messages) != 3 {
			t.Fatalf("batch=3 over 2 free partitions of 2: %d partitions, %v", p.PartitionsClaimed, txnsOf(p))
		}
	})

	t.Run("pinned route serves only its partition and ignores partitions", func(t *testing.T) {
		p := a.popMust(t, "/api/v1/pop/queue/pinned/partition/p2?partitions=3&batch=10")
		if p.PartitionsClaimed != 1 || p.Partition != "p2" {
			t.Fatalf("claimed %d partitions, first %s", p.PartitionsClaimed, p.Partition)
		}
		wantTxns(t, p, txnRange("pinned-p2", 0, 1)...)
		a.popEmpty(t, "/api/v1/pop/queue/pinned/partition/p2")
		q := a.popMust(t, "/api/v1/pop/queue/pinned/partition/p3")
		wantTxns(t, q, txnRange("pinned-p3", 0, 1)...)
	})
}

func TestPopDiscovery(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	db := openPushLogDB(t, a)
	queues := []string{"shop.orders.eu", "shop.billing.x", "mail.orders.y", "plain"}
	for _, q := range queues {
		a.push(t, map[string]any{"queue": q, "transactionId": q, "payload": 1})
	}

	t.Run("dotted names set namespace and task on auto-create", func(t *testing.T) {
		want := map[string][2]string{"shop.orders.eu": {"shop", "orders"}, "shop.billing.x": {"shop", "billing"},
			"mail.orders.y": {"mail", "orders"}, "plain": {"", ""}}
		for q, nt := range want {
			var ns, task string
			if err := db.pool.QueryRow(context.Background(),
				`SELECT namespace, task FROM queen.queues WHERE name = $1`, q).Scan(&ns, &task); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if ns != nt[0] || task != nt[1] {
				t.Errorf("%s: namespace %q task %q, want %q %q", q, ns, task, nt[0], nt[1])
			}
		}
	})

	tests := []struct {
		name, query string
		want        []string
	}{
		{"namespace", "namespace=shop", []string{"shop.billing.x", "shop.orders.eu"}},
		{"task", "task=orders", []string{"mail.orders.y", "shop.orders.eu"}},
		{"namespace and task", "namespace=shop&task=billing", []string{"shop.billing.x"}},
		{"no match", "namespace=nope", nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := fmt.Sprintf("/api/v1/pop?%s&partitions=10&consumerGroup=d%d&subscriptionMode=all", tt.query, i)
			p := a.pop(t, path)
			if tt.want == nil {
				if p != nil {
					t.Fatalf("got %v, want 204", txnsOf(p))
				}
				return
			}
			if p == nil {
				t.Fatal("204")
			}
			got := txnsOf(p)
			slices.Sort(got)
			if !slices.Equal(got, tt.want) || p.PartitionsClaimed != len(tt.want) || p.Queue != "" {
				t.Fatalf("queue %q, %d partitions, delivered %v; want queue \"\", %v", p.Queue, p.PartitionsClaimed, got, tt.want)
			}
		})
	}

	t.Run("400 without namespace and task", func(t *testing.T) {
		for _, path := range []string{"/api/v1/pop", "/api/v1/pop?namespace=&task=", "/api/v1/pop?batch=5"} {
			resp, body := sendRaw(t, a, http.MethodGet, path, nil, 0)
			wantJSONContentType(t, resp)
			const want = `{"success":false,"error":"namespace or task is required","messages":[]}`
			if resp.StatusCode != http.StatusBadRequest || string(body) != want {
				t.Errorf("%s: %d %s, want 400 %s", path, resp.StatusCode, body, want)
			}
		}
	})
}

func TestPopProvisionsUnknownQueue(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	db := openPushLogDB(t, a)
	tests := []struct{ name, queue, path, ns, task string }{
		{"wildcard", "fresh", "/api/v1/pop/queue/fresh", "", ""},
		{"pinned, dotted name", "acme.billing.in", "/api/v1/pop/queue/acme.billing.in/partition/x?consumerGroup=g", "acme", "billing"},
		{"long poll", "parked", "/api/v1/pop/queue/parked?wait=true&timeout=10", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a.popEmpty(t, tt.path)
			var ns, task string
			var configured bool
			err := db.pool.QueryRow(context.Background(),
				`SELECT namespace, task, configured FROM queen.queues WHERE name = $1`, tt.queue).Scan(&ns, &task, &configured)
			if err != nil {
				t.Fatalf("queue row of %s: %v", tt.queue, err)
			}
			if ns != tt.ns || task != tt.task || configured {
				t.Errorf("row: namespace %q task %q configured %v; want %q %q false", ns, task, configured, tt.ns, tt.task)
			}
		})
	}
	// The provisioned row is the one pushes use: nothing is duplicated.
	a.pushN(t, "fresh", "Default", "f", 1)
	if n := db.count(t, `SELECT count(*) FROM queen.queues WHERE name = 'fresh'`); n != 1 {
		t.Fatalf("%d rows for queue fresh", n)
	}
	wantTxns(t, a.popMust(t, "/api/v1/pop/queue/fresh"), "f-0")
}

func TestPopStrictParsing(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	a.pushN(t, "strict", "Default", "s", 1)
	bad := []struct{ query, param string }{
		{"batch=abc", "batch"},
		{"batch=0", "batch"},
		{"batch=-3", "batch"},
		{"partitions=x", "partitions"},
		{"partitions=0", "partitions"},
		{"wait=1", "wait"},
		{"wait=TRUE", "wait"},
		{"autoAck=yes", "autoAck"},
		{"timeout=-1", "timeout"},
		{"timeout=1.5", "timeout"},
		{"leaseSeconds=x", "leaseSeconds"},
		{"batch=4294967297", "batch"},
		{"partitions=2147483648", "partitions"},
		{"leaseSeconds=3000000000", "leaseSeconds"},
		{"timeout=18446744073709552", "timeout"},
		{"subscriptionFrom=garbage&consumerGroup=g", "subscriptionFrom"},
		{"subscriptionFrom=garbage", "subscriptionFrom"},
		{"consumerGroup=" + url.QueryEscape("a\x01b"), "consumerGroup"},
	}
	for _, tt := range bad {
		for _, route := range []string{"/api/v1/pop/queue/strict", "/api/v1/pop/queue/strict/partition/Default", "/api/v1/pop?namespace=n"} {
			t.Run(tt.query+" on "+route, func(t *testing.T) {
				resp, body := sendRaw(t, a, http.MethodGet, route+querySep(route)+tt.query, nil, 0)
				wantErrorBody(t, resp, body, http.StatusBadRequest, "", tt.param)
			})
		}
	}
	// Valid spellings of the same parameters are accepted.
	good := []string{"batch=1&wait=false&autoAck=false&timeout=0&leaseSeconds=0&partitions=1",
		"consumerGroup=g1&subscriptionFrom=now", "consumerGroup=g2&subscriptionFrom=2020-01-02T03:04:05Z",
		"consumerGroup=g3&subscriptionFrom=2020-01-02T03:04:05.123456%2B02:00&subscriptionMode=whatever"}
	for _, q := range good {
		t.Run("accepts "+q, func(t *testing.T) {
			code, body := a.do(t, http.MethodGet, "/api/v1/pop/queue/strict?"+q, "")
			if code != http.StatusOK && code != http.StatusNoContent {
				t.Fatalf("status %d, body %s", code, body)
			}
		})
	}
}

func querySep(path string) string {
	if strings.Contains(path, "?") {
		return "&"
	}
	return "?"
}
