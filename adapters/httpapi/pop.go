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
)

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
	q, err := parsePop(r.URL.Query(), vars["queue"], vars["partition"])
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	q.Tenant = a.opts.Tenant
	b, err := a.Consume.Pop(r.Context(), q)
	switch {
	case errors.Is(err, consume.ErrDiscoveryRequired):
		// A struct, not a map: the reference renders success, error, messages in that
		// order.
		writeJSON(w, http.StatusBadRequest, struct {
			Success  bool     `json:"success"`
			Error    string   `json:"error"`
			Messages []string `json:"messages"`
		}{Error: err.Error(), Messages: []string{}})
		return
	case err != nil:
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

// parsePop reads a pop's path variables and query string strictly: a value that does
// not parse is a 400 that names the parameter. What the values mean (defaults, names,
// subscriptions) is the use case's business (consume.Service.Request).
func parsePop(q url.Values, queue, partition string) (consume.PopQuery, error) {
	pq := consume.PopQuery{Queue: queue, Partition: partition, Batch: 200, Partitions: 1,
		Timeout: consume.TimeoutDefault, Group: q.Get("consumerGroup"),
		SubscriptionFrom: q.Get("subscriptionFrom")}
	if queue == "" {
		pq.Namespace, pq.Task = q.Get("namespace"), q.Get("task")
	}
	if m, ok := q["subscriptionMode"]; ok {
		pq.SubscriptionMode, pq.HasSubscriptionMode = m[0], true
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
	timeoutMS := -1
	intParam("batch", 1, &pq.Batch)
	intParam("partitions", 1, &pq.Partitions)
	intParam("leaseSeconds", 0, &pq.LeaseSeconds)
	intParam("timeout", 0, &timeoutMS)
	boolParam("wait", &pq.Wait)
	boolParam("autoAck", &pq.AutoAck)
	if timeoutMS >= 0 {
		pq.Timeout = time.Duration(timeoutMS) * time.Millisecond
	}
	return pq, err
}
