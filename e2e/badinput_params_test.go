package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// biParamRows extend rows 10, 11, 21 and 25 of the bad-input table beyond the push body
// and the pop's own parameters: every route's path variables, query strings and body
// fields (adapters/httpapi params.go checks them all at the edge), every timestamp
// parameter, and the ack operations of a transaction. Each of these answered 500 or took
// a value PostgreSQL cannot hold (or stored it mangled) before the edge checked them.
// pid is bi-target's partition.
func biParamRows(pid string) []biRow {
	var rows []biRow
	rows = append(rows, biNulRows(pid)...)
	rows = append(rows, biTimeRows()...)
	rows = append(rows, biTxnAckRows(pid)...)
	return rows
}

// biNulRows are rows 10 and 11 away from the push: a NUL byte (or invalid UTF-8) in a
// name or a text parameter of another route. Names get the naming rule's text ("control
// character", "UTF-8"), free text the NUL's; each names its parameter.
func biNulRows(pid string) []biRow {
	get := func(name, path string, want ...string) biRow {
		return biRow{name: name, method: http.MethodGet, path: path, status: 400, want: want}
	}
	del := func(name, path string, want ...string) biRow {
		return biRow{name: name, method: http.MethodDelete, path: path, status: 400, want: want}
	}
	post := func(name, path, body string, want ...string) biRow {
		return biRow{name: name, path: path, body: body, status: 400, want: want}
	}
	const nul, ctl = `a\u0000`, "control character"
	q := `"query_id":"0198e4c1-0000-7000-8000-0000000000bb","partition_id":"` + pid + `"`
	return []biRow{
		get("11/pop-namespace", "/api/v1/pop?namespace=a%00", "query parameter namespace", ctl),
		get("11/pop-task", "/api/v1/pop?task=a%00", "query parameter task", ctl),
		get("11/messages-queue", "/api/v1/messages?queue=a%00", "query parameter queue", ctl),
		get("11/messages-partition", "/api/v1/messages?partition=a%00", "query parameter partition", ctl),
		get("11/messages-namespace", "/api/v1/messages?namespace=a%00", "query parameter namespace", ctl),
		get("11/messages-ns", "/api/v1/messages?ns=a%00", "query parameter ns", ctl),
		get("11/messages-task", "/api/v1/messages?task=a%00", "query parameter task", ctl),
		get("11/dlq-queue", "/api/v1/dlq?queue=a%00", "query parameter queue", ctl),
		get("11/dlq-consumerGroup", "/api/v1/dlq?consumerGroup=a%00", "query parameter consumerGroup", ctl),
		del("11/dlq-purge-queue", "/api/v1/dlq?queue=a%00", "query parameter queue", ctl),
		del("11/dlq-purge-consumerGroup", "/api/v1/dlq?queue=bi-target&consumerGroup=a%00", "query parameter consumerGroup", ctl),
		del("11/delete-queue", "/api/v1/resources/queues/a%00", "path parameter queue", ctl),
		get("11/resources-queues-namespace", "/api/v1/resources/queues?namespace=a%00", "query parameter namespace", ctl),
		get("11/resources-queues-task", "/api/v1/resources/queues?task=a%00", "query parameter task", ctl),
		get("11/status-queue", "/api/v1/status?queue=a%00", "query parameter queue", ctl),
		get("11/status-namespace", "/api/v1/status?namespace=a%00", "query parameter namespace", ctl),
		get("11/status-task", "/api/v1/status?task=a%00", "query parameter task", ctl),
		get("11/status-queues-queue", "/api/v1/status/queues?queue=a%00", "query parameter queue", ctl),
		get("11/status-queues-namespace", "/api/v1/status/queues?namespace=a%00", "query parameter namespace", ctl),
		get("11/status-queues-task", "/api/v1/status/queues?task=a%00", "query parameter task", ctl),
		post("11/streams-query-name", "/streams/v1/queries", `{"name":"`+nul+`","source_queue":"s","config_hash":"h"}`, "name", "NUL"),
		post("11/streams-query-source_queue", "/streams/v1/queries", `{"name":"bi-q","source_queue":"`+nul+`","config_hash":"h"}`,
			"source_queue", ctl),
		post("11/streams-query-config_hash", "/streams/v1/queries", `{"name":"bi-q","source_queue":"s","config_hash":"`+nul+`"}`,
			"config_hash", "NUL"),
		post("11/streams-query-sink_queue", "/streams/v1/queries",
			`{"name":"bi-q","source_queue":"s","config_hash":"h","sink_queue":"`+nul+`"}`, "sink_queue", ctl),
		post("11/streams-state-keys", "/streams/v1/state/get", `{`+q+`,"keys":["k","`+nul+`"]}`, "keys", "NUL"),
		post("11/streams-state-key_prefix", "/streams/v1/state/get", `{`+q+`,"key_prefix":"`+nul+`"}`, "key_prefix", "NUL"),
		// Invalid UTF-8 was a 500 too, or was taken and answered as U+FFFD: another name.
		get("10/pop-namespace", "/api/v1/pop?namespace=a%FF", "query parameter namespace", "UTF-8"),
		get("10/pop-task", "/api/v1/pop?task=a%FF", "query parameter task", "UTF-8"),
		get("10/messages-queue", "/api/v1/messages?queue=a%FF", "query parameter queue", "UTF-8"),
		del("10/delete-queue", "/api/v1/resources/queues/a%FF", "path parameter queue", "UTF-8"),
		del("10/dlq-purge-queue", "/api/v1/dlq?queue=a%FF", "query parameter queue", "UTF-8"),
	}
}

