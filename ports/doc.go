// Package ports declares what the core needs from the outside world, as small interfaces,
// and the plain value types that cross them. It imports only the standard library.
//
// A port is crossed once per batch, never once per message: a whole fusion bundle is one
// SegmentStore.PushSegments call.
//
// Errors crossing a port are translated once, at the adapter edge, into the sentinel
// errors declared here (ErrUnavailable, ErrTimeout, ...), so the core and the HTTP layer
// never look at driver-specific errors.
package ports
