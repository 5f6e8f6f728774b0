#!/usr/bin/env bash
# demo.sh: the 2017 cold-start benchmark, reproduced on a throwaway sandbox server in about
# two minutes on 2 cores: 20,000 unique-key lookups after cold restarts, cold vs hot vs
# innowarm warm vs the 2017 tool's scans vs InnoDB's own dump/load vs a snapshot manifest.
# The sandbox is removed at the end; the report stays in reports/demo-coldstart.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=bin/innowarm
report=${DEMO_REPORT_DIR:-reports/demo-coldstart}
rows=${DEMO_ROWS:-1000000}
echo "== innowarm experiment coldstart --rows $rows --queries 20000 --pool-size 256M --snapshot --interval 500ms"
echo "   (progress on stderr; the Markdown table and the report's path follow)"
echo
"$BIN" experiment coldstart --rows "$rows" --queries 20000 --pool-size 256M --snapshot --interval 500ms --report-dir "$report"
