// Package stages times the steps of the broker's two latency paths, so that where the
// milliseconds of a push, and of a message's way to a parked consumer, go is read from
// the broker (GET /metrics/prometheus: queen_push_stage_seconds and
// queen_pop_stage_seconds, docs/api.md §5.13) instead of guessed.
//
// # The push path (Push)
//
//   - read: the handler's start to the items handed to the push service (the body read
//     and parsed), one sample per request.
//   - wait: a segment's oldest frame's arrival at its fusion shard to the start of the
//     commit that carries it: the wait for the partition's previous flush, for a permit
//     of the push limiter (core/vegas) and in the offer list. One sample per segment.
//   - commit: the bundle's database call, PostgreSQL's commit and WAL flush included,
//     one sample per bundle.
//   - route: the database call's return to every frame of the bundle answered (layer-2
//     dedup verdicts, the commit announcement to the hot-list and the waker), one
//     sample per bundle.
//   - answer: the push service's return to the answer written, one sample per request.
//
// # The way to a parked consumer (Pop)
//
//   - ready: a partition made ready in the hot-list (a commit's mark, an ack's promote)
//     to a pop checking it out as a candidate: the wake-up of a parked pop and its wait
//     for a core. One sample per candidate.
//   - claim: a pop's claim call to the database, one sample per call.
//   - answer: a pop that claimed something: the claim's return to the answer written.
//
// # Invariants
//
// A Histogram is a fixed set of atomic counters: Observe takes no lock and allocates
// nothing, so it may sit on every request. Bounds are the same for every stage, in
// seconds, from 50 µs to 10 s. Components take the broker's Timers as an option and keep
// their own when given none, so a component never checks for nil on its path.
package stages
