#!/usr/bin/env bash
# dist.sh: innowarm's release files in release/ (make dist), from the binary, the command
# tree's docs and what dist/ holds (nfpm's recipe, systemd units, configuration, recipes):
#   linux_amd64/innowarm, linux_arm64/innowarm      static binaries (CGO off), the container's input
#   innowarm_VERSION_linux_ARCH.tar.gz              binary, man pages, completions, units, README
#   innowarm_VERSION-1_ARCH.deb, innowarm-VERSION-1.ARCH.rpm   the same, installed (nfpm)
#   Containerfile                                   the snapshot sidecar's image: docker build release/
#   SHA256SUMS                                      of the tarballs and packages
# VERSION is git describe (what `innowarm version` says); the packages' version is made valid
# for dpkg and rpm from it (tools/dist/version.go). Two runs on one commit give the same files.
#
#   ARCHES="amd64"   build fewer architectures (default: amd64 arm64)
#   OUT=dir          output directory (default: release)
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
ARCHES=${ARCHES:-amd64 arm64}
OUT=${OUT:-release}
# nfpm, built once per version into the user's cache (each `go run pkg@version` asks the
# module proxy again). v2.46+ needs modules (go.digitalxero.dev) the proxy does not serve
# everywhere.
NFPM_VERSION=v2.45.2
NFPM=${NFPM:-${XDG_CACHE_HOME:-$HOME/.cache}/innowarm/tools/nfpm-$NFPM_VERSION/nfpm}
if [ ! -x "$NFPM" ]; then
	echo "building nfpm $NFPM_VERSION into $(dirname "$NFPM") (once)"
	GOBIN=$(dirname "$NFPM") CGO_ENABLED=0 $GO install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION"
fi
export PKG_MAINTAINER=${PKG_MAINTAINER:-innowarm maintainers <maintainers@innowarm.invalid>}

describe=$(git describe --tags --always --dirty)
commits=$(git rev-list --count HEAD)
commit=$(git rev-parse --short=12 HEAD)
PKG_VERSION=$($GO run ./tools/dist pkgversion "$describe" "$commits")
export PKG_VERSION
# The commit's time stamps the man pages and the tarballs' entries: the same bytes each run.
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
export SOURCE_DATE_EPOCH
ldflags="-s -w -X github.com/innowarm/innowarm/internal/cli.version=$describe -X github.com/innowarm/innowarm/internal/cli.commit=$commit"
t0=$(date +%s)
echo "== innowarm $describe: packages $PKG_VERSION for $ARCHES in $OUT/"

rm -rf "$OUT"
mkdir -p "$OUT/build"
DIST_DOCS=$OUT/build/docs
$GO run -ldflags "$ldflags" ./tools/dist docs "$DIST_DOCS"

# What other parts of the tree put in dist/ for the package, listed for nfpm (whose globs
# fail on an empty directory): /etc/default files as configuration the admin's edits
# survive, proxy recipes' scripts in /usr/share/innowarm with their modes.
for f in dist/default/*; do
	[ -f "$f" ] || continue
	printf '  - src: ./%s\n    dst: /etc/default/%s\n    type: config|noreplace\n    file_info:\n      mode: 0644\n' "$f" "$(basename "$f")"
done >"$OUT/build/extra-contents.yaml"
for f in dist/proxysql/* dist/maxscale/*; do
	[ -f "$f" ] || continue
	mode=0644
	if [ -x "$f" ]; then mode=0755; fi
	printf '  - src: ./%s\n    dst: /usr/share/innowarm/%s\n    file_info:\n      mode: %s\n' "$f" "$(basename "$f")" "$mode"
done >>"$OUT/build/extra-contents.yaml"

for arch in $ARCHES; do
	bin=$OUT/linux_$arch/innowarm
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch $GO build -trimpath -ldflags "$ldflags" -o "$bin" ./cmd/innowarm
	echo "built $bin ($(du -h "$bin" | cut -f1))"

	name=innowarm_${PKG_VERSION}_linux_$arch
	tree=$OUT/build/$name
	mkdir -p "$tree/man/man1" "$tree/completions" "$tree/systemd"
	cp "$bin" README.md dist/innowarm.cnf dist/Containerfile "$tree/"
	cp "$DIST_DOCS"/man/man1/*.1.gz "$tree/man/man1/"
	cp "$DIST_DOCS"/completions/* "$tree/completions/"
	for d in systemd default proxysql maxscale; do
		if [ -d "dist/$d" ]; then cp -r "dist/$d" "$tree/"; fi
	done
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
		-C "$OUT/build" -cf - "$name" | gzip -9n >"$OUT/$name.tar.gz"

	sed -e "s#@DIST_BIN@#$bin#" -e "s#@DIST_DOCS@#$DIST_DOCS#g" -e "/# @EXTRA_CONTENTS@/r $OUT/build/extra-contents.yaml" dist/nfpm.yaml >"$OUT/build/nfpm.yaml"
	for packager in deb rpm; do
		GOARCH=$arch "$NFPM" package --config "$OUT/build/nfpm.yaml" --packager "$packager" --target "$OUT/" | grep -v '^using '
	done
done
cp dist/Containerfile "$OUT/"
rm -rf "$OUT/build"
(cd "$OUT" && sha256sum -- *.tar.gz *.deb *.rpm >SHA256SUMS)
echo "== $OUT/ in $(($(date +%s) - t0)) s:"
(cd "$OUT" && ls -l -- *.tar.gz *.deb *.rpm SHA256SUMS linux_*/innowarm | awk '{printf "  %-60s %9d bytes\n", $NF, $5}')
