// Package netproxy relays TCP from a listener of its own to one target address, so that a
// test can make a server unreachable or unresponsive for the clients that go through the
// proxy alone, while the server itself keeps running (a shared PostgreSQL, a Patroni
// node, etcd).
//
// Its faults, each undone by the next:
//
//   - Cut: the listener closes and every relayed connection is torn down, as when the
//     host goes away (new connections are refused at once);
//   - Restore: the listener comes back on the same address;
//   - Freeze: connections are still accepted (and relayed ones stay open) but no byte is
//     passed on in either direction: a network partition that drops packets, where a
//     client learns nothing until its own timeout. Statements in flight stay in flight;
//   - Thaw: the held bytes flow again, in order.
//
// A Proxy's goroutines end with Close; tests check that with goleak.
package netproxy
