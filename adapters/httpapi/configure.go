package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/ports"
)

// adminRoutes registers configure, queue deletion and the dead-letter listing.
func (a *api) adminRoutes(r *mux.Router) {
	r.HandleFunc("/api/v1/configure", a.handleConfigure).Methods(http.MethodPost)
	// ".+": a queue name may contain '/' (sent as %2F, matched decoded).
	r.HandleFunc("/api/v1/resources/queues/{queue:.+}", a.handleDeleteQueue).Methods(http.MethodDelete)
	r.HandleFunc("/api/v1/dlq", a.handleDeadLetters).Methods(http.MethodGet)
}

type configureResponse struct {
	Configured  bool               `json:"configured"`
	QueueID     string             `json:"queueId"`
	PartitionID *string            `json:"partitionId"` // always null: queues are configured, not partitions
	Queue       string             `json:"queue"`
	Namespace   string             `json:"namespace"`
	Task        string             `json:"task"`
	Storage     string             `json:"storage"`
	Options     ports.QueueOptions `json:"options"`
}

func configureBody(c ports.QueueConfig) configureResponse {
	return configureResponse{Configured: true, QueueID: c.ID, Queue: c.Name, Namespace: c.Namespace, Task: c.Task,
		Storage: "segments", Options: c.QueueOptions}
}

// handleConfigure is POST /api/v1/configure (docs/api.md §5.6).
func (a *api) handleConfigure(w http.ResponseWriter, r *http.Request) {
	b, err := readBody(r, a.opts.MaxBodyBytes)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	req, err := parseConfigure(b)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	cfg, err := a.Queues.Configure(r.Context(), a.opts.Tenant, req)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	writeJSON(w, http.StatusOK, configureBody(cfg))
}

// parseConfigure reads the request's shape: the queue (a string, possibly empty), the
// mode, and the options, from "options" or else from the top level, with a top-level
// namespace or task folded in when "options" lacks it. The option values themselves are
// checked by the use case.
func parseConfigure(b []byte) (queues.Request, error) {
	var body map[string]json.RawMessage
	if err := json.Unmarshal(b, &body); err != nil {
		return queues.Request{}, badRequestf("bad body: %v", err)
	}
	var req queues.Request
	raw := body["queue"]
	if len(raw) == 0 || raw[0] != '"' {
		return req, badRequestf("queue is required")
	}
	if !utf8.Valid(raw) { // encoding/json would silently replace the bad bytes
		return req, badRequestf("bad body: queue is not valid UTF-8")
	}
	if err := json.Unmarshal(raw, &req.Queue); err != nil {
		return req, badRequestf("bad body: queue: %v", err)
	}
	switch raw := body["mode"]; {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '"':
		if err := json.Unmarshal(raw, &req.Mode); err != nil {
			return req, badRequestf("bad body: mode: %v", err)
		}
	default:
		return req, badRequestf(`mode must be "merge" or "replace", got %s`, raw)
	}
	switch raw := body["options"]; {
	case len(raw) == 0 || string(raw) == "null":
		req.Options = make(map[string]json.RawMessage)
		for k, v := range body {
			if queues.IsOption(k) {
				req.Options[k] = v
			}
		}
	case raw[0] == '{':
		if err := json.Unmarshal(raw, &req.Options); err != nil {
			return req, badRequestf("bad body: options: %v", err)
		}
		for _, k := range []string{"namespace", "task"} {
			v, top := body[k]
			if _, inOptions := req.Options[k]; top && !inOptions && string(v) != `""` && string(v) != "null" {
				req.Options[k] = v
			}
		}
	default:
		return req, badRequestf("bad body: options must be an object")
	}
	if err := parseShard(body, &req); err != nil {
		return req, err
	}
	for k, v := range req.Options {
		if !utf8.Valid(v) {
			return req, badRequestf("bad body: option %s is not valid UTF-8", k)
		}
	}
	return req, nil
}

// parseShard reads the shard option (docs/api.md §5.6: an operator's placement of a new
// queue among QUEEN_SHARDS), from "options" or else from the top level; it is not one of
// the stored options.
func parseShard(body map[string]json.RawMessage, req *queues.Request) error {
	raw, ok := req.Options["shard"]
	if ok {
		delete(req.Options, "shard")
	} else if raw, ok = body["shard"]; !ok {
		return nil
	}
	if string(raw) == "null" {
		return nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil {
		return &queues.InputError{Option: "shard", Msg: fmt.Sprintf("option shard must be an integer, got %s", raw)}
	}
	req.Shard = &n
	return nil
}
