// Package metrics exposes the broker's counters in the Prometheus text format on
// GET /metrics/prometheus, with prometheus/client_golang.
//
// The core keeps plain atomic counters (it must not import Prometheus); this package
// reads them at scrape time through collectors, so a scrape costs a few atomic loads and
// nothing is double-counted. Each source is read once per scrape (snapshot.go), so the
// figures of one scrape agree with each other and a source that locks or walks a
// structure (the spool's file list, the pool's statistics) is not read once per family.
// The only request-time work is Requests.Observe: one lookup of a cached series and
// three atomic updates per answered HTTP request.
//
// # Names
//
// Queen's families (docs/api.md §5.13) keep Queen's names and types, idiomatic or not
// (queen_db_pool_size, queen_file_buffer_pending: gauges without a unit): dashboards
// built for Queen keep working. The families this broker adds follow Prometheus'
// conventions, held by TestOwnFamiliesFollowConventions: counters end in _total and only
// counters do, durations are in seconds and sizes in bytes, latencies are histograms.
// bench/load, scripts/, e2e/ and deploy/grafana/queen.json read families by name;
// dashboard_test.go fails when the dashboard names a series this package does not serve.
//
// # Labels
//
// Every label has a bounded set of values: op, lane, job, source, verdict, direction,
// and for the request families method (a standard method, else "OTHER"), route
// (the matched route's pattern with its placeholders, e.g. "/api/v1/pop/queue/{queue}";
// Unmatched when none matched) and code (the status). No family is labelled by queue,
// partition or consumer group name: they are created by clients without limit. Per-queue
// figures are the admin API's (GET /api/v1/resources/queues, /api/v1/status/queues).
//
// # Request durations
//
// queen_http_request_duration_seconds measures from the request reaching the broker's
// handler (authentication, routing and body reading included) to the handler's return,
// in buckets from 0.5 ms to 30 s (requests.go). A pop's duration includes its long-poll wait: a
// wait=true pop on an empty queue lasts its whole timeout (30 s by default), so pop
// percentiles describe idle consumers as much as the broker; the dashboard shows pop
// routes apart from the others.
package metrics
