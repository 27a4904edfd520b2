// Package names holds the naming rules the broker enforces on input.
//
// Queues, partitions and consumer groups (docs/design.md "Decisions"): valid UTF-8, 1 to 255 bytes,
// no control characters (C0, DEL or C1). Transaction ids (docs/api.md §1): at most 65535
// bytes, valid UTF-8, no control characters; empty means "use the message id".
//
// Names are stored byte-exact: nothing is trimmed, case-folded or normalised, so two
// names are the same name exactly when their bytes are equal.
package names
