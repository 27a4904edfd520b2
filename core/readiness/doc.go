// Package readiness decides whether the broker can accept pushes now: the answer of
// GET /ready, which orchestrators use to send traffic (Kubernetes' readinessProbe).
//
// Rule: ready unless shutting down, and then when the database answers a ping or, when
// it does not, when the spool can take the pushes (its last write did not fail within
// SpoolGrace). A broker that spools during a database outage stays ready: that is what
// the spool is for. Liveness is a different question whose answer never depends on the
// database (GET /live): an outage must not make an orchestrator restart brokers that are
// spooling.
//
// A spool write failure (a full disk) makes the broker unready for SpoolGrace only, not
// until the next write succeeds: an unready broker gets no pushes, so it could never
// learn that space was freed. After the grace the next push tries again.
package readiness
