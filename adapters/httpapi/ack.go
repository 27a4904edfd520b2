package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/core/loglimit"
	"github.com/queen-go/queen/ports"
)

// ackItem is one acknowledgement on the wire (docs/api.md §5.3).
type ackItem struct {
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	Status        string `json:"status"`
	ConsumerGroup string `json:"consumerGroup"`
	LeaseID       string `json:"leaseId"`
	Error         string `json:"error"`
}

func (it ackItem) input(group string) consume.AckInput {
	if it.ConsumerGroup != "" {
		group = it.ConsumerGroup
	}
	return consume.AckInput{TransactionID: it.TransactionID, PartitionID: it.PartitionID, Status: it.Status,
		Group: group, LeaseID: it.LeaseID, Error: it.Error}
}

func (a *api) handleAck(w http.ResponseWriter, r *http.Request) {
	var it ackItem
	if err := a.decodeBody(r, &it); err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	a.ack(w, r, []consume.AckInput{it.input("")})
}

// ackBatchBody is an ack/batch request body.
type ackBatchBody struct {
	ConsumerGroup   string     `json:"consumerGroup"`
	Acknowledgments *[]ackItem `json:"acknowledgments"`
}

func (a *api) handleAckBatch(w http.ResponseWriter, r *http.Request) {
	raw, err := readBody(r, a.opts.MaxBodyBytes)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	var body ackBatchBody
	if !fastAckBatch(raw, &body) {
		body = ackBatchBody{}
		if err := json.Unmarshal(raw, &body); err != nil {
			writeError(w, a.opts.Logger, badRequestf("bad body: %v", err))
			return
		}
	}
	if body.Acknowledgments == nil {
		writeError(w, a.opts.Logger, badRequestf("bad body: missing field `acknowledgments`"))
		return
	}
	in := make([]consume.AckInput, len(*body.Acknowledgments))
	for i, it := range *body.Acknowledgments {
		in[i] = it.input(body.ConsumerGroup)
	}
	a.ack(w, r, in)
}

func (a *api) ack(w http.ResponseWriter, r *http.Request, in []consume.AckInput) {
	res, err := a.Consume.Ack(r.Context(), a.opts.Tenant, in)
	if err != nil {
		// An ack answers 200 whatever the database did (docs/api.md §5.3): the items it did
		// not take fail, and the lease expiry redelivers what they covered.
		a.opts.Logger.Log(r.Context(), failureLevel(r, err), "ack failed", loglimit.Cause("ack failed"), "items", len(in), "err", err)
	}
	writeEncoded(w, http.StatusOK, func(dst []byte) ([]byte, error) { return appendAckResults(dst, in, res), nil })
}

// appendAckResults appends the answer of an ack: one ackResult per input, in order (the
// bytes json.Marshal writes for them but for its HTML escapes, ack_test.go).
func appendAckResults(dst []byte, in []consume.AckInput, res []ports.AckResult) []byte {
	dst = append(dst, '[')
	for i := range res {
		if i > 0 {
			dst = append(dst, ',')
		}
		rr := &res[i]
		dst = append(dst, `{"index":`...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, `,"transactionId":`...)
		dst = appendString(dst, in[i].TransactionID)
		dst = append(dst, `,"success":`...)
		dst = strconv.AppendBool(dst, rr.OK)
		dst = append(dst, `,"error":`...)
		if rr.OK {
			dst = append(dst, "null"...)
		} else {
			dst = appendString(dst, rr.Error)
		}
		dst = append(dst, `,"leaseReleased":`...)
		dst = strconv.AppendBool(dst, rr.LeaseReleased)
		dst = append(dst, `,"dlq":`...)
		dst = strconv.AppendBool(dst, rr.DLQ)
		dst = append(dst, `,"noop":`...)
		dst = strconv.AppendBool(dst, rr.Noop)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// decodeBody reads a JSON body into v; an unparseable body is a 400 "bad body: ...".
func (a *api) decodeBody(r *http.Request, v any) error {
	b, err := readBody(r, a.opts.MaxBodyBytes)
	if err != nil {
		return err
	}
	// encoding/json would replace invalid bytes in strings with U+FFFD: a name would be
	// taken as another name (docs/reliability.md bad input #10).
	if !utf8.Valid(b) {
		return badRequestf("bad body: invalid JSON: not valid UTF-8")
	}
	if err := json.Unmarshal(b, v); err != nil {
		return badRequestf("bad body: %v", err)
	}
	return nil
}

// maxLeaseSeconds caps a lease extension at a year: the database takes the seconds as a
// 4-byte integer, and a larger value would wrap to a negative (already expired) lease.
const maxLeaseSeconds = 365 * 24 * 3600

type extendResponse struct {
	LeaseID        string  `json:"leaseId"`
	Success        bool    `json:"success"`
	Renewed        int     `json:"renewed"`
	NewExpiresAt   *string `json:"newExpiresAt"`
	ExpiresAt      *string `json:"expiresAt"`
	LeaseExpiresAt *string `json:"lease_expires_at"`
}

// handleExtend renews a pop's leases. The body is optional: {"seconds": n}, anything
// else (empty, unparseable, not positive) means 60 s; never a 400 (docs/api.md §5.5).
func (a *api) handleExtend(w http.ResponseWriter, r *http.Request) {
	leaseID := mux.Vars(r)["leaseId"]
	seconds := 60
	if b, err := readBody(r, a.opts.MaxBodyBytes); err == nil && len(b) > 0 {
		var body struct {
			Seconds *int `json:"seconds"`
		}
		if json.Unmarshal(b, &body) == nil && body.Seconds != nil && *body.Seconds > 0 {
			seconds = min(*body.Seconds, maxLeaseSeconds)
		}
	}
	n, exp, err := a.Consume.ExtendLease(r.Context(), leaseID, time.Duration(seconds)*time.Second)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	resp := extendResponse{LeaseID: leaseID, Success: n > 0, Renewed: n}
	if n > 0 {
		s := exp.UTC().Format(timeFormat)
		resp.NewExpiresAt, resp.ExpiresAt, resp.LeaseExpiresAt = &s, &s, &s
	}
	writeJSON(w, http.StatusOK, resp)
}
