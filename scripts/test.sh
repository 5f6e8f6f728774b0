#!/usr/bin/env bash
# test.sh: go vet, race detector on the packages that need no server, then all packages.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
start=$(date +%s)
echo "== go vet"
$GO vet ./...
# Packages whose tests start a sandbox import sandboxtest; the others are pure logic.
pure=$($GO list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... |
	awk '!/sandboxtest/ && $1 !~ /internal\/sandbox$/ && NF > 1 {print $1}')
if [ -n "$pure" ]; then
	echo "== go test -race (packages without a server)"
	# shellcheck disable=SC2086
	$GO test -race -count=1 $pure
fi
echo "== go test ./... (each test binary starts its own throwaway server)"
$GO test -count=1 -timeout 20m ./...
echo "== tests passed in $(( $(date +%s) - start )) s"
