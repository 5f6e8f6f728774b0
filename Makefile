# innowarm — see README.md. `make demo` and `make test` are the two set-up commands.
GO      ?= go
BIN     := bin/innowarm
# make install puts innowarm in $(DESTDIR)$(PREFIX)/bin (/usr/local/bin: on PATH, and where
# the README's systemd recipes call it).
PREFIX  ?= /usr/local
DESTDIR ?=
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/innowarm/innowarm/internal/cli.version=$(VERSION)

.PHONY: all build install deps test vet lint demo bench clean dist dist-check

# FLAVOR=mariadb-11.8 or mysql-9.7 runs the demo, the bench and the tests' first pass on that
# server (installed once with debootstrap into ~/.cache/innowarm/servers); see docs/flavors.md.
ifdef FLAVOR
export INNOWARM_FLAVOR := $(FLAVOR)
endif

all: build

build:
	@scripts/ensure-deps.sh go
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/innowarm

install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/innowarm

# deps installs what the tests and the demo need (server binaries, the tests' S3 server;
# haproxy, sqlite3, jq, curl for the agent's tests), or stops with exit 2 naming the package
# to install.
deps:
	@scripts/ensure-deps.sh go server s3server agent

vet:
	$(GO) vet ./...

# lint: golangci-lint with .golangci.yml (errorlint, rowserrcheck, sqlclosecheck,
# contextcheck and the standard linters); make test runs it too.
lint:
	@scripts/ensure-deps.sh go
	scripts/lint.sh

# test: go vet, golangci-lint, then side by side: every package under the race detector, and
# the packages that talk to a server against each other flavor (each test binary starts its
# own throwaway server; scripts/test.sh).
test: deps
	@scripts/ensure-deps.sh test
	scripts/test.sh

demo: deps build
	scripts/demo.sh

bench: deps build
	@scripts/ensure-deps.sh bench
	scripts/bench.sh

# dist: what a DBA installs, in release/: static binaries (CGO off) for linux amd64 and arm64,
# a .deb and an .rpm of each (nfpm, recipe in dist/) with man pages, completions and systemd
# units, tarballs, SHA256SUMS and the sidecar's Containerfile (scripts/dist.sh).
dist:
	@scripts/ensure-deps.sh go
	scripts/dist.sh

# dist-check: the .deb installed into a clean Debian 12 root (debootstrapped once into
# ~/.cache/innowarm/servers, then an overlay per run) runs and its units pass systemd-analyze
# verify; the .rpm and the tarballs are checked too. Needs root; CI runs it after make test
# (it builds every release file, which make test should not wait for).
dist-check: dist
	$(GO) test -tags distcheck -count=1 -v ./tools/dist/

clean:
	rm -rf bin release
