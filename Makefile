# queen-go. `make run` starts the broker (an embedded PostgreSQL when no database is
# configured); `make test` runs every test. See README.md.
GO    ?= go
BIN   := bin
WIRE  := $(GO) run github.com/google/wire/cmd/wire@v0.7.0
STATICCHECK := $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Seconds per measured phase of the push and consume benchmarks.
QUEEN_BENCH_SECONDS ?= 10
export QUEEN_BENCH_SECONDS

.PHONY: all build lambda run test check wire-check bench bench-consume bench-ack bench-restart bench-pipeline bench-pinned bench-latency bench-allocator bench-rtt bench-hotlist bench-admin bench-retention bench-history faults soak ha-up ha-down generate vet clean

all: build

build:
	$(GO) build -o $(BIN)/queen-server ./cmd/server
	$(GO) build -o $(BIN)/queen-bench ./cmd/queen-bench
	$(GO) build -o $(BIN)/queen-drain ./cmd/lambda

# The drain job packaged for AWS Lambda's provided.al2023 runtime (README: the batch-drain
# job): bin/lambda/queen-drain.zip holds the bootstrap executable.
lambda:
	mkdir -p $(BIN)/lambda
	CGO_ENABLED=0 GOOS=linux GOARCH=$${LAMBDA_ARCH:-arm64} $(GO) build -tags lambda.norpc -o $(BIN)/lambda/bootstrap ./cmd/lambda
	cd $(BIN)/lambda && rm -f queen-drain.zip && python3 -c "import zipfile; z=zipfile.ZipFile('queen-drain.zip','w'); z.write('bootstrap'); z.close()"

run: build
	./$(BIN)/queen-server

# Every test, under the race detector: unit tests, the ports' conformance suites,
# PostgreSQL integration tests (each test binary starts its own throwaway cluster unless
# QUEEN_TEST_PG_URL is set), the black-box HTTP tests in e2e/ (goleak checks that nothing
# is left running), fuzz seed corpora, the deployment manifests' checks (deploy/, its
# own module) and the benchmark peers' (bench/peers, its own module); after the static
# checks.
test: check
	$(GO) test -race -count=1 -timeout 18m ./...
	cd deploy && $(GO) test -race -count=1 ./...
	cd bench/peers && $(GO) test -race -count=1 ./...

# Static checks: go vet, staticcheck, and wire_gen.go up to date with wire.go (deploy/ and
# bench/peers, modules of their own, vetted and checked too).
check: vet wire-check
	$(STATICCHECK) ./...
	cd deploy && $(GO) vet ./... && $(STATICCHECK) ./...
	cd bench/peers && $(GO) vet ./... && $(STATICCHECK) ./...

# Fails when wire_gen.go is stale (regenerate it with make generate and commit it).
wire-check:
	@$(WIRE) diff . || { echo "wire_gen.go is out of date: run make generate"; exit 1; }

# Micro-benchmarks, then the push fusion benchmark against raw PostgreSQL inserts
# (docs/benchmarks.md explains the figures).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./core/...
	$(GO) test -run '^$$' -bench PushFusion -benchtime 1x -timeout 30m ./bench/broker

# The metrics history's costs (docs/benchmarks.md): counting on the push path (on/off),
# a dashboard polling every 5 s, one flush of 1,000 queues.
bench-history:
	$(GO) test -run '^$$' -bench 'PushHistoryCost|PushWithDashboard' -benchtime 1x -timeout 30m ./bench/broker
	$(GO) test -run '^$$' -bench 'AnalyticsDay' -benchtime 3x -timeout 30m ./bench/broker
	$(GO) test -run '^$$' -bench 'MetricsFlush' -benchtime 20x ./adapters/postgres

# The consume path: pop+ack throughput over a prefilled queue, and push-to-pop latency
# under a paced producer (docs/benchmarks.md).
bench-consume:
	$(GO) test -run '^$$' -bench 'PopAck|PushToPop' -benchtime 1x -timeout 30m ./bench/broker

# One ack/batch call by its size (10 to 5,000 items) and layout: µs per item must stay flat
# (docs/benchmarks.md).
bench-ack:
	$(GO) test -run '^$$' -bench AckBatch -benchtime 3x -timeout 30m ./bench/broker

# Pushes right after a broker restart, against the steady rate before it: how long the
# new broker's empty dedup cache makes pushes probe whole windows (QUEEN_BENCH_HISTORY
# segments per partition, default 300; docs/benchmarks.md).
bench-restart:
	$(GO) test -run '^$$' -bench PushAfterRestart -benchtime 1x -timeout 30m ./bench/broker

