package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/queen-go/queen/core/admin"
)

// groupTimeFormat is the wire form of the admin API's timestamps: UTC, milliseconds
// (docs/api.md §1).
const groupTimeFormat = "2006-01-02T15:04:05.000Z"

// groupsRoutes registers the consumer-group routes (docs/api.md §5.9).
//
// Group, queue and partition names may contain '/', sent as %2F. These routes match the
// path as sent (escaped), so each name is exactly one path segment whatever it holds,
// and groupVars unescapes it; matching the decoded path would make "a/queues/b" both a
// group and a group with a queue. They live in a router of their own, mounted under
// their prefix, rather than in a subrouter: in gorilla/mux 1.8.1 each later route of a
// subrouter matches the copied prefix first and so clears the method mismatch an earlier
// route found, and a wrong method would answer 404 instead of 405. Unknown paths and
// methods under the prefix get the parent router's 404 and 405 answers. "lagging" is registered before
// "{group}": a group of that name cannot be described (as in the reference), only
// deleted.
func (a *api) groupsRoutes(r *mux.Router) {
	g := mux.NewRouter().UseEncodedPath()
	g.Use(markRoute) // the full pattern for the access log and the request metrics
	g.Use(a.checkParams(true))
	g.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		groupFallback(r.NotFoundHandler, http.NotFoundHandler()).ServeHTTP(w, req)
	})
	g.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		setAllow(w, g, req) // the parent router would see the prefix take every method
		groupFallback(r.MethodNotAllowedHandler, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
		})).ServeHTTP(w, req)
	})
	const p = "/api/v1/consumer-groups"
	g.HandleFunc(p, a.handleGroups).Methods(http.MethodGet)
	g.HandleFunc(p+"/lagging", a.handleLaggingGroups).Methods(http.MethodGet)
	g.HandleFunc(p+"/{group}", a.handleGroup).Methods(http.MethodGet)
	g.HandleFunc(p+"/{group}", a.handleDeleteGroup).Methods(http.MethodDelete)
	g.HandleFunc(p+"/{group}/subscription", a.handleGroupSubscription).Methods(http.MethodPost)
	g.HandleFunc(p+"/{group}/queues/{queue}", a.handleDeleteGroup).Methods(http.MethodDelete)
	g.HandleFunc(p+"/{group}/queues/{queue}/seek", a.handleSeekGroup).Methods(http.MethodPost)
	g.HandleFunc(p+"/{group}/queues/{queue}/partitions/{partition}/seek", a.handleSeekGroup).Methods(http.MethodPost)
	r.PathPrefix(p).Handler(g)
}

// groupFallback is h, or def when h is nil (the parent router's handlers are set after
// the routes are registered, and read at each request).
func groupFallback(h, def http.Handler) http.Handler {
	if h == nil {
		return def
	}
	return h
}

// groupVars returns the named path variables, unescaped.
func groupVars(r *http.Request, names ...string) ([]string, error) {
	vars := mux.Vars(r)
	out := make([]string, len(names))
	for i, n := range names {
		v, err := url.PathUnescape(vars[n])
		if err != nil {
			return nil, badRequestf("%s in the path: %v", n, err)
		}
		out[i] = v
	}
	return out, nil
}

// groupIntParam reads an optional integer query parameter (nil when absent).
func groupIntParam(q url.Values, name string) (*int, error) {
	if !q.Has(name) {
		return nil, nil
	}
	s := q.Get(name)
	n, err := strconv.Atoi(s)
	if err != nil {
		return nil, badRequestf("%s must be an integer, got %q", name, s)
	}
	return &n, nil
}

// groupPage reads limit and offset.
func groupPage(q url.Values) (admin.GroupPageQuery, error) {
	limit, err := groupIntParam(q, "limit")
	if err != nil {
		return admin.GroupPageQuery{}, err
	}
	offset, err := groupIntParam(q, "offset")
	if err != nil {
		return admin.GroupPageQuery{}, err
	}
	return admin.GroupPageQuery{Limit: limit, Offset: offset}, nil
}

func groupTime(t time.Time) string { return t.UTC().Format(groupTimeFormat) }

func groupTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := groupTime(*t)
	return &s
}

func groupString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// groupSeconds is a duration in whole seconds, rounded down.
func groupSeconds(d time.Duration) int64 { return int64(d / time.Second) }

