// Command queen-probe is the container image's health check: GET one URL and exit 0 when
// it answers 200, 1 otherwise. The image is distroless (no shell, no curl or wget), so a
// probe run inside the container (Docker's HEALTHCHECK, docker compose's healthcheck)
// needs a binary of its own; Kubernetes probes need none (the kubelet asks over HTTP).
//
//	queen-probe                               # GET http://127.0.0.1:$PORT/ready (PORT default 6632)
//	queen-probe http://127.0.0.1:6632/live    # any URL
//
// It waits at most QUEEN_PROBE_TIMEOUT_MS (2000) for the answer and prints the status
// line, or the error, on stderr for `docker inspect` to show.
package main
