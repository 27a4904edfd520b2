package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/streams"
	"github.com/queen-go/queen/ports"
)

// streamsRoutes registers the server side of Queen's streams SDKs (docs/streams.md), each
// route with its CORS preflight (streamsCORS).
func (a *api) streamsRoutes(r *mux.Router) {
	r.HandleFunc("/streams/v1/queries", a.handleStreamQuery).Methods(http.MethodPost)
	r.HandleFunc("/streams/v1/state/get", a.handleStreamState).Methods(http.MethodPost)
	r.HandleFunc("/streams/v1/cycle", a.handleStreamCycle).Methods(http.MethodPost)
	for _, p := range streamsPaths {
		r.HandleFunc(p, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Access-Control-Max-Age", "86400") // seconds a browser may reuse the answer
			w.WriteHeader(http.StatusNoContent)
		}).Methods(http.MethodOptions)
	}
}

// streamsPaths are the streams routes' paths.
var streamsPaths = []string{"/streams/v1/queries", "/streams/v1/state/get", "/streams/v1/cycle"}

// streamsCORS puts the permissive CORS headers of Queen's streams server (docs/streams.md §2)
// on every answer of the streams routes, errors and authentication refusals included,
// so that a browser's script can read them. Preflights (OPTIONS) are public routes: a
// browser sends them without credentials.
func streamsCORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slices.Contains(streamsPaths, r.URL.Path) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", "*")
			h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization")
		}
		next.ServeHTTP(w, r)
	})
}

// streamBody reads a streams request: a JSON object, field by field (the routes check
// each field's JSON type themselves, with the SDKs' error texts).
func (a *api) streamBody(r *http.Request) (map[string]json.RawMessage, error) {
	b, err := readBody(r, a.opts.MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, badRequestf("Empty request body")
	}
	var out map[string]json.RawMessage
	err = json.Unmarshal(b, &out)
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr):
		return nil, badRequestf("request body must be a JSON object")
	case err != nil:
		return nil, badRequestf("Invalid JSON: %v", err)
	case out == nil: // null
		return nil, badRequestf("request body must be a JSON object")
	}
	return out, nil
}

// str is field f when it is a JSON string.
func str(body map[string]json.RawMessage, f string) (string, bool) {
	var s string
	raw, ok := body[f]
	if !ok || len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// required is field f when it is a JSON string (non-empty when nonEmpty), else the
// route's 400.
func required(body map[string]json.RawMessage, f string, nonEmpty bool) (string, error) {
	s, ok := str(body, f)
	if !ok || (nonEmpty && s == "") {
		return "", badRequestf("%s is required", f)
	}
	return s, nil
}

// boolField reads an optional boolean: JSON true/false, or a string PostgreSQL reads as
// a boolean (Queen casts the text); absent or null is def.
func boolField(body map[string]json.RawMessage, f string, def bool) (bool, error) {
	raw, ok := body[f]
	if !ok || string(raw) == "null" {
		return def, nil
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return b, nil
	}
	if s, ok := str(body, f); ok {
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "t", "true", "y", "yes", "on", "1":
			return true, nil
		case "f", "false", "n", "no", "off", "0":
			return false, nil
		}
	}
	return false, badRequestf("%s must be a boolean", f)
}

type streamQueryResponse struct {
	Success    bool   `json:"success"`
	QueryID    string `json:"query_id"`
	Name       string `json:"name"`
	ConfigHash string `json:"config_hash,omitempty"`
	Fresh      *bool  `json:"fresh,omitempty"`
	Reset      *bool  `json:"reset,omitempty"`
	Error      string `json:"error,omitempty"`
}