# The ordered pipeline (docs/benchmarks.md, "The ordered pipeline") for 60 s against a broker on a fresh embedded
# PostgreSQL; prints the verifier's verdict (PIPELINE_SECONDS, PIPELINE_RATE, ...: see the
# script).
bench-pipeline: build
	./scripts/bench-pipeline.sh

# Push fusion against one-row pgbench commits into the same embedded PostgreSQL (docs/benchmarks.md, "Performance round 2"),
# with PostgreSQL pinned to CPU 0 and the broker and load generators to CPU 1 (PIN=0: none
# pinned), in alternating rounds; prints a markdown table with the CPU per message of each
# (SCENARIOS, ROUNDS, SECONDS_PER_SIDE, PIN, ...: see the script). Needs pgbench and taskset.
bench-pinned: build
	./scripts/bench-pinned.sh

# Push-to-consume latency of queen-go beside River's (bench/peers/river, a module of its own
# so the broker never depends on River) on one embedded PostgreSQL, pinned as bench-pinned
# (PostgreSQL on CPU 0, the broker and both clients on CPU 1), alternating in rounds; prints
# a markdown table with each side's percentiles, CPU per message and the queen/river ratios
# (RATES, ROUNDS, SECONDS_PER_SIDE, PRODUCERS, PIN, ...: see the script). Needs taskset.
bench-latency: build
	cd bench/peers && $(GO) build -o ../../$(BIN)/peer-river ./river
	./scripts/bench-latency.sh

# The push bundle's database cost alone: backend CPU per segment of the set-based
# log_push_multi_v3 against its per-segment reference log_push_multi_v2, alternating
# (ALLOC_MODE=skip|probe, ALLOC_ROUNDS, ...: see the script).
bench-allocator: build
	./scripts/bench-allocator.sh

# The hot-list on against off (QUEEN_HOTLIST=1 / 0), side by side: wildcard pop+ack
# throughput, idle cost, push-to-pop latency and memory, each on brokers with fresh embedded
# PostgreSQLs, alternating, in rounds (HOTLIST_SCENARIOS, HOTLIST_ROUNDS, ...: see the
# script; docs/benchmarks.md). About 15 minutes on 2 cores.
bench-hotlist: build
	./scripts/bench-hotlist.sh

# What a loopback round trip costs its writer, answered on the same CPU and on the other.
bench-rtt: build
	./scripts/bench-rtt.sh

# The admin API's list routes timed on a database with many queues and partitions, and
# pushes with a dashboard polling them against pushes alone (docs/benchmarks.md).
bench-admin:
	$(GO) test -run '^$$' -bench 'AdminLists|PushWithAdminPoller' -benchtime 1x -timeout 30m ./bench/broker

# Push and pop+ack throughput with the retention cycle working through a million expired
# messages, against the same without it (docs/benchmarks.md).
bench-retention:
	$(GO) test -run '^$$' -bench 'RetentionCost' -benchtime 1x -timeout 30m ./bench/broker

# The fault matrix (e2e/faults, docs/reliability.md): every scenario, not only the fast ones make
# test runs; prints the table (fault, acknowledged, delivered, lost, order violations,
# stored duplicates, time to recover) and keeps it in faults-table.md.
faults:
	QUEEN_FAULTS_FULL=1 QUEEN_FAULTS_TABLE=$(CURDIR)/faults-table.md $(GO) test -count=1 -v -timeout 60m ./e2e/faults

# The soak of docs/reliability.md (L3, on demand, not in make test): a broker on a fresh
# embedded PostgreSQL under the verified fault load, 1,000 partitions at 2,000 msg/s for
# 30 min with retention on; a CSV row of its resources every 10 s, then the verifier and
# the leak criteria (SOAK_DURATION, SOAK_RATE, SOAK_PARTITIONS, SOAK_WARMUP, ...: see the
# script). Exits non-zero on FAIL; prints the directory holding soak.csv and the logs.
soak: build
	./scripts/soak.sh

# A replicated PostgreSQL as operators run it, by hand: etcd and three PostgreSQL nodes under
# Patroni on loopback ports (HA_DIR, default /tmp/queen-ha; HA_MODE=sync|async, HA_BASE_PORT,
# ...: see scripts/ha.sh). ha-up prints the QUEEN_PG_URL to start queen-server with;
# `patronictl -c $(HA_DIR)/node1/patroni.yml list` shows the cluster. Needs patroni and
# etcd-server (Debian packages).
HA_DIR ?= /tmp/queen-ha
ha-up:
	./scripts/ha.sh up $(HA_DIR)

ha-down:
	./scripts/ha.sh down $(HA_DIR)

# Regenerate wire_gen.go from wire.go (commit the result).
generate:
	$(WIRE) gen .

vet:
	$(GO) vet ./...

clean:
	rm -rf $(BIN)
