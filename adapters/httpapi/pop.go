package httpapi

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/core/names"
	"github.com/queen-go/queen/ports"
)

// PopDefaults are the pop parameters a request may omit (api.md §5.2, §6.2).
type PopDefaults struct {
	Timeout          time.Duration // DEFAULT_TIMEOUT
	SubscriptionMode string        // DEFAULT_SUBSCRIPTION_MODE: "all" (default) or "new"
}

// timeFormat is the wire form of message and lease timestamps: UTC, microseconds.
const timeFormat = "2006-01-02T15:04:05.000000Z"

type popResponse struct {
	Success           bool         `json:"success"`
	Queue             string       `json:"queue"`
	Partition         string       `json:"partition"`
	PartitionID       string       `json:"partitionId"`
	LeaseID           string       `json:"leaseId"`
	ConsumerGroup     string       `json:"consumerGroup"`
	Messages          []popMessage `json:"messages"`
	PartitionsClaimed int          `json:"partitionsClaimed"`
}

type popMessage struct {
	ID              string          `json:"id"`
	TransactionID   string          `json:"transactionId"`
	TraceID         *string         `json:"traceId"`
	Data            json.RawMessage `json:"data"`
	ProducerSub     *string         `json:"producerSub"`
	CreatedAt       string          `json:"createdAt"`
	PartitionID     string          `json:"partitionId"`
	Partition       string          `json:"partition"`
	LeaseID         string          `json:"leaseId"`
	ConsumerGroup   string          `json:"consumerGroup"`
	DeliveryAttempt int             `json:"deliveryAttempt"`
}

func (a *api) consumeRoutes(r *mux.Router) {
	r.HandleFunc("/api/v1/pop/queue/{queue}/partition/{partition}", a.handlePop).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/pop/queue/{queue}", a.handlePop).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/pop", a.handlePop).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/ack", a.handleAck).Methods(http.MethodPost)
	r.HandleFunc("/api/v1/ack/batch", a.handleAckBatch).Methods(http.MethodPost)
	r.HandleFunc("/api/v1/lease/{leaseId}/extend", a.handleExtend).Methods(http.MethodPost)
	r.HandleFunc("/api/v1/transaction", a.handleTransaction).Methods(http.MethodPost)
}

func (a *api) handlePop(w http.ResponseWriter, r *http.Request) {
	vars := mux.Vars(r)
	req, wait, err := parsePop(r.URL.Query(), vars["queue"], vars["partition"], a.opts.Pop)
	if err != nil {
		var dr *discoveryRequired
		if errors.As(err, &dr) {
			// A struct, not a map: the reference renders success, error, messages in
			// that order.
			writeJSON(w, http.StatusBadRequest, struct {
				Success  bool     `json:"success"`
				Error    string   `json:"error"`
				Messages []string `json:"messages"`
			}{Error: dr.Error(), Messages: []string{}})
			return
		}
		writeError(w, a.opts.Logger, err)
		return
	}
	req.Tenant = a.opts.Tenant
	b, err := a.Consume.Pop(r.Context(), req, wait)
	if err != nil {
		if r.Context().Err() != nil {
			return // the client went away while parked: nobody to answer
		}
		writeError(w, a.opts.Logger, err)
		return
	}
	if b == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, popBody(b))
}

func popBody(b *consume.Batch) popResponse {
	resp := popResponse{Success: true, Queue: b.Queue, Partition: b.Partition, PartitionID: b.PartitionID,
		LeaseID: b.LeaseID, ConsumerGroup: b.Group, PartitionsClaimed: b.PartitionsClaimed,
		Messages: make([]popMessage, len(b.Messages))}
	for i := range b.Messages {
		m := &b.Messages[i]
		pm := popMessage{ID: m.ID, TransactionID: m.TransactionID, Data: m.Data,
			CreatedAt: m.CreatedAt.UTC().Format(timeFormat), PartitionID: m.PartitionID, Partition: m.Partition,
			LeaseID: m.LeaseID, ConsumerGroup: m.Group, DeliveryAttempt: m.Attempt}
		if m.TraceID != "" {
			pm.TraceID = &m.TraceID
		}
		if m.ProducerSub != "" {
			pm.ProducerSub = &m.ProducerSub
		}
		resp.Messages[i] = pm
	}
	return resp
}

