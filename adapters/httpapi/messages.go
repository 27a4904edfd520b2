package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/core/loglimit"
)

// messagesRoutes registers the message browser, one message's detail, dead-letter
// deletion, retry, replay and purge (docs/api.md §5.8). A transaction id may contain '/'
// (sent as %2F, matched decoded): its pattern ".+" takes the rest of the path, so the
// retry route is told apart by its method.
func (a *api) messagesRoutes(r *mux.Router) {
	r.HandleFunc("/api/v1/messages", a.handleMessages).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/messages/{partitionId}/{transactionId:.+}/retry", a.handleRetryMessage).Methods(http.MethodPost)
	r.HandleFunc("/api/v1/messages/{partitionId}/{transactionId:.+}", a.handleMessage).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/messages/{partitionId}/{transactionId:.+}", a.handleDeleteMessage).Methods(http.MethodDelete)
	r.HandleFunc("/api/v1/dlq", a.handlePurgeDeadLetters).Methods(http.MethodDelete)
	r.HandleFunc("/api/v1/dlq/{id}/replay", a.handleReplayDeadLetter).Methods(http.MethodPost)
}

// msgTimeParam reads an optional RFC 3339 timestamp (or a date, midnight UTC).
func msgTimeParam(q url.Values, name string) (time.Time, error) {
	s := q.Get(name)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, checkTime("", name, t)
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, checkTime("", name, t)
	}
	return time.Time{}, badRequestf("%s must be an RFC 3339 timestamp (e.g. 2026-05-01T10:00:00Z) or a date (2026-05-01), got %q", name, s)
}

// msgTime renders an optional timestamp: null when zero.
func msgTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(timeFormat)
	return &s
}

// msgString renders an optional string: null when empty.
func msgString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type msgBusStatus struct {
	ConsumedBy  int `json:"consumedBy"`
	TotalGroups int `json:"totalGroups"`
}

type msgSegment struct {
	Seq      int64 `json:"seq"`      // base offset of the segment
	FrameIdx int64 `json:"frameIdx"` // the message's frame in it
}

type msgMode struct {
	HasQueueMode   bool   `json:"hasQueueMode"`
	BusGroupsCount int    `json:"busGroupsCount"`
	Type           string `json:"type"`
}

func msgModeOf(m admin.Mode) msgMode {
	return msgMode{HasQueueMode: m.HasQueueMode, BusGroupsCount: m.BusGroups, Type: m.Type}
}

// msgListItem is one message of GET /api/v1/messages, keys in docs/api.md's order. Fields
// known only from the segment (id, transaction id, payload...) are null when it could
// not be read (payloadAvailable false).
type msgListItem struct {
	ID               *string         `json:"id"`
	TransactionID    *string         `json:"transactionId"`
	TxnHash          *string         `json:"txnHash"`
	PartitionID      string          `json:"partitionId"`
	QueuePath        string          `json:"queuePath"`
	Queue            string          `json:"queue"`
	Partition        string          `json:"partition"`
	Namespace        string          `json:"namespace"`
	Task             string          `json:"task"`
	Status           string          `json:"status"`
	QueueStatus      string          `json:"queueStatus"`
	BusStatus        msgBusStatus    `json:"busStatus"`
	TraceID          *string         `json:"traceId"`
	ProducerSub      *string         `json:"producerSub"`
	QueuePriority    int             `json:"queuePriority"`
	PayloadAvailable bool            `json:"payloadAvailable"`
	Segment          msgSegment      `json:"segment"`
	CreatedAt        string          `json:"createdAt"`
	LeaseExpiresAt   *string         `json:"leaseExpiresAt"`
	Data             json.RawMessage `json:"data"`
	Payload          json.RawMessage `json:"payload"`
	IsEncrypted      bool            `json:"isEncrypted"`
}

type msgListResponse struct {
	Messages []msgListItem `json:"messages"`
	Mode     msgMode       `json:"mode"`
	Total    int           `json:"total"` // the page's length, as Queen reports it
	// Pagination is the paging applied (a limit above the maximum is clamped); Queen
	// does not send it, and its clients ignore unknown keys (docs/api.md §1).
	Pagination pagination `json:"pagination"`
}

