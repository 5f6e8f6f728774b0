#!/usr/bin/env bash
# bench.sh [-run REGEXP] [-scale quick|full]: innowarm against its peers, same run, ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./tools/innowarm-bench -o bench-results -bin bin/innowarm "$@"