type groupSummary struct {
	Name                  string   `json:"name"`
	Topics                []string `json:"topics"`
	QueueName             string   `json:"queueName"`
	Members               int      `json:"members"`
	PartitionCursors      int      `json:"partitionCursors"`
	PartitionsWithLag     int      `json:"partitionsWithLag"`
	TotalLag              int64    `json:"totalLag"`
	MaxTimeLag            int64    `json:"maxTimeLag"` // seconds
	State                 string   `json:"state"`
	Storage               string   `json:"storage"`
	SubscriptionMode      *string  `json:"subscriptionMode"`
	SubscriptionTimestamp *string  `json:"subscriptionTimestamp"`
	SubscriptionCreatedAt *string  `json:"subscriptionCreatedAt"`
	Conflation            bool     `json:"conflation"` // always false: no conflation here
}

// handleGroups is GET /api/v1/consumer-groups: one entry per (group, queue), a page of
// at most limit (default and maximum 1000) after offset.
func (a *api) handleGroups(w http.ResponseWriter, r *http.Request) {
	page, err := groupPage(r.URL.Query())
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	gs, err := a.Groups.List(r.Context(), a.opts.Tenant, page)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	out := make([]groupSummary, len(gs))
	for i, g := range gs {
		s := groupSummary{
			Name: g.Name, Topics: []string{g.Queue}, QueueName: g.Queue, Members: g.Members,
			PartitionCursors: g.PartitionCursors, PartitionsWithLag: g.PartitionsWithLag, TotalLag: g.TotalLag,
			MaxTimeLag: groupSeconds(g.MaxTimeLag), State: string(g.State), Storage: "segments",
		}
		if sub := g.Subscription; sub != nil {
			s.SubscriptionMode = &sub.Mode
			s.SubscriptionTimestamp = groupTimePtr(sub.From)
			s.SubscriptionCreatedAt = groupTimePtr(&sub.CreatedAt)
		}
		out[i] = s
	}
	writeJSON(w, http.StatusOK, out)
}

type groupLagging struct {
	ConsumerGroup      string  `json:"consumer_group"`
	QueueName          string  `json:"queue_name"`
	PartitionName      string  `json:"partition_name"`
	PartitionID        string  `json:"partition_id"`
	WorkerID           *string `json:"worker_id"`
	OffsetLag          int64   `json:"offset_lag"`
	TimeLagSeconds     int64   `json:"time_lag_seconds"`
	LagHours           float64 `json:"lag_hours"` // two decimals
	OldestUnconsumedAt string  `json:"oldest_unconsumed_at"`
	LastConsumedAt     *string `json:"last_consumed_at"`
}

// handleLaggingGroups is GET /api/v1/consumer-groups/lagging?minLagSeconds=&limit=:
// oldest first.
func (a *api) handleLaggingGroups(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	minLag, err := groupIntParam(q, "minLagSeconds")
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	limit, err := groupIntParam(q, "limit")
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	ps, err := a.Groups.Lagging(r.Context(), a.opts.Tenant, admin.LaggingQuery{MinLagSeconds: minLag, Limit: limit})
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	out := make([]groupLagging, len(ps))
	for i, p := range ps {
		secs := groupSeconds(p.TimeLag)
		out[i] = groupLagging{
			ConsumerGroup: p.Group, QueueName: p.Queue, PartitionName: p.Partition, PartitionID: p.PartitionID,
			WorkerID: groupString(p.WorkerID), OffsetLag: p.OffsetLag, TimeLagSeconds: secs,
			LagHours:           math.Round(float64(secs)/36) / 100,
			OldestUnconsumedAt: groupTime(p.OldestUnconsumedAt), LastConsumedAt: groupTimePtr(p.LastConsumedAt),
		}
	}
	writeJSON(w, http.StatusOK, out)
}

type groupQueueDetail struct {
	Conflation bool                   `json:"conflation"` // always false: no conflation here
	Partitions []groupPartitionDetail `json:"partitions"`
}

type groupPartitionDetail struct {
	Partition      string  `json:"partition"`
	WorkerID       *string `json:"workerId"`
	LastConsumedAt *string `json:"lastConsumedAt"`
	TotalConsumed  int64   `json:"totalConsumed"`
	OffsetLag      int64   `json:"offsetLag"`
	TimeLagSeconds int64   `json:"timeLagSeconds"`
	LeaseActive    bool    `json:"leaseActive"`
}