// handleMessages is GET /api/v1/messages (docs/api.md §5.8).
func (a *api) handleMessages(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	mq := admin.MessageQuery{Queue: q.Get("queue"), Partition: q.Get("partition"), Namespace: q.Get("namespace"),
		Task: q.Get("task"), Status: q.Get("status")}
	if mq.Namespace == "" {
		mq.Namespace = q.Get("ns")
	}
	var err error
	if mq.Limit, err = intParam(q, "limit", admin.DefaultMessagesLimit); err == nil {
		if mq.Offset, err = intParam(q, "offset", 0); err == nil {
			if mq.From, err = msgTimeParam(q, "from"); err == nil {
				mq.To, err = msgTimeParam(q, "to")
			}
		}
	}
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	list, err := a.Messages.List(r.Context(), a.opts.Tenant, mq)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	out := msgListResponse{Messages: make([]msgListItem, len(list.Messages)), Mode: msgModeOf(list.Mode),
		Total: len(list.Messages), Pagination: pagination{list.Limit, list.Offset}}
	for i := range list.Messages {
		m := &list.Messages[i]
		it := msgListItem{
			PartitionID: m.PartitionID, QueuePath: m.Queue.Name + "/" + m.Partition, Queue: m.Queue.Name,
			Partition: m.Partition, Namespace: m.Queue.Namespace, Task: m.Queue.Task,
			Status: m.Status, QueueStatus: m.QueueStatus,
			BusStatus:     msgBusStatus{ConsumedBy: m.ConsumedBy, TotalGroups: m.TotalGroups},
			QueuePriority: m.Queue.Priority, PayloadAvailable: m.PayloadAvailable,
			Segment:   msgSegment{Seq: m.SegmentBase, FrameIdx: m.Offset - m.SegmentBase},
			CreatedAt: m.CreatedAt.UTC().Format(timeFormat), LeaseExpiresAt: msgTime(m.LeaseExpires),
			Data: m.Data, Payload: m.Data, IsEncrypted: m.Encrypted,
		}
		if m.PayloadAvailable {
			it.ID, it.TransactionID, it.TxnHash = &m.ID, &m.TransactionID, &m.TxnHash
			it.TraceID, it.ProducerSub = msgString(m.TraceID), msgString(m.ProducerSub)
		}
		out.Messages[i] = it
	}
	writeJSON(w, http.StatusOK, out)
}

// msgGroupItem is one consumer group's view of a message in its detail: Queen's keys
// (name, group, consumed, leaseExpiresAt; its dashboard reads consumed) and this
// broker's status, reason and retries.
type msgGroupItem struct {
	Name           string  `json:"name"`
	Group          string  `json:"group"`    // the name again, as Queen sends it
	Consumed       bool    `json:"consumed"` // the group's cursor is at or past the message
	Status         string  `json:"status"`
	LeaseExpiresAt *string `json:"leaseExpiresAt"`
	ErrorMessage   *string `json:"errorMessage"`
	RetryCount     int     `json:"retryCount"`
}

// msgDetail is GET /api/v1/messages/{partitionId}/{transactionId}, keys in docs/api.md's
// order; queueConfig carries the queue's options under their configure names.
type msgDetail struct {
	ID             string          `json:"id"`
	TransactionID  string          `json:"transactionId"`
	Data           json.RawMessage `json:"data"`
	Payload        json.RawMessage `json:"payload"`
	TraceID        *string         `json:"traceId"`
	ProducerSub    *string         `json:"producerSub"`
	CreatedAt      string          `json:"createdAt"`
	PartitionID    string          `json:"partitionId"`
	Partition      string          `json:"partition"`
	IsEncrypted    bool            `json:"isEncrypted"`
	Queue          string          `json:"queue"`
	QueuePath      string          `json:"queuePath"`
	Namespace      string          `json:"namespace"`
	Task           string          `json:"task"`
	Status         string          `json:"status"`
	ErrorMessage   *string         `json:"errorMessage"`
	RetryCount     int             `json:"retryCount"`
	LeaseExpiresAt *string         `json:"leaseExpiresAt"`
	QueueConfig    any             `json:"queueConfig"`
	Mode           msgMode         `json:"mode"`
	ConsumerGroups []msgGroupItem  `json:"consumerGroups"`
}

