package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/ports"
)

type deleteQueueResponse struct {
	Deleted bool   `json:"deleted"`
	Existed bool   `json:"existed"`
	Queue   string `json:"queue"`
	Message string `json:"message,omitempty"`
}

// handleDeleteQueue is DELETE /api/v1/resources/queues/{queue} (docs/api.md §5.7): 200 also
// when there was nothing to delete.
func (a *api) handleDeleteQueue(w http.ResponseWriter, r *http.Request) {
	queue := mux.Vars(r)["queue"]
	existed, err := a.Queues.DeleteQueue(r.Context(), a.opts.Tenant, queue)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	body := deleteQueueResponse{Deleted: existed, Existed: existed, Queue: queue}
	if !existed {
		body.Message = "Queue not found, nothing was deleted"
	}
	writeJSON(w, http.StatusOK, body)
}

type deadLetter struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition"`
	ConsumerGroup string          `json:"consumerGroup"`
	ErrorMessage  *string         `json:"errorMessage"`
	RetryCount    int             `json:"retryCount"`
	Data          json.RawMessage `json:"data"` // nil encodes as null
	ProducerSub   *string         `json:"producerSub"`
	CreatedAt     string          `json:"createdAt"`
	FailedAt      string          `json:"failedAt"`
	IsEncrypted   *bool           `json:"isEncrypted,omitempty"` // only when data could not be decrypted
}

type pagination struct {
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

type deadLettersResponse struct {
	Messages   []deadLetter `json:"messages"`
	Pagination pagination   `json:"pagination"`
	Total      int          `json:"total"` // the page's length, as Queen reports it
}

// handleDeadLetters is GET /api/v1/dlq (docs/api.md §5.8): newest failure first.
func (a *api) handleDeadLetters(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := ports.DeadLetterFilter{Queue: q.Get("queue"), ConsumerGroup: q.Get("consumerGroup")}
	var err error
	if f.Limit, err = intParam(q, "limit", queues.DefaultDeadLetterLimit); err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	if f.Offset, err = intParam(q, "offset", 0); err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	page, err := a.Queues.DeadLetters(r.Context(), a.opts.Tenant, f)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	dls := page.Letters
	out := deadLettersResponse{Messages: make([]deadLetter, len(dls)), Pagination: pagination{page.Limit, page.Offset}, Total: len(dls)}
	for i, d := range dls {
		m := deadLetter{
			ID: d.ID, TransactionID: d.TransactionID, PartitionID: d.PartitionID, Queue: d.Queue,
			Partition: d.Partition, ConsumerGroup: d.ConsumerGroup, ErrorMessage: d.ErrorMessage,
			RetryCount: d.RetryCount, Data: d.Data,
			CreatedAt: d.CreatedAt.UTC().Format(timeFormat), FailedAt: d.FailedAt.UTC().Format(timeFormat),
		}
		if d.ProducerSub != "" {
			m.ProducerSub = &d.ProducerSub
		}
		if d.Encrypted {
			m.IsEncrypted = &d.Encrypted
		}
		out.Messages[i] = m
	}
	writeJSON(w, http.StatusOK, out)
}

// intParam reads an optional integer query parameter.
func intParam(q url.Values, name string, def int) (int, error) {
	s := q.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, badRequestf("%s must be an integer, got %q", name, s)
	}
	return n, nil
}
