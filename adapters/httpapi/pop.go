package httpapi

import (
	"errors"
	"fmt"
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

func (a *api) consumeRoutes(r *mux.Router) {
	// Queue and partition names may contain '/', sent as %2F (docs/design.md "Decisions":
	// a name is any valid UTF-8 without control characters). As the consumer-group routes
	// do (groups.go), the pop routes match the path as sent, in a router of their own, so
	// each name is exactly one path segment: "a%2Fpartition%2Fb" is a queue, not queue a's
	// partition b, and "a%2Fb" is not an unknown route. handlePop unescapes them.
	p := mux.NewRouter().UseEncodedPath().SkipClean(true)
	p.Use(markRoute) // the full pattern for the access log and the request metrics
	p.Use(a.checkParams(true))
	p.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		groupFallback(r.NotFoundHandler, http.NotFoundHandler()).ServeHTTP(w, req)
	})
	p.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		setAllow(w, p, req)
		groupFallback(r.MethodNotAllowedHandler, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
		})).ServeHTTP(w, req)
	})
	p.HandleFunc("/api/v1/pop/queue/{queue}/partition/{partition}", a.handlePop).Methods(http.MethodGet)
	p.HandleFunc("/api/v1/pop/queue/{queue}", a.handlePop).Methods(http.MethodGet)
	r.PathPrefix("/api/v1/pop/queue/").Handler(p)
	r.HandleFunc("/api/v1/pop", a.handlePop).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/ack", a.handleAck).Methods(http.MethodPost)
	r.HandleFunc("/api/v1/ack/batch", a.handleAckBatch).Methods(http.MethodPost)
	r.HandleFunc("/api/v1/lease/{leaseId}/extend", a.handleExtend).Methods(http.MethodPost)
	r.HandleFunc("/api/v1/transaction", a.handleTransaction).Methods(http.MethodPost)
}

func (a *api) handlePop(w http.ResponseWriter, r *http.Request) {
	vars, err := groupVars(r, "queue", "partition") // as sent (escaped), or absent on /api/v1/pop
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	q, err := parsePop(r.URL.Query(), vars[0], vars[1])
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
	writeEncoded(w, http.StatusOK, func(dst []byte) ([]byte, error) { return appendPop(dst, b) })
	a.opts.Stages.Pop.Answer.Since(b.Claimed)
}

// appendPop appends the answer of a pop that claimed b: the bytes json.Marshal writes
// for popBody(b) (pop_test.go holds it to that), without the reflection and the copies.
func appendPop(dst []byte, b *consume.Batch) ([]byte, error) {
	dst = append(dst, `{"success":true,"queue":`...)
	dst = appendString(dst, b.Queue)
	dst = append(dst, `,"partition":`...)
	dst = appendString(dst, b.Partition)
	dst = append(dst, `,"partitionId":`...)
	dst = appendString(dst, b.PartitionID)
	dst = append(dst, `,"leaseId":`...)
	dst = appendString(dst, b.LeaseID)
	dst = append(dst, `,"consumerGroup":`...)
	dst = appendString(dst, b.Group)
	dst = append(dst, `,"messages":[`...)
	for i := range b.Messages {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendPopMessage(dst, &b.Messages[i]); err != nil {
			return dst, fmt.Errorf("pop answer: message %d: %w", i, err)
		}
	}
	dst = append(dst, `],"partitionsClaimed":`...)
	dst = strconv.AppendInt(dst, int64(b.PartitionsClaimed), 10)
	return append(dst, '}'), nil
}

// appendPopMessage appends one message of a pop answer (popMessage's fields in order).
func appendPopMessage(dst []byte, m *consume.Message) ([]byte, error) {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, m.ID)
	dst = append(dst, `,"transactionId":`...)
	dst = appendString(dst, m.TransactionID)
	dst = append(dst, `,"traceId":`...)
	dst = appendOptional(dst, m.TraceID)
	dst = append(dst, `,"data":`...)
	dst, err := appendRaw(dst, m.Data)
	if err != nil {
		return dst, err
	}
	dst = append(dst, `,"producerSub":`...)
	dst = appendOptional(dst, m.ProducerSub)
	dst = append(dst, `,"createdAt":"`...)
	dst = m.CreatedAt.UTC().AppendFormat(dst, timeFormat)
	dst = append(dst, `","partitionId":`...)
	dst = appendString(dst, m.PartitionID)
	dst = append(dst, `,"partition":`...)
	dst = appendString(dst, m.Partition)
	dst = append(dst, `,"leaseId":`...)
	dst = appendString(dst, m.LeaseID)
	dst = append(dst, `,"consumerGroup":`...)
	dst = appendString(dst, m.Group)
	dst = append(dst, `,"deliveryAttempt":`...)
	dst = strconv.AppendInt(dst, int64(m.Attempt), 10)
	return append(dst, '}'), nil
}

// appendOptional appends s, or null when it is empty (popMessage's *string fields).
func appendOptional(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	return appendString(dst, s)
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
	// The form is the use case's to judge (now, or RFC 3339); the range is this edge's.
	if t, err := time.Parse(time.RFC3339Nano, pq.SubscriptionFrom); err == nil {
		if err := checkTime("query parameter", "subscriptionFrom", t); err != nil {
			return pq, err
		}
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