// handleMessage is GET /api/v1/messages/{partitionId}/{transactionId}.
func (a *api) handleMessage(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	d, err := a.Messages.Get(r.Context(), a.opts.Tenant, v["partitionId"], v["transactionId"])
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	out := msgDetail{ID: d.ID, TransactionID: d.TransactionID, Data: d.Data, Payload: d.Data,
		TraceID: msgString(d.TraceID), ProducerSub: msgString(d.ProducerSub),
		CreatedAt: d.CreatedAt.UTC().Format(timeFormat), PartitionID: d.PartitionID, Partition: d.Partition,
		IsEncrypted: d.Encrypted, Queue: d.Queue.Name, QueuePath: d.Queue.Name + "/" + d.Partition,
		Namespace: d.Queue.Namespace, Task: d.Queue.Task, Status: d.Status, ErrorMessage: d.ErrorMessage,
		RetryCount: d.RetryCount, LeaseExpiresAt: msgTime(d.LeaseExpires), QueueConfig: d.Queue.QueueOptions,
		Mode: msgModeOf(d.Mode), ConsumerGroups: make([]msgGroupItem, len(d.Groups))}
	for i, g := range d.Groups {
		out.ConsumerGroups[i] = msgGroupItem{Name: g.Group, Group: g.Group, Consumed: g.Consumed, Status: g.Status,
			LeaseExpiresAt: msgTime(g.LeaseExpires), ErrorMessage: g.ErrorMessage, RetryCount: g.RetryCount}
	}
	writeJSON(w, http.StatusOK, out)
}

type msgDeleteResponse struct {
	Success       bool   `json:"success"`
	PartitionID   string `json:"partitionId"`
	TransactionID string `json:"transactionId"`
	Error         string `json:"error,omitempty"`
	Message       string `json:"message"`
}

// handleDeleteMessage is DELETE /api/v1/messages/{partitionId}/{transactionId}: it
// deletes the message's dead-letter rows; a live message cannot be deleted (404).
func (a *api) handleDeleteMessage(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	pid, txn := v["partitionId"], v["transactionId"]
	err := a.Messages.DeleteDeadLetter(r.Context(), a.opts.Tenant, pid, txn)
	switch {
	case errors.Is(err, admin.ErrNotFound):
		writeJSON(w, http.StatusNotFound, msgDeleteResponse{PartitionID: pid, TransactionID: txn, Error: "Message not found",
			Message: "No dead-letter row for this address: live messages are immutable and cannot be deleted"})
	case err != nil:
		writeError(w, a.opts.Logger, err)
	default:
		writeJSON(w, http.StatusOK, msgDeleteResponse{Success: true, PartitionID: pid, TransactionID: txn,
			Message: "Message deleted successfully"})
	}
}

// msgPushResult is a replay's push result, in the push answer's shape (docs/api.md §5.1).
type msgPushResult struct {
	Index         int    `json:"index"`
	MessageID     string `json:"message_id"`
	TransactionID string `json:"transaction_id"`
	QueueName     string `json:"queueName"`
	Status        string `json:"status"`
	Offset        *int64 `json:"offset"`
}

// msgReplayResponse answers retries and replays. A refusal carries success false, the
// result (maintenance, buffered, failed), error and message, and the replay's fields only
// when the push committed; dlqRowRemoved is null when the row's fate is not known.
type msgReplayResponse struct {
	Success               bool           `json:"success"`
	Result                string         `json:"result,omitempty"`
	Queue                 string         `json:"queue,omitempty"`
	Partition             string         `json:"partition,omitempty"`
	ConsumerGroup         string         `json:"consumerGroup,omitempty"`
	DLQID                 string         `json:"dlqId,omitempty"`
	OriginalTransactionID *string        `json:"originalTransactionId,omitempty"`
	ReplayedAs            *msgPushResult `json:"replayedAs,omitempty"`
	DLQRowRemoved         *bool          `json:"dlqRowRemoved"`
	Error                 string         `json:"error,omitempty"`
	Message               string         `json:"message,omitempty"`
}

func msgReplayBody(rep *admin.Replay, body *msgReplayResponse) {
	body.Result, body.Queue, body.Partition = rep.Result, rep.Queue, rep.Partition
	body.ConsumerGroup, body.DLQID = rep.ConsumerGroup, rep.DeadLetterID
	body.OriginalTransactionID = &rep.OriginalTransactionID
	p := rep.Pushed
	body.ReplayedAs = &msgPushResult{Index: 0, MessageID: uuid.UUID(p.MessageID).String(),
		TransactionID: p.TransactionID, QueueName: p.Queue, Status: string(p.Status)}
	if p.HasOffset {
		body.ReplayedAs.Offset = &p.Offset
	}
}

