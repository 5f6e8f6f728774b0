#!/usr/bin/env bash
# demo.sh: start a throwaway sandbox server, show what innowarm sees, stop it.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=bin/innowarm
dir=$(mktemp -d "${TMPDIR:-/tmp}/innowarm-demo-XXXXXX")
cleanup() { "$BIN" sandbox down --purge --dir "$dir" >/dev/null 2>&1 || rm -rf "$dir"; }
trap cleanup EXIT
echo "== innowarm sandbox up (a throwaway MariaDB/MySQL server in $dir)"
"$BIN" sandbox up --dir "$dir" --pool-size 256M
sock=$("$BIN" sandbox status --dir "$dir" --json | sed -n 's/.*"socket": "\(.*\)".*/\1/p')
echo
echo "== innowarm ping (flavor, version, buffer pool)"
"$BIN" ping --no-defaults -S "$sock" -u root
echo
echo "== innowarm sandbox cold-restart"
"$BIN" sandbox cold-restart --dir "$dir"
echo
echo "== innowarm sandbox down --purge"
