// Package consume is the read path: pops that claim spans of partitions under a lease,
// long polls that park without a database connection, acknowledgements and lease
// extension (api.md §5.2, §5.3, §5.5).
//
// PostgreSQL is the only authority on cursors, leases and retry counters: this package
// holds no consumer state. It turns claims (segments covering a span) into messages,
// normalises and validates ack input, and parks pops.
//
// Long poll: a pop with wait=true that claims nothing subscribes to its queue's wake
// channel (Waker) before it retries, so a commit that lands between the empty claim and
// the wait is never missed. It re-checks on a wake, and otherwise on the backoff of
// api.md §5.2 (initial interval for the first Threshold empties, then initial x count x
// Multiplier, capped at Max). A parked pop holds no database connection; when its client
// goes away it returns at once and claims nothing.
package consume
