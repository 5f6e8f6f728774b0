#!/usr/bin/env bash
# lint.sh: golangci-lint (the version pinned here, installed with go install on first use)
# with .golangci.yml: errorlint, rowserrcheck, sqlclosecheck, contextcheck and the standard set.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
VERSION=v2.15.0
bin="$($GO env GOPATH)/bin/golangci-lint"
if ! "$bin" version 2>/dev/null | grep -q "version ${VERSION#v}"; then
	echo "== installing golangci-lint $VERSION (once)"
	$GO install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$VERSION"
fi
echo "== golangci-lint"
"$bin" run ./...
