package e2e

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
)

// TestSQLInjectionNonConformingStrings: on a database whose default is
// standard_conforming_strings = off (as some legacy databases still carry), a name or
// filter that closes a string literal with a backslash (doubled quotes are read as an
// escaped quote and a closing one) is only a name, on every admin route that takes one:
// the answer is 200 or a 4xx, shows nothing of another queue, changes nothing, and runs
// no sleep (the broker's statement timeout would turn that into a 5xx).
func TestSQLInjectionNonConformingStrings(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabaseWith(t, "standard_conforming_strings", "off")
	// A pg_sleep(60) that ran would end its request at this timeout with a 5xx; the
	// requests below answer in milliseconds.
	b := startBrokerOn(t, db, map[string]string{"DB_STATEMENT_TIMEOUT": "10000"})

	// The victim: a queue whose every name says "victim", with two messages, a group
	// that dead-lettered the first, and a trace.
	b.configure(t, `{"queue":"victim-q","namespace":"victim-ns","task":"victim-task"}`)
	b.push(t, map[string]any{"queue": "victim-q", "partition": "victim-p", "transactionId": "victim-0", "payload": 1},
		map[string]any{"queue": "victim-q", "partition": "victim-p", "transactionId": "victim-1", "payload": 2})
	popVictim := "/api/v1/pop/queue/victim-q/partition/victim-p?batch=1&consumerGroup=victim-g&subscriptionMode=all"
	d := b.popMust(t, popVictim)
	if r := b.ackBatch(t, "victim-g", ackItemOf(d.Messages[0], "dlq")); !r[0].Success || !r[0].DLQ {
		t.Fatalf("dead-lettering victim-0: %+v", r[0])
	}
	pid := d.PartitionID
	b.trcRecord(t, `{"transactionId":"victim-0","partitionId":"`+pid+`","traceNames":["victim-trace"],"data":1}`)

	for _, in := range []struct{ name, value string }{
		{"or true, parenthesised", `doesnotexist\' OR 1=1) --`},
		{"or true", `doesnotexist\' OR 1=1 --`},
		{"sleep, parenthesised", `x\' OR pg_sleep(60) IS NULL) --`},
		{"sleep", `x\' OR pg_sleep(60) IS NULL --`},
	} {
		q, p := url.QueryEscape(in.value), url.PathEscape(in.value)
		for _, r := range []struct {
			method, path, body string
			names              bool // the request names the victim: its answer may too
		}{
			{"POST", "/api/v1/configure", `{"queue":` + mustJSON(t, in.value) + `}`, false},
			{"GET", "/api/v1/messages?queue=" + q, "", false},
			{"GET", "/api/v1/messages?partition=" + q, "", false},
			{"GET", "/api/v1/messages?namespace=" + q, "", false},
			{"GET", "/api/v1/messages?ns=" + q, "", false},
			{"GET", "/api/v1/messages?task=" + q, "", false},
			{"GET", "/api/v1/messages/" + pid + "/" + p, "", false},
			{"GET", "/api/v1/dlq?queue=" + q, "", false},
			{"GET", "/api/v1/dlq?consumerGroup=" + q, "", false},
			{"GET", "/api/v1/resources/queues?namespace=" + q, "", false},
			{"GET", "/api/v1/resources/queues?task=" + q, "", false},
			{"GET", "/api/v1/resources/queues/" + p, "", false},
			{"GET", "/api/v1/resources/queues/" + p + "/depth", "", false},
			{"GET", "/api/v1/resources/queues/victim-q/depth?group=" + q, "", true},
			{"GET", "/api/v1/status?queue=" + q, "", false},
			{"GET", "/api/v1/status?namespace=" + q, "", false},
			{"GET", "/api/v1/status?task=" + q, "", false},
			{"GET", "/api/v1/status/queues?queue=" + q, "", false},
			{"GET", "/api/v1/status/queues?namespace=" + q, "", false},
			{"GET", "/api/v1/status/queues?task=" + q, "", false},
			{"GET", "/api/v1/status/queues/" + p, "", false},
			{"GET", "/api/v1/consumer-groups/" + p, "", false},
			{"GET", "/api/v1/traces/by-name/" + p, "", false},
			{"GET", "/api/v1/traces/" + pid + "/" + p, "", false},
			{"POST", "/api/v1/messages/" + pid + "/" + p + "/retry", "", false},
			{"DELETE", "/api/v1/messages/" + pid + "/" + p, "", false},
			{"DELETE", "/api/v1/dlq?queue=" + q, "", false},
			{"DELETE", "/api/v1/dlq?queue=victim-q&consumerGroup=" + q, "", true},
			{"POST", "/api/v1/consumer-groups/" + p + "/subscription", `{"subscriptionTimestamp":"2026-01-02T00:00:00Z"}`, false},
			{"POST", "/api/v1/consumer-groups/victim-g/queues/" + p + "/seek", `{"toEnd":true}`, true},
			{"POST", "/api/v1/consumer-groups/victim-g/queues/victim-q/partitions/" + p + "/seek", `{"toEnd":true}`, true},
			{"DELETE", "/api/v1/consumer-groups/victim-g/queues/" + p, "", true},
			{"DELETE", "/api/v1/consumer-groups/" + p, "", false},
			{"DELETE", "/api/v1/resources/queues/" + p, "", false},
		} {
			t.Run(in.name+"/"+r.method+" "+r.path, func(t *testing.T) {
				var body io.Reader
				if r.body != "" {
					body = strings.NewReader(r.body)
				}
				// doBad: the payload is no name the OpenAPI document promises to take.
				resp, raw := b.doBad(t, r.method, r.path, body)
				if resp.StatusCode >= 500 {
					t.Fatalf("%d %s", resp.StatusCode, raw)
				}
				if !r.names && strings.Contains(string(raw), "victim") {
					t.Errorf("the answer shows the victim: %d %s", resp.StatusCode, raw)
				}
			})
		}
	}

	// Nothing of the victim was changed: its queue, dead letter and trace are there, and
	// its group's cursor neither moved nor went (a seek to the end would leave nothing to
	// pop, a deletion would deliver victim-0 again).
	if code, raw := b.get(t, "/api/v1/resources/queues/victim-q"); code != http.StatusOK {
		t.Errorf("GET the victim queue: %d %s", code, raw)
	}
	if _, ms := b.deadLetters(t, "?queue=victim-q"); len(ms) != 1 {
		t.Errorf("%d dead letters of the victim, want 1", len(ms))
	}
	if code, raw := b.get(t, "/api/v1/traces/by-name/victim-trace"); code != http.StatusOK || !strings.Contains(string(raw), "victim-0") {
		t.Errorf("the victim's trace: %d %s", code, raw)
	}
	wantTxns(t, b.popMust(t, popVictim), "victim-1")
}
