# syntax=docker/dockerfile:1
#
# queen-go's container image: queen-server (the entrypoint), queen-drain (the spool drain
# job, cmd/lambda) and queen-bench, the three binaries `make build` builds, plus
# queen-probe (deploy/queen-probe), a tiny HTTP probe for health checks that run inside
# the container (docker compose): the final image has no shell, curl or wget.
#
#   docker build -t queen-go .
#   docker run -e QUEEN_PG_URL=postgres://user:pass@db:5432/queen -p 6632:6632 queen-go
#
# The image MUST be given a database: QUEEN_PG_URL, or PG_HOST / PG_PORT / PG_USER /
# PG_PASSWORD / PG_DATABASE. Without one the broker tries to start an *embedded*
# PostgreSQL from the machine's initdb/postgres binaries, which this image does not have,
# and fails at start. `docker run queen-go --help` lists every variable.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
# Cross-compiles on the build host for the target platform (docker buildx
# --platform linux/arm64,...): pure Go, no emulation needed.
ARG TARGETOS=linux
ARG TARGETARCH
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# Static binaries (CGO_ENABLED=0: the final image has no C library), without the build
# machine's paths in them (-trimpath). The package list is the Makefile's build target;
# deploy/dockerfile_test.go keeps the two in step.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    export CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} && \
    go build -trimpath -o /out/queen-server ./cmd/server && \
    go build -trimpath -o /out/queen-bench ./cmd/queen-bench && \
    go build -trimpath -o /out/queen-drain ./cmd/lambda && \
    cd deploy && go build -trimpath -o /out/queen-probe ./queen-probe
# The spool directory, owned by the nonroot user (65532) of the final image: a named
# volume mounted there starts with this ownership, so the broker can write its spool.
RUN mkdir -p /out/var/lib/queen/buffers

# distroless/static: CA certificates, tzdata and /etc/passwd with a nonroot user (65532),
# nothing else (no shell, no package manager).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/queen-server /out/queen-drain /out/queen-bench /out/queen-probe /usr/local/bin/
COPY --from=build --chown=65532:65532 /out/var/lib/queen /var/lib/queen
USER 65532:65532
WORKDIR /home/nonroot
# The crash-safe push spool: pushes the database could not take, answered "buffered",
# wait here until they are replayed. Keep it on a volume that outlives the container
# (deploy/kubernetes/README.md says why), never in the container's writable layer.
ENV FILE_BUFFER_DIR=/var/lib/queen/buffers
VOLUME ["/var/lib/queen/buffers"]
# PORT (default 6632). GET /ready is the readiness probe, GET /live the liveness probe;
# GET /health answers 503 while the database is down, so it must not be the liveness probe.
EXPOSE 6632
# Probes GET /ready on 127.0.0.1:$PORT (queen-probe URL probes another address).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 CMD ["/usr/local/bin/queen-probe"]
ENTRYPOINT ["/usr/local/bin/queen-server"]
