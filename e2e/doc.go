// Package e2e holds the black-box tests of queen-go: each test starts the broker through
// its public constructor (queen.InitializeApp, then App.Start, as cmd/server does) on a
// fresh PostgreSQL database of its own (adapters/pglocal/pgtest), and observes it only the
// way a client can: HTTP requests and their answers, /metrics and /metrics/prometheus, the
// status routes, and the files of the spool directory the test gave it.
//
// # The harness (harness_test.go)
//
//   - startBroker / startBrokerOn: one broker on a fresh database (or on another broker's
//     database), configured with config.Parse, listening on a free loopback port
//     (PORT=0), with a FILE_BUFFER_DIR of its own; the test's cleanup stops it gracefully
//     (App.Stop) and then runs the injector's cleanup (pool, spool).
//   - launchBroker: startBrokerOn that returns the broker's refusal to start instead of
//     failing, and can capture its logs (config.WithLogOutput).
//   - broker.request and broker.do: the one way tests send a request (do fails the test
//     on a transport error; request reports it, for goroutines); requestAuth adds an
//     Authorization header.
//   - the OpenAPI check (openapi_test.go): every request sent that way and every answer
//     is validated against docs/openapi.yaml, the document the broker embeds and
//     serves; a mismatch fails the test that sent it (do), or the broker's test at its
//     cleanup (request from a goroutine). A request meant to be invalid is sent with
//     doBad or postBad, or a context from badInput: only its answer is checked.
//   - decoders of the push, pop and ack answers, strict by field name.
//   - eventually: the one bounded poll; tests never sleep to wait for a condition.
//   - pgProxy (proxy_test.go): a TCP relay between a broker and PostgreSQL, so a test can
//     take the database away (cut) or hold its answers (freeze) without touching the
//     server other tests share.
//
// TestMain (main_test.go) stops the throwaway PostgreSQL cluster after the run and fails
// it when a goroutine is left behind; when QUEEN_E2E_CHILD_BROKER is set it runs a broker
// instead of the tests (the child that TestSpoolSurvivesSIGKILL kills).
//
// # The import rule
//
// These tests may import only the standard library, github.com/queen-go/queen (the
// constructor, App and the embedded OpenAPI document), its config package,
// adapters/pglocal/pgtest, go.uber.org/goleak and the OpenAPI validator
// (github.com/pb33f/libopenapi-validator); the ordered-pipeline test also uses bench/load
// and bench/verify, the client-side load tool and its verifier, which speak HTTP only. Never pgx, ports, core or
// another adapter: what a test cannot see through the API belongs in a store-level test
// of the adapter (adapters/postgres, adapters/admin). The root package's dependency test
// enforces this.
package e2e