// writeReplay answers a retry or replay.
func (a *api) writeReplay(w http.ResponseWriter, rep admin.Replay, err error) {
	var re *admin.ReplayError
	switch {
	case errors.As(err, &re):
		body := msgReplayResponse{Result: re.Result, DLQRowRemoved: re.RowRemoved, Error: re.Err.Error()}
		code := http.StatusInternalServerError
		switch {
		case re.Unavailable:
			code = http.StatusServiceUnavailable
			body.Message = "Nothing was replayed and the dead letter is untouched: replay it again later"
		case re.Replay != nil && re.RowRemoved == nil:
			msgReplayBody(re.Replay, &body)
			body.Result = re.Result
			body.Message = "The message was replayed but the dead letter's removal did not confirm: " +
				"re-read the dead-letter list (a replay of a row still listed is a duplicate)"
		case re.Replay != nil:
			msgReplayBody(re.Replay, &body)
			body.Result = re.Result
			body.Message = "The dead letter is untouched"
		default:
			body.Message = "Nothing was replayed and the dead letter is untouched"
		}
		a.opts.Logger.Warn("dead-letter replay refused", loglimit.Cause("dead-letter replay refused"), "result", re.Result, "err", re.Err)
		writeJSON(w, code, body)
	case err != nil:
		writeError(w, a.opts.Logger, err)
	default:
		body := msgReplayResponse{Success: true, DLQRowRemoved: &rep.RowRemoved}
		msgReplayBody(&rep, &body)
		writeJSON(w, http.StatusOK, body)
	}
}

// handleRetryMessage is POST /api/v1/messages/{partitionId}/{transactionId}/retry: the
// newest dead letter of the message goes back to its partition. The body is ignored.
func (a *api) handleRetryMessage(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	rep, err := a.Messages.Retry(r.Context(), a.opts.Tenant, v["partitionId"], v["transactionId"])
	a.writeReplay(w, rep, err)
}

// handleReplayDeadLetter is POST /api/v1/dlq/{id}/replay, with an optional body
// {"queue": ..., "partition": ...} overriding where the message goes.
func (a *api) handleReplayDeadLetter(w http.ResponseWriter, r *http.Request) {
	b, err := readBody(r, a.opts.MaxBodyBytes)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	to, err := parseReplayTarget(b)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	rep, err := a.Messages.Replay(r.Context(), a.opts.Tenant, mux.Vars(r)["id"], to)
	a.writeReplay(w, rep, err)
}

// parseReplayTarget reads a replay's optional body: nothing, or an object whose
// "queue" and "partition", when present, are non-empty strings.
func parseReplayTarget(b []byte) (admin.ReplayTarget, error) {
	var to admin.ReplayTarget
	if len(bytes.TrimSpace(b)) == 0 {
		return to, nil
	}
	var body struct {
		Queue     *string `json:"queue"`
		Partition *string `json:"partition"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return to, badRequestf(`bad body: want {} or {"queue": "...", "partition": "..."}: %v`, err)
	}
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("null")) {
		return to, badRequestf(`bad body: want {} or {"queue": "...", "partition": "..."}, got null`)
	}
	if body.Queue != nil {
		if *body.Queue == "" {
			return to, badRequestf("queue must not be empty (omit it to keep the dead letter's queue)")
		}
		to.Queue = *body.Queue
	}
	if body.Partition != nil {
		if *body.Partition == "" {
			return to, badRequestf("partition must not be empty (omit it to keep the dead letter's partition)")
		}
		to.Partition = *body.Partition
	}
	return to, nil
}

type msgPurgeResponse struct {
	Success       bool    `json:"success"`
	Deleted       int64   `json:"deleted"`
	Queue         string  `json:"queue"`
	ConsumerGroup *string `json:"consumerGroup"`
}

// handlePurgeDeadLetters is DELETE /api/v1/dlq?queue=...&consumerGroup=... (queue
// required).
func (a *api) handlePurgeDeadLetters(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	queue, group := q.Get("queue"), q.Get("consumerGroup")
	n, err := a.Messages.PurgeDeadLetters(r.Context(), a.opts.Tenant, queue, group)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	writeJSON(w, http.StatusOK, msgPurgeResponse{Success: true, Deleted: n, Queue: queue, ConsumerGroup: msgString(group)})
}