// biTimeRows are row 21 for the range of every timestamp parameter: year 0 (PostgreSQL
// has none, and refused it as a 500), an offset that moves an instant into year 0, and
// one past 9999 (an answer the OpenAPI document's date-time cannot hold).
func biTimeRows() []biRow {
	const year0, offsetIntoYear0, past9999 = "0000-01-01T00:00:00Z", "0001-01-01T00:30:00+01:00", "9999-12-31T23:59:59-14:00"
	rangeText := []string{"0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"}
	post := func(name, path, body, param string) biRow {
		return biRow{name: name, path: path, body: body, status: 400, want: append([]string{param}, rangeText...)}
	}
	get := func(name, path, param string) biRow {
		return biRow{name: name, method: http.MethodGet, path: path, status: 400, want: append([]string{param}, rangeText...)}
	}
	const groups = "/api/v1/consumer-groups/bi-g"
	return []biRow{
		post("21/seek-year-0", groups+"/queues/bi-target/seek", `{"timestamp":"`+year0+`"}`, "timestamp"),
		post("21/seek-offset-into-year-0", groups+"/queues/bi-target/seek", `{"timestamp":"`+offsetIntoYear0+`"}`, "timestamp"),
		post("21/partition-seek-year-0", groups+"/queues/bi-target/partitions/p/seek", `{"timestamp":"`+year0+`"}`, "timestamp"),
		post("21/partition-seek-past-9999", groups+"/queues/bi-target/partitions/p/seek", `{"timestamp":"`+past9999+`"}`, "timestamp"),
		post("21/subscription-year-0", groups+"/subscription", `{"subscriptionTimestamp":"`+year0+`"}`, "subscriptionTimestamp"),
		get("21/pop-subscriptionFrom-year-0", "/api/v1/pop/queue/bi-target?consumerGroup=bi-g21&subscriptionFrom="+year0,
			"subscriptionFrom"),
		get("21/messages-from-year-0", "/api/v1/messages?from="+year0, "from"),
		get("21/messages-from-date-year-0", "/api/v1/messages?from=0000-01-01", "from"),
		get("21/messages-from-offset-into-year-0", "/api/v1/messages?from="+strings.ReplaceAll(offsetIntoYear0, "+", "%2B"), "from"),
		get("21/status-from-year-0", "/api/v1/status?from="+year0, "from"),
		get("21/status-to-past-9999", "/api/v1/status?to="+strings.ReplaceAll(past9999, "+", "%2B"), "to"),
		get("21/status-queues-from-year-0", "/api/v1/status/queues?from="+year0, "from"),
	}
}

// biTxnAckRows are row 25 for ack operations: one that cannot name a message, or whose
// text PostgreSQL cannot hold, refuses the whole transaction with a 400 in the
// transaction's shape (success false, reason bad_request), as an invalid push operation
// does; the push beside it is not stored.
func biTxnAckRows(pid string) []biRow {
	refused := func(name, ack string, want ...string) biRow {
		return biRow{name: name, run: func(t *testing.T, b *broker) {
			body := `{"operations":[{"type":"push","queue":"bi-25-ack","payload":1},{"type":"ack",` + ack + `}]}`
			resp, raw := b.doBad(t, http.MethodPost, "/api/v1/transaction", strings.NewReader(body))
			biWantError(t, resp, raw, http.StatusBadRequest, append([]string{"operation 1"}, want...)...)
			var r txnResp
			if err := json.Unmarshal(raw, &r); err != nil || r.Success || r.Reason != "bad_request" || r.Results == nil || r.TransactionID == "" {
				t.Fatalf("answer %s: want the transaction's shape, success false, reason bad_request (%v)", raw, err)
			}
		}}
	}
	const nul = `a\u0000`
	return []biRow{
		refused("25/ack-partitionId-not-uuid", `"transactionId":"bi-t-0","partitionId":"not-a-uuid"`, "partitionId is not a UUID"),
		refused("25/ack-transactionId-missing", `"partitionId":"`+pid+`"`, "transactionId is required"),
		refused("25/ack-leaseId-x", `"transactionId":"bi-t-0","partitionId":"`+pid+`","leaseId":"x"`, "lease"),
		refused("25/ack-consumerGroup-nul", `"transactionId":"bi-t-0","partitionId":"`+pid+`","consumerGroup":"`+nul+`"`,
			"consumerGroup", "control character"),
		refused("25/ack-transactionId-nul", `"transactionId":"`+nul+`","partitionId":"`+pid+`"`, "transactionId", "control character"),
		refused("25/ack-error-nul", `"transactionId":"bi-t-0","partitionId":"`+pid+`","status":"failed","error":"`+nul+`"`,
			"error", "NUL"),
	}
}
