#!/usr/bin/env bash
# test.sh: go vet, golangci-lint, then the tests in three passes run side by side: every
# package under the race detector against the machine's own server, and the packages that
# talk to a server again against each other flavor, without the race detector (it checks
# innowarm's own goroutines, which do not change with the server, and it made those passes
# 2-3x slower). The tests mostly wait on their servers (restarts, loads, the clients'
# pacing): one pass alone left the 2 CPUs idle most of the time, and the passes one after
# the other took 21-24 minutes. Each pass starts its longest packages first (the times of the
# last run, kept in ~/.cache/innowarm), so that no long package starts last. Every pass runs
# even when another failed; each one's output is printed whole when all have ended, then a
# summary gives each pass's result and time, and the script fails if any pass did.
#
#   FLAVORS="mariadb-11.8 mysql-9.7"   the other flavors (default: both); FLAVORS= skips them
#   PKGS=./internal/warm               limit the packages
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FLAVORS=${FLAVORS-mariadb-11.8 mysql-9.7}
PKGS=${PKGS:-./...}
TIMES=${XDG_CACHE_HOME:-$HOME/.cache}/innowarm/test-times
start=$(date +%s)
summary=()
failed=0

# pass NAME COMMAND...: run one pass in the foreground, note its result and time.
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

# longest_first KEY PKG...: the packages, those that took longest in the last run of pass
# KEY first; packages with no time on record (new ones) before all. A machine with no record
# of its own (a new VM, a clean CI runner) takes the times committed in scripts/test-times,
# a record of this project's 2-CPU VM: without them the first run started MySQL's longest
# package last and took 21 minutes instead of 14.
longest_first() {
	local key=$1
	shift
	printf '%s\n' "$@" | awk -v committed="scripts/test-times/$key" -v file="$TIMES/$key" '
		BEGIN {
			while ((getline line < committed) > 0) { split(line, f, " "); t[f[1]] = f[2] }
			while ((getline line < file) > 0) { split(line, f, " "); t[f[1]] = f[2] }
		}
		{ print ($1 in t ? t[$1] : 1e9), NR, $1 }' | sort -k1,1gr -k2,2n | awk '{print $3}'
}

# record KEY LOG: keep each package's time from a pass's output for the next run's order,
# beside the times of packages this run left out (PKGS=...).
record() {
	mkdir -p "$TIMES" &&
		awk -v old="$TIMES/$1" '
			BEGIN { while ((getline line < old) > 0) { split(line, f, " "); t[f[1]] = f[2] } }
			($1 == "ok" || $1 == "FAIL") && $3 ~ /^[0-9.]+s$/ { sub(/s$/, "", $3); t[$2] = $3 }
			END { for (p in t) print p, t[p] }' "$2" >"$TIMES/$1.new" &&
		mv "$TIMES/$1.new" "$TIMES/$1"
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
all=$($GO list $PKGS)
# Packages whose tests start a server import sandboxtest (sandbox's own tests start theirs).
# shellcheck disable=SC2086
server=$($GO list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' $PKGS |
	awk '(/internal\/sandbox\/sandboxtest/ && $1 !~ /sandboxtest$/) || $1 ~ /internal\/sandbox$/ {print $1}')
short() { echo "$@" | sed 's#github.com/innowarm/innowarm/internal/##g' | tr '\n' ' '; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passes=()
# launch KEY NAME ENV COMMAND...: start a pass in the background; its output goes to a file.
launch() {
	local key=$1 name=$2 env=$3
	shift 3
	echo "== $name (started; its output follows when all passes end)"
	echo "$name" >"$tmp/$key.name"
	(
		t0=$(date +%s)
		# shellcheck disable=SC2086
		env $env "$@" >"$tmp/$key.log" 2>&1
		echo "$? $(($(date +%s) - t0))" >"$tmp/$key.rc"
	) &
	passes+=("$key")
}
# A package's timeout is 3-4x its time on a quiet machine (MySQL 9.7's warm: about 10
# min): 30 min was hit by a run beside other work on the 2 CPUs.
# shellcheck disable=SC2046
launch race "go test -race $PKGS (the machine's own server)" "" \
	$GO test -race -count=1 -timeout 45m $(longest_first race $all)
for flavor in $FLAVORS; do
	name="go test (flavor $flavor): $(short "$server")"
	if [ -z "$server" ]; then
		summary+=("skipped $name (no package of PKGS starts a server)")
		continue
	fi
	if [ "$flavors_ok" = 0 ]; then
		summary+=("FAILED  $name (not run: the flavors did not install)")
		failed=1
		continue
	fi
	# shellcheck disable=SC2046
	launch "$flavor" "$name" "INNOWARM_FLAVOR=$flavor" \
		$GO test -count=1 -timeout 45m $(longest_first "$flavor" $server)
done
wait
for key in "${passes[@]}"; do
	name=$(cat "$tmp/$key.name")
	read -r rc secs <"$tmp/$key.rc"
	echo "== $name"
	cat "$tmp/$key.log"
	record "$key" "$tmp/$key.log"
	if [ "$rc" = 0 ]; then
		summary+=("ok      $name ($secs s, beside the other passes)")
	else
		summary+=("FAILED  $name (exit $rc, $secs s, beside the other passes)")
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
