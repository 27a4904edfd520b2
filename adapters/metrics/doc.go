// Package metrics exposes the broker's counters in the Prometheus text format on
// GET /metrics/prometheus, with prometheus/client_golang.
//
// The core keeps plain atomic counters (it must not import Prometheus); this package
// reads them at scrape time through CounterFunc/GaugeFunc collectors, so a scrape costs
// a few atomic loads and nothing is double-counted. Family names follow Queen's
// (api.md §5.13): queen_batches_fired_total{op}, queen_batch_items_fired_total{op},
// queen_fusion_items_per_batch{op}, plus queen_fusion_commits_total and
// queen_fusion_segments_total, which together show fusion coalescing partitions into
// commits (segments far above commits).
package metrics
