#!/usr/bin/env bash
# test.sh: go vet, then every package under the race detector against the machine's own
# server, then the packages that talk to a server again against each other flavor.
#
#   FLAVORS="mariadb-11.8 mysql-9.7"   the other flavors (default: both); FLAVORS= skips them
#   PKGS=./internal/warm               limit the packages
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FLAVORS=${FLAVORS-mariadb-11.8 mysql-9.7}
PKGS=${PKGS:-./...}
start=$(date +%s)
echo "== go vet"
$GO vet ./...
scripts/lint.sh
if [ -n "$FLAVORS" ]; then
	echo "== server flavors: $FLAVORS (installed once into ~/.cache/innowarm/servers)"
	# shellcheck disable=SC2086
	$GO run ./cmd/innowarm sandbox flavors --install $FLAVORS
fi
echo "== go test -race $PKGS (the machine's own server)"
# shellcheck disable=SC2086
$GO test -race -count=1 -timeout 20m $PKGS
# Packages whose tests start a server import sandboxtest (sandbox's own tests start theirs).
server=$($GO list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' $PKGS |
	awk '(/internal\/sandbox\/sandboxtest/ && $1 !~ /sandboxtest$/) || $1 ~ /internal\/sandbox$/ {print $1}')
for flavor in $FLAVORS; do
	echo "== go test -race (flavor $flavor): $(echo "$server" | sed 's#github.com/innowarm/innowarm/internal/##' | tr '\n' ' ')"
	t0=$(date +%s)
	# shellcheck disable=SC2086
	INNOWARM_FLAVOR=$flavor $GO test -race -count=1 -timeout 20m $server
	echo "== flavor $flavor passed in $(($(date +%s) - t0)) s"
done
echo "== tests passed in $(($(date +%s) - start)) s"