// handleGroup is GET /api/v1/consumer-groups/{group}: an object keyed by queue name
// ({} for an unknown group); the page (limit, offset) counts partitions.
func (a *api) handleGroup(w http.ResponseWriter, r *http.Request) {
	vars, err := groupVars(r, "group")
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	page, err := groupPage(r.URL.Query())
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	qs, err := a.Groups.Describe(r.Context(), a.opts.Tenant, vars[0], page)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	out := make(map[string]groupQueueDetail, len(qs))
	for _, q := range qs {
		d := groupQueueDetail{Partitions: make([]groupPartitionDetail, len(q.Partitions))}
		for i, p := range q.Partitions {
			d.Partitions[i] = groupPartitionDetail{
				Partition: p.Partition, WorkerID: groupString(p.WorkerID), LastConsumedAt: groupTimePtr(p.LastConsumedAt),
				TotalConsumed: p.TotalConsumed, OffsetLag: p.OffsetLag, TimeLagSeconds: groupSeconds(p.TimeLag),
				LeaseActive: p.LeaseActive,
			}
		}
		out[q.Queue] = d
	}
	writeJSON(w, http.StatusOK, out)
}

type groupDeleted struct {
	Success           bool    `json:"success"`
	ConsumerGroup     string  `json:"consumerGroup"`
	QueueName         *string `json:"queueName,omitempty"` // only on the one-queue route
	DeletedPartitions int     `json:"deletedPartitions"`
	MetadataDeleted   bool    `json:"metadataDeleted"`
}

// groupDeleteMetadata reads deleteMetadata: true/1/yes or false/0/no (docs/api.md §1),
// true when absent.
func groupDeleteMetadata(q url.Values) (bool, error) {
	if !q.Has("deleteMetadata") {
		return true, nil
	}
	switch v := q.Get("deleteMetadata"); v {
	case "true", "1", "yes":
		return true, nil
	case "false", "0", "no":
		return false, nil
	default:
		return false, badRequestf("deleteMetadata must be true, 1, yes, false, 0 or no, got %q", v)
	}
}

// handleDeleteGroup is DELETE /api/v1/consumer-groups/{group}[/queues/{queue}].
func (a *api) handleDeleteGroup(w http.ResponseWriter, r *http.Request) {
	vars, err := groupVars(r, "group", "queue")
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	meta, err := groupDeleteMetadata(r.URL.Query())
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	var d admin.GroupDeleted
	_, oneQueue := mux.Vars(r)["queue"]
	if oneQueue {
		d, err = a.Groups.DeleteOnQueue(r.Context(), a.opts.Tenant, vars[0], vars[1], meta)
	} else {
		d, err = a.Groups.Delete(r.Context(), a.opts.Tenant, vars[0], meta)
	}
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	out := groupDeleted{Success: true, ConsumerGroup: d.Group, DeletedPartitions: d.DeletedPartitions,
		MetadataDeleted: d.MetadataDeleted}
	if oneQueue {
		out.QueueName = &d.Queue
	}
	writeJSON(w, http.StatusOK, out)
}

// groupJSONObject decodes a JSON object body into its fields; an empty body is an
// empty object.
func groupJSONObject(b []byte) (map[string]json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(b)) == 0 {
		return fields, nil
	}
	if err := json.Unmarshal(b, &fields); err != nil || fields == nil {
		if err == nil {
			err = errors.New("want a JSON object")
		}
		return nil, badRequestf("bad body: %v", err)
	}
	return fields, nil
}

// groupTimeField reads an optional RFC 3339 timestamp field (nil when absent or null).
func groupTimeField(fields map[string]json.RawMessage, name string) (*time.Time, error) {
	raw, ok := fields[name]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, badRequestf("%s must be an RFC 3339 timestamp string, got %s", name, raw)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, badRequestf("%s must be an RFC 3339 timestamp, got %q", name, s)
	}
	if err := checkTime("", name, t); err != nil {
		return nil, err
	}
	return &t, nil
}

type groupSubscriptionUpdated struct {
	Success       bool   `json:"success"`
	ConsumerGroup string `json:"consumerGroup"`
	NewTimestamp  string `json:"newTimestamp"`
	RowsUpdated   int    `json:"rowsUpdated"` // subscriptions changed, one per queue
}

