// Package maintenance holds the broker-wide maintenance flags (docs/api.md §5.12): push
// maintenance (every push is spooled and answered buffered; the spool drain pauses) and
// pop maintenance (every pop answers 204).
//
// The flags live in the database so every broker sees the same ones. Each broker keeps
// a copy it re-reads every Refresh interval (1 s) and right after it changes a flag
// itself, so the hot paths read an atomic, never the database. When the database cannot
// be read the last known values stay in force: maintenance is how an operator takes the
// database away, and losing sight of it must not end it.
package maintenance