// handleStreamQuery registers a query, idempotently by name (409 on a changed
// config_hash without reset).
func (a *api) handleStreamQuery(w http.ResponseWriter, r *http.Request) {
	body, err := a.streamBody(r)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	var q ports.StreamQuery
	// The queues are names; the query's name and hash are free text (params.go).
	for _, f := range []struct {
		name  string
		to    *string
		check func(where, param, v string) error
	}{{"name", &q.Name, checkText}, {"source_queue", &q.SourceQueue, checkName}, {"config_hash", &q.ConfigHash, checkText}} {
		if *f.to, err = required(body, f.name, true); err == nil {
			err = f.check("", f.name, *f.to)
		}
		if err != nil {
			writeError(w, a.opts.Logger, err)
			return
		}
	}
	q.SinkQueue, _ = str(body, "sink_queue")
	if err := checkName("", "sink_queue", q.SinkQueue); err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	reset, err := boolField(body, "reset", false)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	reg, err := a.Streams.Register(r.Context(), q, reset)
	var mm *streams.Mismatch
	if errors.As(err, &mm) {
		writeJSON(w, statusOf(err), streamQueryResponse{QueryID: mm.Query.ID, Name: mm.Query.Name, Error: mm.Error()})
		return
	}
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	writeJSON(w, http.StatusOK, streamQueryResponse{Success: true, QueryID: reg.Query.ID, Name: reg.Query.Name,
		ConfigHash: reg.Query.ConfigHash, Fresh: &reg.Fresh, Reset: &reg.Reset})
}

type stateRow struct {
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	UpdatedAt string          `json:"updated_at"`
}

// streamTime prints a timestamp as the other routes do: UTC, microseconds, Z.
func streamTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// handleStreamState reads one (query, partition) shard, filtered.
func (a *api) handleStreamState(w http.ResponseWriter, r *http.Request) {
	body, err := a.streamBody(r)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	qid, err := required(body, "query_id", false)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	pid, err := required(body, "partition_id", false)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	f, err := stateFilter(body)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	rows, err := a.Streams.State(r.Context(), qid, pid, f)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	out := struct {
		Success bool       `json:"success"`
		Rows    []stateRow `json:"rows"`
	}{Success: true, Rows: make([]stateRow, len(rows))}
	for i, row := range rows {
		out.Rows[i] = stateRow{Key: row.Key, Value: row.Value, UpdatedAt: streamTime(row.UpdatedAt)}
	}
	writeJSON(w, http.StatusOK, out)
}

// stateFilter reads a state read's filter. Keys are free text (params.go).
func stateFilter(body map[string]json.RawMessage) (ports.StateFilter, error) {
	var f ports.StateFilter
	// keys: anything but an array (missing, null: the Go SDK sends null) is no filter;
	// elements that are not strings name no key.
	var keys []json.RawMessage
	if json.Unmarshal(body["keys"], &keys) == nil {
		for _, k := range keys {
			var s string
			if json.Unmarshal(k, &s) != nil {
				continue
			}
			if err := checkText("", "keys", s); err != nil {
				return f, err
			}
			f.Keys = append(f.Keys, s)
		}
	}
	f.Prefix, _ = str(body, "key_prefix")
	if err := checkText("", "key_prefix", f.Prefix); err != nil {
		return f, err
	}
	// ripe_at_or_before counts only as a JSON number; anything else is ignored.
	if raw := bytes.TrimSpace(body["ripe_at_or_before"]); len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
		if json.Unmarshal(raw, &f.RipeAtOrBefore) == nil {
			f.Ripe = true
		}
	}
	return f, nil
}

type cyclePushResult struct {
	Index         int             `json:"index"`
	TransactionID string          `json:"transaction_id"`
	Status        string          `json:"status"`
	MessageID     *string         `json:"message_id"`
	PartitionID   string          `json:"partition_id,omitempty"`
	TraceID       json.RawMessage `json:"trace_id,omitempty"` // queued: the id or null
	QueueName     string          `json:"queueName"`
}

type cycleAckResult struct {
	Success       bool `json:"success"`
	Count         int  `json:"count"`
	LeaseReleased bool `json:"lease_released"`
	DLQ           bool `json:"dlq"`
}

