package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/ports"
)

// tracesRoutes registers the trace routes (docs/api.md §5.10). names and by-name come first:
// "/api/v1/traces/{partitionId}/{transactionId}" would match them too.
func (a *api) tracesRoutes(r *mux.Router) {
	r.HandleFunc("/api/v1/traces", a.handleRecordTrace).Methods(http.MethodPost)
	r.HandleFunc("/api/v1/traces/names", a.handleTraceNames).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/traces/by-name/{traceName:.+}", a.handleTracesByName).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/traces/{partitionId}/{transactionId:.+}", a.handleMessageTraces).Methods(http.MethodGet)
}

// traceItem is one trace as the trace routes render it, under Queen's keys (snake_case:
// its trace answers are its stored procedures' JSON, docs/api.md §5.10), which its
// dashboard and CLI read. Queen's message listing omits the first five; they are here
// on every route.
type traceItem struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transaction_id"`
	PartitionID   string          `json:"partition_id"`
	QueueName     *string         `json:"queue_name"`     // null once the partition is deleted
	PartitionName *string         `json:"partition_name"` // idem
	ConsumerGroup string          `json:"consumer_group"`
	EventType     string          `json:"event_type"`
	TraceNames    []string        `json:"trace_names"`
	Data          json.RawMessage `json:"data"`
	// WorkerID is always null: a trace here is not tied to one broker process (Queen
	// records the worker that wrote it).
	WorkerID  *string `json:"worker_id"`
	CreatedAt string  `json:"created_at"`
}

func traceItemOf(t *ports.Trace) traceItem {
	it := traceItem{ID: t.ID, TransactionID: t.TransactionID, PartitionID: t.PartitionID,
		QueueName: msgString(t.Queue), PartitionName: msgString(t.Partition), ConsumerGroup: t.ConsumerGroup,
		TraceNames: t.Names, EventType: t.EventType, Data: json.RawMessage(t.Data),
		CreatedAt: t.CreatedAt.UTC().Format(timeFormat)}
	if it.TraceNames == nil {
		it.TraceNames = []string{}
	}
	return it
}

func traceItems(ts []ports.Trace) []traceItem {
	out := make([]traceItem, len(ts))
	for i := range ts {
		out[i] = traceItemOf(&ts[i])
	}
	return out
}

type traceRecorded struct {
	Success   bool   `json:"success"`
	TraceID   string `json:"traceId"`
	CreatedAt string `json:"createdAt"`
}

// handleRecordTrace is POST /api/v1/traces: 201 {"success": true, "traceId": ...}.
func (a *api) handleRecordTrace(w http.ResponseWriter, r *http.Request) {
	b, err := readBody(r, a.opts.MaxBodyBytes)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	in, err := parseTrace(b)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	t, err := a.Traces.Record(r.Context(), a.opts.Tenant, in)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	writeJSON(w, http.StatusCreated, traceRecorded{Success: true, TraceID: t.ID, CreatedAt: t.CreatedAt.UTC().Format(timeFormat)})
}

// parseTrace reads a trace body. traceNames may be an array of strings or one string;
// data must be present (null is a value).
func parseTrace(b []byte) (admin.TraceInput, error) {
	var body struct {
		TransactionID *string         `json:"transactionId"`
		PartitionID   *string         `json:"partitionId"`
		ConsumerGroup *string         `json:"consumerGroup"`
		TraceNames    json.RawMessage `json:"traceNames"`
		EventType     *string         `json:"eventType"`
		Data          json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return admin.TraceInput{}, badRequestf("bad body: %v", err)
	}
	var in admin.TraceInput
	if body.TransactionID != nil {
		in.TransactionID = *body.TransactionID
	}
	if body.PartitionID != nil {
		in.PartitionID = *body.PartitionID
	}
	if body.ConsumerGroup != nil {
		in.ConsumerGroup = *body.ConsumerGroup
	}
	if body.EventType != nil {
		in.EventType = *body.EventType
	}
	in.Data = body.Data // "null" when given as null; nil only when the key is absent
	switch tn := bytes.TrimSpace(body.TraceNames); {
	case len(tn) == 0 || bytes.Equal(tn, []byte("null")):
	case tn[0] == '"':
		var s string
		if err := json.Unmarshal(tn, &s); err != nil {
			return admin.TraceInput{}, badRequestf("traceNames: %v", err)
		}
		in.Names = []string{s}
	default:
		if err := json.Unmarshal(tn, &in.Names); err != nil {
			return admin.TraceInput{}, badRequestf("traceNames must be a string or an array of strings: %v", err)
		}
	}
	return in, nil
}

type tracesResponse struct {
	Traces []traceItem `json:"traces"`
}

// handleMessageTraces is GET /api/v1/traces/{partitionId}/{transactionId}: the message's
// traces, oldest first.
func (a *api) handleMessageTraces(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	ts, err := a.Traces.ForMessage(r.Context(), a.opts.Tenant, v["partitionId"], v["transactionId"])
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	writeJSON(w, http.StatusOK, tracesResponse{Traces: traceItems(ts)})
}

type tracesPageResponse struct {
	Traces     []traceItem `json:"traces"`
	Total      int64       `json:"total"` // traces carrying the name, every page
	Pagination pagination  `json:"pagination"`
}

// handleTracesByName is GET /api/v1/traces/by-name/{traceName}?limit=100&offset=0:
// newest first.
func (a *api) handleTracesByName(w http.ResponseWriter, r *http.Request) {
	limit, offset, err := tracePage(r, admin.DefaultTracesByName)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	ts, page, err := a.Traces.ByName(r.Context(), a.opts.Tenant, mux.Vars(r)["traceName"], limit, offset)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	writeJSON(w, http.StatusOK, tracesPageResponse{Traces: traceItems(ts), Total: page.Total,
		Pagination: pagination{page.Limit, page.Offset}})
}

// traceNameItem is one trace name, under Queen's keys (docs/api.md §5.10).
type traceNameItem struct {
	TraceName    string `json:"trace_name"`
	TraceCount   int64  `json:"trace_count"`
	MessageCount int64  `json:"message_count"` // distinct (partition, transaction id)
	LastSeen     string `json:"last_seen"`
}

type traceNamesResponse struct {
	TraceNames []traceNameItem `json:"trace_names"`
	Total      int64           `json:"total"` // names in use, every page
	Pagination pagination      `json:"pagination"`
}

// handleTraceNames is GET /api/v1/traces/names?limit=50&offset=0: most recently seen
// first.
func (a *api) handleTraceNames(w http.ResponseWriter, r *http.Request) {
	limit, offset, err := tracePage(r, admin.DefaultTraceNamesLimit)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	ns, page, err := a.Traces.Names(r.Context(), a.opts.Tenant, limit, offset)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	out := traceNamesResponse{TraceNames: make([]traceNameItem, len(ns)), Total: page.Total,
		Pagination: pagination{page.Limit, page.Offset}}
	for i, n := range ns {
		out.TraceNames[i] = traceNameItem{TraceName: n.Name, TraceCount: n.Traces, MessageCount: n.Messages,
			LastSeen: n.LastSeen.UTC().Format(timeFormat)}
	}
	writeJSON(w, http.StatusOK, out)
}

// tracePage reads limit (default def) and offset (default 0).
func tracePage(r *http.Request, def int) (limit, offset int, err error) {
	q := r.URL.Query()
	if limit, err = intParam(q, "limit", def); err != nil {
		return 0, 0, err
	}
	offset, err = intParam(q, "offset", 0)
	return limit, offset, err
}
