package e2e

import (
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
)

var (
	popKeys     = []string{"success", "queue", "partition", "partitionId", "leaseId", "consumerGroup", "messages", "partitionsClaimed"}
	popMsgKeys  = []string{"id", "transactionId", "traceId", "data", "producerSub", "createdAt", "partitionId", "partition", "leaseId", "consumerGroup", "deliveryAttempt"}
	ackRespKeys = []string{"index", "transactionId", "success", "error", "leaseReleased", "dlq", "noop"}
)

// anyUUID matches a canonical UUID of any version.
var anyUUID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestPopResponseShape(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	before := time.Now()
	pushed := b.push(t,
		map[string]any{"queue": "shape", "partition": "eu", "transactionId": "order-1", "payload": map[string]any{"total": 19.99}},
		map[string]any{"queue": "shape", "partition": "eu", "transactionId": "order-2", "payload": []any{1, "two"}})
	after := time.Now()

	// Both pops must describe the same partition and segment: the first one's partition
	// id and createdAt become what the second must answer.
	var pid, segAt string
	tests := []struct {
		name, path, group string
	}{
		{"queue mode, wildcard", "/api/v1/pop/queue/shape?batch=10", "__QUEUE_MODE__"},
		{"named group, pinned", "/api/v1/pop/queue/shape/partition/eu?batch=10&consumerGroup=fulfilment&subscriptionMode=all", "fulfilment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := b.do(t, http.MethodGet, tt.path, nil)
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
			if err := decodeStrict(body, &p); err != nil {
				t.Fatal(err)
			}
			if !anyUUID.MatchString(p.LeaseID) {
				t.Errorf("leaseId %q is not a UUID", p.LeaseID)
			}
			if pid == "" && len(p.Messages) > 0 {
				pid, segAt = p.PartitionID, p.Messages[0].CreatedAt
				if !anyUUID.MatchString(pid) {
					t.Errorf("partitionId %q is not a UUID", pid)
				}
				// One segment, committed during the push.
				at := p.Messages[0].createdAt(t)
				if at.Before(before.Add(-time.Second)) || at.After(after.Add(time.Second)) {
					t.Errorf("createdAt %s, the push ran from %s to %s", segAt, before.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano))
				}
			}
			want := popResp{Success: true, Queue: "shape", Partition: "eu", PartitionID: pid, LeaseID: p.LeaseID,
				ConsumerGroup: tt.group, PartitionsClaimed: 1}
			data := []string{`{"total":19.99}`, `[1,"two"]`}
			for i, txn := range []string{"order-1", "order-2"} {
				want.Messages = append(want.Messages, popMsg{ID: pushed[i].MessageID, TransactionID: txn,
					Data: json.RawMessage(data[i]), CreatedAt: segAt,
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
			if !strings.Contains(string(body), `"traceId":null`) || !strings.Contains(string(body), `"producerSub":null`) {
				t.Errorf("traceId and producerSub must be null: %s", body)
			}
		})
	}

	t.Run("204 without a body when nothing is deliverable", func(t *testing.T) {
		for _, path := range []string{"/api/v1/pop/queue/shape", "/api/v1/pop/queue/empty-queue",
			"/api/v1/pop/queue/shape/partition/nope", "/api/v1/pop?namespace=none"} {
			resp, body := b.do(t, http.MethodGet, path, nil)
			if resp.StatusCode != http.StatusNoContent || len(body) != 0 {
				t.Errorf("%s: status %d body %q, want 204 and no body", path, resp.StatusCode, body)
			}
		}
	})
}

func TestPopWildcardAndPinned(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	for _, q := range []string{"wild", "global", "pinned"} {
		for _, p := range []string{"p1", "p2", "p3"} {
			b.pushN(t, q, p, q+"-"+p, 2)
		}
	}

	t.Run("claims up to partitions partitions under one lease", func(t *testing.T) {
		first := b.popMust(t, "/api/v1/pop/queue/wild?partitions=2&batch=3")
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
		second := b.popMust(t, "/api/v1/pop/queue/wild?partitions=5&batch=100")
		if second.PartitionsClaimed != 1 || len(second.Messages) != 2 || parts[second.Partition] {
			t.Fatalf("second pop claimed %d partitions (%s): %v", second.PartitionsClaimed, second.Partition, txnsOf(second))
		}
		if second.LeaseID == first.LeaseID {
			t.Errorf("two pops share lease %s", first.LeaseID)
		}
		b.popEmpty(t, "/api/v1/pop/queue/wild?partitions=5")
	})

	t.Run("batch is global across partitions", func(t *testing.T) {
		p := b.popMust(t, "/api/v1/pop/queue/global?partitions=3&batch=1")
		if p.PartitionsClaimed != 1 || len(p.Messages) != 1 {
			t.Fatalf("batch=1 over 3 partitions: %d partitions, %v", p.PartitionsClaimed, txnsOf(p))
		}
		p = b.popMust(t, "/api/v1/pop/queue/global?partitions=3&batch=3")
		if p.PartitionsClaimed != 2 || len(p.Messages) != 3 {
			t.Fatalf("batch=3 over 2 free partitions of 2: %d partitions, %v", p.PartitionsClaimed, txnsOf(p))
		}
	})

	t.Run("pinned route serves only its partition and ignores partitions", func(t *testing.T) {
		p := b.popMust(t, "/api/v1/pop/queue/pinned/partition/p2?partitions=3&batch=10")
		if p.PartitionsClaimed != 1 || p.Partition != "p2" {
			t.Fatalf("claimed %d partitions, first %s", p.PartitionsClaimed, p.Partition)
		}
		wantTxns(t, p, txnRange("pinned-p2", 0, 1)...)
		b.popEmpty(t, "/api/v1/pop/queue/pinned/partition/p2")
		q := b.popMust(t, "/api/v1/pop/queue/pinned/partition/p3")
		wantTxns(t, q, txnRange("pinned-p3", 0, 1)...)
	})
}

func TestPopDiscovery(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	queues := []string{"shop.orders.eu", "shop.billing.x", "mail.orders.y", "plain"}
	for _, q := range queues {
		b.push(t, map[string]any{"queue": q, "transactionId": q, "payload": 1})
	}

	// A discovery pop finds a queue by the namespace and task its first push gave it: the
	// first two segments of a dotted name, nothing for a plain one.
	t.Run("dotted names set namespace and task on auto-create", func(t *testing.T) {
		want := map[string][2]string{"shop.orders.eu": {"shop", "orders"}, "shop.billing.x": {"shop", "billing"},
			"mail.orders.y": {"mail", "orders"}}
		for q, nt := range want {
			p := b.popMust(t, fmt.Sprintf("/api/v1/pop?namespace=%s&task=%s&partitions=10&consumerGroup=auto-%s&subscriptionMode=all", nt[0], nt[1], q))
			wantTxns(t, p, q)
		}
		for _, query := range []string{"namespace=plain", "task=plain"} {
			b.popEmpty(t, "/api/v1/pop?"+query+"&partitions=10&consumerGroup=auto-plain&subscriptionMode=all")
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
			p := b.pop(t, path)
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
			resp, body := b.do(t, http.MethodGet, path, nil)
			wantJSONContentType(t, resp)
			const want = `{"success":false,"error":"namespace or task is required","messages":[]}`
			if resp.StatusCode != http.StatusBadRequest || string(body) != want {
				t.Errorf("%s: %d %s, want 400 %s", path, resp.StatusCode, body, want)
			}
		}
	})
}

// TestPopProvisionsUnknownQueue: a pop of an unknown queue creates it as a push would
// (namespace and task from a dotted name, not configured), and later pushes use it.
func TestPopProvisionsUnknownQueue(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	tests := []struct{ name, queue, partition, path, ns, task string }{
		{"wildcard", "fresh", "Default", "/api/v1/pop/queue/fresh", "", ""},
		{"pinned, dotted name", "acme.billing.in", "x", "/api/v1/pop/queue/acme.billing.in/partition/x?consumerGroup=g", "acme", "billing"},
		{"long poll", "parked", "Default", "/api/v1/pop/queue/parked?wait=true&timeout=10", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b.popEmpty(t, tt.path)
			b.pushN(t, tt.queue, tt.partition, "f", 1)
			if tt.ns != "" {
				// The row the pop created carries the namespace and task of the name.
				p := b.popMust(t, "/api/v1/pop?namespace="+tt.ns+"&task="+tt.task+"&consumerGroup=discover&subscriptionMode=all")
				wantTxns(t, p, "f-0")
			}
			// Not configured: pops lease for 60 s, not for a configured leaseTime.
			p := b.popMust(t, "/api/v1/pop/queue/"+url.PathEscape(tt.queue)+"/partition/"+tt.partition)
			wantTxns(t, p, "f-0")
			at, ok := b.leaseExpiry(t, p.LeaseID)
			if d := time.Until(at); !ok || d > 60*time.Second || d < 55*time.Second {
				t.Errorf("the provisioned queue leases for %v (live %v), want 60 s as an unconfigured queue", d, ok)
			}
		})
	}
}

func TestPopStrictParsing(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	b.pushN(t, "strict", "Default", "s", 1)
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
				resp, body := b.doBad(t, http.MethodGet, route+querySep(route)+tt.query, nil)
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
			code, body := b.get(t, "/api/v1/pop/queue/strict?"+q)
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
