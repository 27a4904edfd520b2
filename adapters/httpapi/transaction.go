package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/core/encryption"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/ports"
)

// txnOp is one operation on the wire; a push carries items, or one flat item in the
// op's own fields (the embedded txnPushItem, whose fields encoding/json promotes; an
// ack reads its transactionId there too).
type txnOp struct {
	Type  string        `json:"type"`
	Items []txnPushItem `json:"items"`
	txnPushItem
	PartitionID   string  `json:"partitionId"`
	Status        string  `json:"status"`
	ConsumerGroup string  `json:"consumerGroup"`
	LeaseID       string  `json:"leaseId"`
	Error         *string `json:"error"`
}

type txnPushItem struct {
	Queue         *string         `json:"queue"`
	Partition     *string         `json:"partition"`
	Payload       json.RawMessage `json:"payload"`
	Data          json.RawMessage `json:"data"`
	TransactionID string          `json:"transactionId"`
	TraceID       string          `json:"traceId"`
}

type txnResponse struct {
	TransactionID string      `json:"transactionId"`
	Success       bool        `json:"success"`
	Error         string      `json:"error,omitempty"`
	Reason        string      `json:"reason,omitempty"`
	Results       []txnResult `json:"results"`
}

type txnResult struct {
	Index         int     `json:"index"`
	Type          string  `json:"type"`
	Success       bool    `json:"success"`
	TransactionID string  `json:"transactionId"`
	Error         *string `json:"error,omitempty"`
	DLQ           *bool   `json:"dlq,omitempty"`
	MessageID     string  `json:"messageId,omitempty"`
	QueueName     string  `json:"queueName,omitempty"`
	Duplicate     bool    `json:"duplicate,omitempty"`
}

// handleTransaction commits every push and ack of the request in one PostgreSQL
// transaction (docs/api.md §5.4). Rolled-back transactions answer 200 with success false.
func (a *api) handleTransaction(w http.ResponseWriter, r *http.Request) {
	id, err := uuid.NewV7()
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	resp := txnResponse{TransactionID: id.String(), Results: []txnResult{}}
	fail := func(code int, msg, reason string) {
		resp.Error, resp.Reason = msg, reason
		writeJSON(w, code, resp)
	}
	var body struct {
		Operations     *[]txnOp `json:"operations"`
		RequiredLeases []string `json:"requiredLeases"`
	}
	if err := a.decodeBody(r, &body); err != nil {
		if statusOf(err) == http.StatusBadRequest {
			fail(http.StatusBadRequest, err.Error(), "bad_request")
			return
		}
		writeError(w, a.opts.Logger, err)
		return
	}
	if body.Operations == nil {
		fail(http.StatusBadRequest, "transaction requires an operations array", "bad_request")
		return
	}
	if len(*body.Operations) == 0 {
		// Queen's text (docs/reliability.md bad input #25): an empty transaction is a client mistake,
		// not a commit of nothing.
		fail(http.StatusBadRequest, "operations array cannot be empty", "bad_request")
		return
	}
	ops, err := txnOps(*body.Operations)
	if err != nil {
		fail(http.StatusBadRequest, err.Error(), "bad_request")
		return
	}
	hint := ""
	if len(body.RequiredLeases) == 1 && consume.IsUUID(body.RequiredLeases[0]) {
		hint = body.RequiredLeases[0]
	}
	res, err := a.Push.Transaction(r.Context(), a.opts.Tenant, producerSub(r), ops, hint)
	var rb *ports.RollbackError
	switch {
	case errors.As(err, &rb):
		fail(http.StatusOK, rb.Msg, rb.Reason)
		return
	case statusOf(err) == http.StatusBadRequest:
		fail(http.StatusBadRequest, err.Error(), "bad_request") // an operation that names nothing
		return
	case errors.Is(err, push.ErrSpooledAhead):
		// 503: retried by clients (nothing was applied), and succeeds once replay caught up.
		fail(http.StatusServiceUnavailable, err.Error()+"; nothing was applied, retry later", "spooled")
		return
	case errors.Is(err, encryption.ErrNoKey), errors.Is(err, encryption.ErrSeal), errors.Is(err, encryption.ErrFlagUnknown):
		// A push to an encrypted queue this broker cannot seal for: the whole transaction
		// is refused before anything is applied, with the reason (not the generic 5xx body).
		fail(statusOf(err), err.Error(), "encryption")
		return
	case err != nil:
		writeError(w, a.opts.Logger, err)
		return
	}
	resp.Success = true
	resp.Results = make([]txnResult, len(res))
	for i, tr := range res {
		resp.Results[i] = txnResultOf(i, ops[i], tr)
	}
	writeJSON(w, http.StatusOK, resp)
}