type cycleResponse struct {
	Success         bool              `json:"success"`
	QueryID         string            `json:"query_id"`
	PartitionID     string            `json:"partition_id"`
	QueueName       *string           `json:"queueName"`
	StateOpsApplied int               `json:"state_ops_applied"`
	PushResults     []cyclePushResult `json:"push_results"`
	AckResult       *cycleAckResult   `json:"ack_result"`
	Error           string            `json:"error,omitempty"`
}

type wireOp struct {
	Type  json.RawMessage `json:"type"`
	Key   json.RawMessage `json:"key"`
	Value json.RawMessage `json:"value"`
}

type wireSinkItem struct {
	Queue         json.RawMessage `json:"queue"`
	Partition     json.RawMessage `json:"partition"`
	Payload       json.RawMessage `json:"payload"`
	TransactionID json.RawMessage `json:"transactionId"`
	MessageID     json.RawMessage `json:"messageId"`
	TraceID       json.RawMessage `json:"traceId"`
}

type wireAck struct {
	TransactionID json.RawMessage `json:"transactionId"`
	LeaseID       json.RawMessage `json:"leaseId"`
	Status        json.RawMessage `json:"status"`
	Count         *float64        `json:"count"`
	Error         json.RawMessage `json:"error"`
}

// text reads an optional JSON string field ("" when absent or null); ok is false for
// another JSON type.
func text(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// handleStreamCycle commits one cycle. Malformed ids are a 400; a cycle refused for its
// content, or rolled back, answers 200 with success false; the store failing, 5xx
// (clients retry those, and a retry stores no duplicate sink message).
func (a *api) handleStreamCycle(w http.ResponseWriter, r *http.Request) {
	body, err := a.streamBody(r)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	var in streams.CycleInput
	if in.QueryID, err = required(body, "query_id", false); err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	if in.PartitionID, err = required(body, "partition_id", false); err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	in.Group, _ = str(body, "consumer_group")
	if err := checkName("", "consumer_group", in.Group); err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	if in.ReleaseLease, err = boolField(body, "release_lease", true); err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	fail := func(msg string) {
		writeJSON(w, http.StatusOK, cycleResponse{QueryID: in.QueryID, PartitionID: in.PartitionID,
			PushResults: []cyclePushResult{}, Error: msg})
	}
	traces, err := cycleInput(body, &in)
	if err != nil {
		var ie *streams.InputError
		if errors.As(err, &ie) {
			writeError(w, a.opts.Logger, err)
			return
		}
		fail(err.Error())
		return
	}
	if len(in.Items) > a.opts.MaxPushItems {
		writeError(w, a.opts.Logger, &tooManyItems{n: len(in.Items), limit: a.opts.MaxPushItems})
		return
	}
	out, err := a.Streams.Cycle(r.Context(), a.opts.Tenant, producerSub(r), in)
	var f *streams.Failure
	switch {
	case errors.As(err, &f):
		fail(f.Msg)
		return
	case errors.Is(err, push.ErrSpooledAhead):
		// 503: the SDKs retry it (nothing was applied), and it commits once the spool's
		// replay caught up with the sink partition.
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error() + "; nothing was applied, retry later"})
		return
	case err != nil:
		writeError(w, a.opts.Logger, err)
		return
	}
	resp := cycleResponse{Success: true, QueryID: out.QueryID, PartitionID: out.PartitionID,
		StateOpsApplied: out.StateOpsApplied, PushResults: make([]cyclePushResult, len(out.Pushed))}
	if out.Queue != "" {
		resp.QueueName = &out.Queue
	}
	for i, p := range out.Pushed {
		resp.PushResults[i] = cyclePushResultOf(p, traces[i])
	}
	if out.Ack != nil {
		resp.AckResult = &cycleAckResult{Success: true, Count: out.Ack.Count, LeaseReleased: out.Ack.LeaseReleased, DLQ: out.Ack.DLQ}
	}
	writeJSON(w, http.StatusOK, resp)
}

