# innowarm — see README.md. `make demo` and `make test` are the two set-up commands.
GO      ?= go
BIN     := bin/innowarm
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/innowarm/innowarm/internal/cli.version=$(VERSION)

.PHONY: all build deps test vet lint demo bench clean

# FLAVOR=mariadb-11.8 or mysql-9.7 runs the demo, the bench and the tests' first pass on that
# server (installed once with debootstrap into ~/.cache/innowarm/servers); see docs/flavors.md.
ifdef FLAVOR
export INNOWARM_FLAVOR := $(FLAVOR)
endif

all: build

build:
	@scripts/ensure-deps.sh go
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/innowarm

# deps installs what the tests and the demo need (server binaries; haproxy, sqlite3, jq,
# curl for the agent's tests), or stops with exit 2 naming the package to install.
deps:
	@scripts/ensure-deps.sh go server agent

vet:
	$(GO) vet ./...

# lint: golangci-lint with .golangci.yml (errorlint, rowserrcheck, sqlclosecheck,
# contextcheck and the standard linters); make test runs it too.
lint:
	@scripts/ensure-deps.sh go
	scripts/lint.sh

# test: go vet, the race detector on packages that need no server, then every package
# (each test binary starts its own throwaway server).
test: deps
	scripts/test.sh

demo: deps build
	scripts/demo.sh

bench: deps build
	@scripts/ensure-deps.sh bench
	scripts/bench.sh

clean:
	rm -rf bin