// handleGroupSubscription is POST /api/v1/consumer-groups/{group}/subscription
// {"subscriptionTimestamp": ISO}.
func (a *api) handleGroupSubscription(w http.ResponseWriter, r *http.Request) {
	vars, err := groupVars(r, "group")
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	b, err := readBody(r, a.opts.MaxBodyBytes)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	fields, err := groupJSONObject(b)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	at, err := groupTimeField(fields, "subscriptionTimestamp")
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	u, err := a.Groups.UpdateSubscription(r.Context(), a.opts.Tenant, vars[0], at)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	writeJSON(w, http.StatusOK, groupSubscriptionUpdated{Success: true, ConsumerGroup: u.Group,
		NewTimestamp: groupTime(u.Timestamp), RowsUpdated: u.Updated})
}

type groupSeeked struct {
	Success           bool   `json:"success"`
	ConsumerGroup     string `json:"consumerGroup"`
	QueueName         string `json:"queueName"`
	PartitionsUpdated int    `json:"partitionsUpdated"`
}

type groupPartitionSeeked struct {
	Success         bool    `json:"success"`
	ConsumerGroup   string  `json:"consumerGroup"`
	QueueName       string  `json:"queueName"`
	PartitionName   string  `json:"partitionName"`
	SeekToEnd       bool    `json:"seekToEnd"`
	TargetTimestamp *string `json:"targetTimestamp"`
	Updated         bool    `json:"updated"`
}

type groupSeekFailed struct {
	Success bool   `json:"success"`
	Error   string `json:"error"`
}

// groupSeekTarget reads a seek body: {"toEnd": true} or {"timestamp": ISO}. The
// partition route takes an empty body as {"toEnd": true} (docs/api.md §5.9); which
// combinations are valid is the use case's rule.
func groupSeekTarget(b []byte, emptyIsToEnd bool) (admin.SeekTarget, error) {
	if emptyIsToEnd && len(bytes.TrimSpace(b)) == 0 {
		return admin.SeekTarget{ToEnd: true}, nil
	}
	fields, err := groupJSONObject(b)
	if err != nil {
		return admin.SeekTarget{}, err
	}
	var to admin.SeekTarget
	if raw, ok := fields["toEnd"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &to.ToEnd); err != nil {
			return admin.SeekTarget{}, badRequestf("toEnd must be a boolean, got %s", raw)
		}
	}
	if to.Timestamp, err = groupTimeField(fields, "timestamp"); err != nil {
		return admin.SeekTarget{}, err
	}
	return to, nil
}

// handleSeekGroup is POST /api/v1/consumer-groups/{group}/queues/{queue}/seek and
// .../partitions/{partition}/seek. An unknown partition (or queue) on the partition
// route answers 404 {"success": false, "error": "Partition not found"}.
func (a *api) handleSeekGroup(w http.ResponseWriter, r *http.Request) {
	vars, err := groupVars(r, "group", "queue", "partition")
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	_, onePartition := mux.Vars(r)["partition"]
	b, err := readBody(r, a.opts.MaxBodyBytes)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	to, err := groupSeekTarget(b, onePartition)
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	if !onePartition {
		s, err := a.Groups.Seek(r.Context(), a.opts.Tenant, vars[0], vars[1], to)
		if err != nil {
			writeError(w, a.opts.Logger, err)
			return
		}
		writeJSON(w, http.StatusOK, groupSeeked{Success: true, ConsumerGroup: s.Group, QueueName: s.Queue,
			PartitionsUpdated: s.PartitionsUpdated})
		return
	}
	s, err := a.Groups.SeekPartition(r.Context(), a.opts.Tenant, vars[0], vars[1], vars[2], to)
	if errors.Is(err, admin.ErrNotFound) {
		writeJSON(w, http.StatusNotFound, groupSeekFailed{Success: false, Error: err.Error()})
		return
	}
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	writeJSON(w, http.StatusOK, groupPartitionSeeked{Success: true, ConsumerGroup: s.Group, QueueName: s.Queue,
		PartitionName: s.Partition, SeekToEnd: s.Target.ToEnd, TargetTimestamp: groupTimePtr(s.Target.Timestamp),
		Updated: true})
}
