// Package brokertest builds and starts a fully wired broker inside a test's process,
// exactly as queen-server builds and starts it (config.Parse, queen.InitializeApp,
// App.Start), and stops it as SIGTERM does. The black-box tests (e2e, e2e/browser) and
// the load tool's tests start their brokers through it, so a broker under test is made
// one way.
//
// Invariants: Start returns a broker listening on the address its variables name (PORT
// 0: a free port) or an error, and then owns nothing; Stop runs once, whatever the number
// of calls, and reports the graceful stop's error joined with the HTTP server's own
// failure if serving had ended before it.
package brokertest
