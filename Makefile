# queen-go. `make run` starts the broker (embedded PostgreSQL when no database is
# configured); `make test` runs every test.
GO       ?= go
BIN      := bin
PKGS     := ./...
WIRE     := $(GO) run github.com/google/wire/cmd/wire@v0.7.0

.PHONY: all build run test bench generate vet fmt clean

all: build

build:
	$(GO) build -o $(BIN)/queen-server ./cmd/server

run: build
	./$(BIN)/queen-server

# Every test, including the PostgreSQL integration tests (each package starts its own
# throwaway cluster unless QUEEN_TEST_PG_URL is set) and the fuzz seed corpora.
test:
	$(GO) vet $(PKGS)
	$(GO) test -count=1 -timeout 15m $(PKGS)

# Benchmarks, including the push fusion benchmark against raw inserts (docs/benchmarks.md).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./core/... 
	$(GO) test -run '^$$' -bench 'Push' -benchtime 1x -timeout 30m -v .

generate:
	$(WIRE) gen .

vet:
	$(GO) vet $(PKGS)

fmt:
	gofmt -l -w .

clean:
	rm -rf $(BIN)
