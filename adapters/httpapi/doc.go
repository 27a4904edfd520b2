// Package httpapi is the HTTP adapter: Queen's routes on gorilla/mux, request parsing,
// response rendering and the one table that maps errors to HTTP status codes.
//
// Wire rules (docs/api.md §1, §5.1): JSON in and out; broker errors are {"error":"..."} and
// every 4xx says what is wrong; unknown /api routes answer 404
// {"error":"Not Found","code":"no_such_route"}; a known path with the wrong method 405;
// bodies above MaxBodyBytes 413. Push answers 201 with one result per item in request
// order; its field names mix cases exactly as Queen's do (message_id, transaction_id,
// queueName).
//
// Handlers never parse JSONB or talk to the database: they call the core use cases.
package httpapi