func txnResultOf(i int, op push.TxnOp, tr push.TxnResult) txnResult {
	if op.Push != nil {
		p := tr.Push
		return txnResult{Index: i, Type: "push", Success: true, TransactionID: p.TransactionID,
			MessageID: uuid.UUID(p.MessageID).String(), QueueName: p.Queue, Duplicate: p.Status == push.StatusDuplicate}
	}
	ar := tr.Ack
	out := txnResult{Index: i, Type: "ack", Success: ar.OK, TransactionID: op.Ack.TransactionID, DLQ: &ar.DLQ}
	if !ar.OK {
		out.Error = &ar.Error
	}
	return out
}

// txnOps flattens the wire operations into one op per result slot and validates them.
func txnOps(wire []txnOp) ([]push.TxnOp, error) {
	var ops []push.TxnOp
	for i, op := range wire {
		switch op.Type {
		case "push":
			items := op.Items
			if items == nil {
				items = []txnPushItem{op.txnPushItem}
			}
			for k, it := range items {
				p, err := txnPush(it)
				if err != nil {
					return nil, badRequestf("operation %d item %d: %v", i, k, err)
				}
				ops = append(ops, push.TxnOp{Push: p})
			}
		case "ack":
			in := consume.AckInput{TransactionID: op.TransactionID, PartitionID: op.PartitionID,
				Status: op.Status, Group: op.ConsumerGroup, LeaseID: op.LeaseID}
			if op.Error != nil {
				in.Error = *op.Error
			}
			if err := txnAck(in); err != nil {
				return nil, badRequestf("operation %d: %v", i, err)
			}
			ops = append(ops, push.TxnOp{Ack: &in})
		default:
			return nil, badRequestf("segments transaction supports only push and ack operations (operation %d has type %q)", i, op.Type)
		}
	}
	return ops, nil
}

// txnAck checks an ack operation as a 400 must refuse it (docs/api.md §5.4): one that cannot
// name a message (consume's rule), or whose text PostgreSQL cannot hold. Unlike
// /api/v1/ack, which answers per item, a transaction is refused whole.
func txnAck(in consume.AckInput) error {
	if _, err := in.Item(); err != nil {
		return err
	}
	if err := checkName("", "consumerGroup", in.Group); err != nil {
		return err
	}
	for _, f := range [...]struct{ name, v string }{{"transactionId", in.TransactionID}, {"status", in.Status}, {"error", in.Error}} {
		if err := checkText("", f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

func txnPush(it txnPushItem) (*push.TxnPush, error) {
	if it.Queue == nil {
		return nil, errors.New("missing field `queue`")
	}
	p := &push.TxnPush{Item: push.Item{Queue: *it.Queue, TransactionID: it.TransactionID, Payload: it.Payload},
		TraceID: it.TraceID}
	if it.Partition != nil {
		p.Partition = *it.Partition
		if p.Partition == "" {
			return nil, errors.New("partition must not be empty (omit it for Default)")
		}
	}
	if len(p.Payload) == 0 {
		p.Payload = it.Data
	}
	if len(p.Payload) == 0 {
		p.Payload = json.RawMessage("{}")
	}
	if err := push.Validate([]push.Item{p.Item}); err != nil {
		var ie *push.InputError
		if errors.As(err, &ie) {
			return nil, errors.New(ie.Field + " " + ie.Msg)
		}
		return nil, err
	}
	return p, nil
}
