package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// Tests of the trace routes (docs/api.md §5.10). The reads answer Queen's snake_case
// keys, which its dashboard and CLI read.

var (
	trcItemKeys = []string{"id", "transaction_id", "partition_id", "queue_name", "partition_name", "consumer_group",
		"event_type", "trace_names", "data", "worker_id", "created_at"}
	trcNameKeys = []string{"trace_name", "trace_count", "message_count", "last_seen"}
)

type trcItem struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transaction_id"`
	PartitionID   string          `json:"partition_id"`
	Queue         *string         `json:"queue_name"`
	Partition     *string         `json:"partition_name"`
	ConsumerGroup string          `json:"consumer_group"`
	EventType     string          `json:"event_type"`
	TraceNames    []string        `json:"trace_names"`
	Data          json.RawMessage `json:"data"`
	WorkerID      *string         `json:"worker_id"` // always null here
	CreatedAt     string          `json:"created_at"`
}

type trcName struct {
	TraceName    string `json:"trace_name"`
	TraceCount   int64  `json:"trace_count"`
	MessageCount int64  `json:"message_count"`
	LastSeen     string `json:"last_seen"`
}

type trcPagination struct {
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

// trcRecord posts a trace and returns its id; the 201 answer is checked key by key.
func (b *broker) trcRecord(t testing.TB, body string) string {
	t.Helper()
	code, raw := b.post(t, "/api/v1/traces", body)
	if code != http.StatusCreated {
		t.Fatalf("POST /api/v1/traces %s: %d %s", body, code, raw)
	}
	if got := jsonKeys(t, raw); !slices.Equal(got, []string{"success", "traceId", "createdAt"}) {
		t.Fatalf("answer keys %v: %s", got, raw)
	}
	var ans struct {
		Success   bool   `json:"success"`
		TraceID   string `json:"traceId"`
		CreatedAt string `json:"createdAt"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil || !ans.Success || !anyUUID.MatchString(ans.TraceID) ||
		!microTime.MatchString(ans.CreatedAt) {
		t.Fatalf("answer %s (%v)", raw, err)
	}
	return ans.TraceID
}

// trcItems checks a list of traces key by key and decodes it.
func trcItems(t testing.TB, raws []json.RawMessage) []trcItem {
	t.Helper()
	out := make([]trcItem, len(raws))
	for i, raw := range raws {
		if got := jsonKeys(t, raw); !slices.Equal(got, trcItemKeys) {
			t.Fatalf("trace keys %v, want %v", got, trcItemKeys)
		}
		if err := decodeStrict(raw, &out[i]); err != nil {
			t.Fatal(err)
		}
		if out[i].WorkerID != nil {
			t.Fatalf("worker_id %q, want null", *out[i].WorkerID)
		}
	}
	return out
}

// trcOfMessage reads GET /api/v1/traces/{pid}/{txn}.
func (b *broker) trcOfMessage(t testing.TB, pid, txn string) []trcItem {
	t.Helper()
	code, raw := b.get(t, "/api/v1/traces/"+pid+"/"+url.PathEscape(txn))
	if code != http.StatusOK {
		t.Fatalf("GET traces of %s: %d %s", txn, code, raw)
	}
	if got := jsonKeys(t, raw); !slices.Equal(got, []string{"traces"}) {
		t.Fatalf("answer keys %v", got)
	}
	var ans struct {
		Traces []json.RawMessage `json:"traces"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil || ans.Traces == nil {
		t.Fatalf("answer %s: want a traces array (%v)", raw, err)
	}
	return trcItems(t, ans.Traces)
}

// trcByName reads GET /api/v1/traces/by-name/{name}?query: the page, the total over
// every page and the paging.
func (b *broker) trcByName(t testing.TB, name, query string) ([]trcItem, int64, trcPagination) {
	t.Helper()
	code, raw := b.get(t, "/api/v1/traces/by-name/"+url.PathEscape(name)+query)
	if code != http.StatusOK {
		t.Fatalf("GET traces named %s: %d %s", name, code, raw)
	}
	if got := jsonKeys(t, raw); !slices.Equal(got, []string{"traces", "total", "pagination"}) {
		t.Fatalf("answer keys %v", got)
	}
	var ans struct {
		Traces     []json.RawMessage `json:"traces"`
		Total      *int64            `json:"total"`
		Pagination trcPagination     `json:"pagination"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil || ans.Traces == nil || ans.Total == nil {
		t.Fatalf("answer %s: want a traces array and a total (%v)", raw, err)
	}
	return trcItems(t, ans.Traces), *ans.Total, ans.Pagination
}

// trcNames reads GET /api/v1/traces/names?query: the page, the total over every page and
// the paging.
func (b *broker) trcNames(t testing.TB, query string) ([]trcName, int64, trcPagination) {
	t.Helper()
	code, raw := b.get(t, "/api/v1/traces/names"+query)
	if code != http.StatusOK {
		t.Fatalf("GET trace names: %d %s", code, raw)
	}
	if got := jsonKeys(t, raw); !slices.Equal(got, []string{"trace_names", "total", "pagination"}) {
		t.Fatalf("answer keys %v", got)
	}
	var ans struct {
		Names      []json.RawMessage `json:"trace_names"`
		Total      *int64            `json:"total"`
		Pagination trcPagination     `json:"pagination"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil || ans.Names == nil || ans.Total == nil {
		t.Fatalf("answer %s: want a trace_names array and a total (%v)", raw, err)
	}
	out := make([]trcName, len(ans.Names))
	for i, r := range ans.Names {
		if got := jsonKeys(t, r); !slices.Equal(got, trcNameKeys) {
			t.Fatalf("name keys %v, want %v", got, trcNameKeys)
		}
		if err := decodeStrict(r, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out, *ans.Total, ans.Pagination
}

func trcIDs(ts []trcItem) []string {
	out := make([]string, len(ts))
	for i, tr := range ts {
		out[i] = tr.ID
	}
	return out
}

func TestTraces(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	b.push(t, map[string]any{"queue": "trc", "partition": "p", "transactionId": "t/1", "payload": 1},
		map[string]any{"queue": "trc", "partition": "p", "transactionId": "t2", "payload": 2})
	p := b.popMust(t, "/api/v1/pop/queue/trc/partition/p?batch=2")
	pid := p.PartitionID
	trace := func(txn string, extra string) string {
		return b.trcRecord(t, fmt.Sprintf(`{"transactionId":%q,"partitionId":%q%s}`, txn, pid, extra))
	}

	// Three traces of t/1 and two of t2, in this order, with names.
	start := time.Now().Add(-time.Second)
	a := trace("t/1", `,"data":{"step":"received"},"traceNames":["order-9","checkout"],"eventType":"start"`)
	bb := trace("t/1", `,"data":{"text":"working"},"traceNames":"order-9","consumerGroup":"g"`)
	c := trace("t2", `,"data":null,"traceNames":["checkout","checkout"]`)
	d := trace("t/1", `,"data":[1,2,3]`)
	e := trace("t2", `,"data":"done","traceNames":["order-9"],"eventType":"end"`)
	end := time.Now().Add(time.Second)

	t.Run("of a message", func(t *testing.T) {
		t.Parallel()
		ts := b.trcOfMessage(t, pid, "t/1")
		if got := trcIDs(ts); !slices.Equal(got, []string{a, bb, d}) {
			t.Fatalf("traces %v, want %v (oldest first)", got, []string{a, bb, d})
		}
		want := []struct {
			group, event, data string
			names              []string
		}{
			{"__QUEUE_MODE__", "start", `{"step":"received"}`, []string{"order-9", "checkout"}},
			{"g", "info", `{"text":"working"}`, []string{"order-9"}},
			{"__QUEUE_MODE__", "info", `[1,2,3]`, []string{}},
		}
		for i, tr := range ts {
			w := want[i]
			at, err := time.Parse(time.RFC3339Nano, tr.CreatedAt)
			if tr.TransactionID != "t/1" || tr.PartitionID != pid || tr.Queue == nil || *tr.Queue != "trc" ||
				tr.Partition == nil || *tr.Partition != "p" || tr.ConsumerGroup != w.group || tr.EventType != w.event ||
				string(tr.Data) != w.data || !slices.Equal(tr.TraceNames, w.names) || err != nil ||
				!microTime.MatchString(tr.CreatedAt) || at.Before(start) || at.After(end) {
				t.Errorf("trace %d: %+v (data %s), want %+v", i, tr, tr.Data, w)
			}
		}
		if ts := b.trcOfMessage(t, pid, "none"); len(ts) != 0 {
			t.Errorf("a message without traces has %d", len(ts))
		}
		if ts := b.trcOfMessage(t, "00000000-0000-4000-8000-000000000000", "t2"); len(ts) != 0 {
			t.Errorf("another partition's message has %d traces", len(ts))
		}
	})

	t.Run("by name", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct {
			name, query string
			want        []string
			total       int64
			page        trcPagination
		}{
			{"order-9", "", []string{e, bb, a}, 3, trcPagination{100, 0}},
			{"order-9", "?limit=2", []string{e, bb}, 3, trcPagination{2, 0}},
			{"order-9", "?limit=2&offset=2", []string{a}, 3, trcPagination{2, 2}},
			{"order-9", "?limit=2&offset=4", nil, 3, trcPagination{2, 4}},
			{"checkout", "", []string{c, a}, 2, trcPagination{100, 0}},
			{"unknown", "", nil, 0, trcPagination{100, 0}},
		} {
			ts, total, page := b.trcByName(t, tt.name, tt.query)
			if got := trcIDs(ts); !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Errorf("%s%s: traces %v, want %v (newest first)", tt.name, tt.query, got, tt.want)
			}
			if page != tt.page || total != tt.total {
				t.Errorf("%s%s: total %d pagination %+v, want %d and %+v", tt.name, tt.query, total, page, tt.total, tt.page)
			}
		}
		ts, _, _ := b.trcByName(t, "checkout", "")
		if string(ts[0].Data) != "null" || !slices.Equal(ts[0].TraceNames, []string{"checkout"}) {
			t.Errorf("trace c: %+v (data %s), want null data and checkout once", ts[0], ts[0].Data)
		}
	})

	t.Run("names", func(t *testing.T) {
		t.Parallel()
		ns, total, page := b.trcNames(t, "")
		if page != (trcPagination{50, 0}) || len(ns) != 2 || total != 2 {
			t.Fatalf("names %+v total %d pagination %+v", ns, total, page)
		}
		// order-9 was used last (trace e): it comes first.
		if ns[0].TraceName != "order-9" || ns[0].TraceCount != 3 || ns[0].MessageCount != 2 ||
			ns[1].TraceName != "checkout" || ns[1].TraceCount != 2 || ns[1].MessageCount != 2 {
			t.Fatalf("names %+v", ns)
		}
		for _, n := range ns {
			if !microTime.MatchString(n.LastSeen) {
				t.Errorf("lastSeen %q", n.LastSeen)
			}
		}
		if ns, total, page = b.trcNames(t, "?limit=1&offset=1"); len(ns) != 1 || ns[0].TraceName != "checkout" ||
			page != (trcPagination{1, 1}) || total != 2 {
			t.Fatalf("second page %+v total %d %+v", ns, total, page)
		}
	})

	t.Run("bad requests", func(t *testing.T) {
		t.Parallel()
		big := `"` + strings.Repeat("x", 64<<10) + `"`
		for _, tt := range []struct {
			name, method, path, body string
			status                   int
			want                     string
		}{
			{"no transaction id", "POST", "/api/v1/traces", `{"partitionId":"` + pid + `","data":1}`, 400, "transactionId is required"},
			{"no partition id", "POST", "/api/v1/traces", `{"transactionId":"t2","data":1}`, 400, "partitionId is required"},
			{"no data", "POST", "/api/v1/traces", `{"transactionId":"t2","partitionId":"` + pid + `"}`, 400, "data is required"},
			{"partition id not a UUID", "POST", "/api/v1/traces", `{"transactionId":"t2","partitionId":"p","data":1}`, 400, "partitionId must be a UUID"},
			{"unknown partition", "POST", "/api/v1/traces", `{"transactionId":"t2","partitionId":"00000000-0000-4000-8000-000000000000","data":1}`, 404, "Partition not found"},
			{"data too large", "POST", "/api/v1/traces", `{"transactionId":"t2","partitionId":"` + pid + `","data":` + big + `}`, 400, "the limit is 65536"},
			{"trace names of the wrong type", "POST", "/api/v1/traces", `{"transactionId":"t2","partitionId":"` + pid + `","data":1,"traceNames":[1]}`, 400, "traceNames must be a string or an array of strings"},
			{"empty trace name", "POST", "/api/v1/traces", `{"transactionId":"t2","partitionId":"` + pid + `","data":1,"traceNames":[""]}`, 400, "must not be empty"},
			{"too many trace names", "POST", "/api/v1/traces", `{"transactionId":"t2","partitionId":"` + pid + `","data":1,"traceNames":[` +
				strings.TrimSuffix(strings.Repeat(`"n",`, 33), ",") + `]}`, 400, "33 trace names, the limit is 32"},
			{"not JSON", "POST", "/api/v1/traces", `{`, 400, "bad body"},
			{"by name: limit not a number", "GET", "/api/v1/traces/by-name/x?limit=x", "", 400, "limit must be an integer"},
			{"by name: negative limit", "GET", "/api/v1/traces/by-name/x?limit=-1", "", 400, "limit must be at least 1"},
			{"names: limit zero", "GET", "/api/v1/traces/names?limit=0", "", 400, "limit must be at least 1"},
			{"names: negative offset", "GET", "/api/v1/traces/names?offset=-1", "", 400, "offset must be between 0 and 100000"},
			{"of a message: bad partition id", "GET", "/api/v1/traces/p/t2", "", 400, "partitionId must be a UUID"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				resp, body := b.doBad(t, tt.method, tt.path, strings.NewReader(tt.body))
				wantErrorBody(t, resp, body, tt.status, "", tt.want)
			})
		}
	})
}
