#!/usr/bin/env bash
# test.sh: go vet, golangci-lint, then every package under the race detector against the
# machine's own server, then the packages that talk to a server again against each other
# flavor, those passes side by side, without the race detector: it checks innowarm's own
# goroutines, which do not change with the server, and it made those passes 2-3x slower
# (the suite ran 27-28 min). Every pass runs even when an earlier one failed; the summary at
# the end gives each pass's result and time, and the script fails if any pass did.
#
#   FLAVORS="mariadb-11.8 mysql-9.7"   the other flavors (default: both); FLAVORS= skips them
#   PKGS=./internal/warm               limit the packages
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FLAVORS=${FLAVORS-mariadb-11.8 mysql-9.7}
PKGS=${PKGS:-./...}
start=$(date +%s)
summary=()
failed=0

# pass NAME COMMAND...: run one pass, note its result and time.
pass() {
	local name=$1 t0 rc
	shift
	echo "== $name"
	t0=$(date +%s)
	"$@"
	rc=$?
	if [ "$rc" = 0 ]; then
		summary+=("ok      $name ($(($(date +%s) - t0)) s)")
	else
		summary+=("FAILED  $name (exit $rc, $(($(date +%s) - t0)) s)")
		failed=1
	fi
	return "$rc"
}

pass "go vet" $GO vet ./...
pass "golangci-lint" scripts/lint.sh
flavors_ok=1
if [ -n "$FLAVORS" ]; then
	# shellcheck disable=SC2086
	pass "server flavors $FLAVORS (installed once into ~/.cache/innowarm/servers)" \
		$GO run ./cmd/innowarm sandbox flavors --install $FLAVORS || flavors_ok=0
fi
# shellcheck disable=SC2086
pass "go test -race $PKGS (the machine's own server)" $GO test -race -count=1 -timeout 20m $PKGS
# Packages whose tests start a server import sandboxtest (sandbox's own tests start theirs).
# shellcheck disable=SC2086
server=$($GO list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' $PKGS |
	awk '(/internal\/sandbox\/sandboxtest/ && $1 !~ /sandboxtest$/) || $1 ~ /internal\/sandbox$/ {print $1}')
# The other flavors' passes run at the same time, each in its own process group of test
# binaries: their tests mostly wait on their servers (restarts, loads), so two passes side by
# side on 2 CPUs take little more than the longer one (MySQL 9.7's: its restarts are the
# slowest), where one after the other they took 15 of the suite's 25 minutes. Each pass's
# output is printed whole when it ends, so the passes do not interleave.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pids=()
for flavor in $FLAVORS; do
	name="go test (flavor $flavor): $(echo "$server" | sed 's#github.com/innowarm/innowarm/internal/##' | tr '\n' ' ')"
	if [ -z "$server" ]; then
		summary+=("skipped $name (no package of PKGS starts a server)")
		continue
	fi
	if [ "$flavors_ok" = 0 ]; then
		summary+=("FAILED  $name (not run: the flavors did not install)")
		failed=1
		continue
	fi
	echo "== $name (started; its output follows when it ends)"
	(
		t0=$(date +%s)
		# shellcheck disable=SC2086
		INNOWARM_FLAVOR=$flavor $GO test -count=1 -timeout 20m $server >"$tmp/$flavor.log" 2>&1
		echo "$? $(($(date +%s) - t0))" >"$tmp/$flavor.rc"
	) &
	pids+=($!)
	echo "$name" >"$tmp/$flavor.name"
done
for pid in "${pids[@]}"; do
	wait "$pid"
done
for flavor in $FLAVORS; do
	[ -f "$tmp/$flavor.rc" ] || continue
	name=$(cat "$tmp/$flavor.name")
	read -r rc secs <"$tmp/$flavor.rc"
	echo "== $name"
	cat "$tmp/$flavor.log"
	if [ "$rc" = 0 ]; then
		summary+=("ok      $name ($secs s, beside the other flavors' passes)")
	else
		summary+=("FAILED  $name (exit $rc, $secs s, beside the other flavors' passes)")
		failed=1
	fi
done

echo
echo "== summary ($(($(date +%s) - start)) s in all)"
printf '%s\n' "${summary[@]}"
if [ "$failed" != 0 ]; then
	echo "== tests FAILED"
	exit 1
fi
echo "== tests passed in $(($(date +%s) - start)) s"