func cyclePushResultOf(p push.Result, trace string) cyclePushResult {
	res := cyclePushResult{Index: p.Index, TransactionID: p.TransactionID, Status: string(p.Status), QueueName: p.Queue}
	if p.MessageID != ([16]byte{}) {
		id := uuid.UUID(p.MessageID).String()
		res.MessageID = &id
	}
	if p.Status == push.StatusQueued {
		res.PartitionID = p.PartitionID
		res.TraceID = json.RawMessage("null")
		if trace != "" {
			res.TraceID = json.RawMessage(`"` + trace + `"`)
		}
	}
	return res
}

func failf(format string, args ...any) error {
	return &streams.Failure{Msg: fmt.Sprintf(format, args...)}
}

// cycleInput reads state_ops, push_items and ack into in; it returns each item's trace
// id ("" when none). A *streams.InputError is a 400; another error fails the cycle.
func cycleInput(body map[string]json.RawMessage, in *streams.CycleInput) ([]string, error) {
	var ops []wireOp
	if raw := body["state_ops"]; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &ops); err != nil {
			return nil, failf("state_ops must be an array of objects")
		}
	}
	for i, op := range ops {
		t, ok := text(op.Type)
		if !ok {
			return nil, failf("Unknown state_op type: %s", op.Type)
		}
		o := streams.Op{Type: t}
		if len(op.Key) > 0 && string(op.Key) != "null" {
			k, ok := text(op.Key)
			if !ok {
				return nil, failf("state_ops[%d].key must be a string", i)
			}
			o.Key = &k
		}
		if len(op.Value) > 0 {
			o.Value = op.Value
		}
		in.Ops = append(in.Ops, o)
	}
	var items []wireSinkItem
	if raw := body["push_items"]; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, failf("push_items must be an array of objects")
		}
	}
	traces := make([]string, len(items))
	for i, it := range items {
		var si push.SinkItem
		var ok [5]bool
		var msgID string
		si.Queue, ok[0] = text(it.Queue)
		si.Partition, ok[1] = text(it.Partition)
		si.TransactionID, ok[2] = text(it.TransactionID)
		msgID, ok[3] = text(it.MessageID)
		si.TraceID, ok[4] = text(it.TraceID)
		for k, f := range []string{"queue", "partition", "transactionId", "messageId", "traceId"} {
			if !ok[k] {
				return nil, failf("push_items[%d].%s must be a string", i, f)
			}
		}
		if si.Queue == "" {
			return nil, failf("push_items[%d].queue is required", i)
		}
		id, err := streams.MessageID(msgID)
		if err != nil {
			return nil, err
		}
		si.MessageID = id
		if len(it.Payload) > 0 {
			si.Payload = it.Payload
		}
		if _, err := uuid.Parse(si.TraceID); err == nil && len(si.TraceID) == 36 {
			traces[i] = strings.ToLower(si.TraceID)
		}
		in.Items = append(in.Items, si)
	}
	if raw := body["ack"]; len(raw) > 0 && string(raw) != "null" {
		var wa wireAck
		if err := json.Unmarshal(raw, &wa); err != nil {
			return nil, failf("ack must be an object")
		}
		var ack streams.Ack
		var ok [4]bool
		ack.TransactionID, ok[0] = text(wa.TransactionID)
		ack.LeaseID, ok[1] = text(wa.LeaseID)
		ack.Status, ok[2] = text(wa.Status)
		ack.Error, ok[3] = text(wa.Error)
		for k, f := range []string{"transactionId", "leaseId", "status", "error"} {
			if !ok[k] {
				return nil, failf("ack.%s must be a string", f)
			}
		}
		if wa.Count != nil {
			ack.Count = int(*wa.Count)
		}
		in.Ack = &ack
	}
	return traces, nil
}