// discoveryRequired is the discovery pop without namespace or task, answered with the
// reference's pop-shaped error body.
type discoveryRequired struct{}

func (*discoveryRequired) Error() string { return "namespace or task is required" }

// parsePop reads a pop's path variables and query strictly: a bad value is a 400 that
// names the parameter. It returns the request and the long-poll wait (0 = none).
func parsePop(q url.Values, queue, partition string, def PopDefaults) (ports.PopRequest, time.Duration, error) {
	req := ports.PopRequest{Queue: queue, Partition: partition, Group: ports.QueueModeGroup, Batch: 200, Partitions: 1}
	if queue == "" {
		req.Namespace, req.Task = q.Get("namespace"), q.Get("task")
		if req.Namespace == "" && req.Task == "" {
			return req, 0, &discoveryRequired{}
		}
	} else if err := names.Check(queue); err != nil {
		return req, 0, badRequestf("queue name %s", err)
	}
	if partition != "" {
		if err := names.Check(partition); err != nil {
			return req, 0, badRequestf("partition name %s", err)
		}
	}
	var err error
	// Values travel to the database as int4: a larger one would wrap around (batch
	// 4294967297 would mean 1), so it is refused like any other bad value.
	intParam := func(name string, lo int, dst *int) {
		v, ok := q[name]
		if err != nil || !ok {
			return
		}
		n, perr := strconv.Atoi(v[0])
		if perr != nil || n < lo || n > math.MaxInt32 {
			err = badRequestf("query parameter %s=%q: want an integer from %d to %d", name, v[0], lo, math.MaxInt32)
			return
		}
		*dst = n
	}
	boolParam := func(name string, dst *bool) {
		v, ok := q[name]
		if err != nil || !ok {
			return
		}
		switch v[0] {
		case "true":
			*dst = true
		case "false":
			*dst = false
		default:
			err = badRequestf("query parameter %s=%q: want true or false", name, v[0])
		}
	}
	var wait bool
	timeoutMS := int(def.Timeout / time.Millisecond)
	intParam("batch", 1, &req.Batch)
	intParam("partitions", 1, &req.Partitions)
	intParam("leaseSeconds", 0, &req.LeaseSeconds)
	intParam("timeout", 0, &timeoutMS)
	boolParam("wait", &wait)
	boolParam("autoAck", &req.AutoAck)
	if err != nil {
		return req, 0, err
	}
	if partition != "" {
		req.Partitions = 1
	}
	if g := q.Get("consumerGroup"); g != "" {
		if err := names.Check(g); err != nil {
			return req, 0, badRequestf("query parameter consumerGroup %s", err)
		}
		req.Group = g
	}
	if err := parseSubscription(q, def.SubscriptionMode, &req); err != nil {
		return req, 0, err
	}
	if !wait {
		return req, 0, nil
	}
	return req, time.Duration(timeoutMS) * time.Millisecond, nil
}

// parseSubscription applies subscriptionMode and subscriptionFrom to a named group's
// first contact; queue mode always starts at the beginning. subscriptionFrom is checked
// in queue mode too: a bad value is a bad request whatever the group.
func parseSubscription(q url.Values, def string, req *ports.PopRequest) error {
	var from time.Time
	fromGiven := false
	switch v := q.Get("subscriptionFrom"); v {
	case "", "now":
	default:
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return badRequestf("query parameter subscriptionFrom=%q: want now or an RFC 3339 timestamp", v)
		}
		from, fromGiven = t, true
	}
	req.SubscribeMode = ports.SubscribeAll
	if req.Group == ports.QueueModeGroup {
		return nil
	}
	mode, given := q["subscriptionMode"]
	switch {
	case !given:
		if def == ports.SubscribeNew {
			req.SubscribeMode = ports.SubscribeNew
		}
	case mode[0] == "new" || mode[0] == "new-only" || mode[0] == "new_only" || mode[0] == "newonly":
		req.SubscribeMode = ports.SubscribeNew
	}
	switch {
	case fromGiven:
		req.SubscribeMode, req.SubscribeFrom = ports.SubscribeTimestamp, from
	case q.Get("subscriptionFrom") == "now":
		req.SubscribeMode = ports.SubscribeNew
	}
	return nil
}
