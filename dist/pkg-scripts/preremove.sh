#!/bin/sh
# Before removal (.deb: remove; .rpm: 0), not before an upgrade: stop innowarm's units, so
# that no sidecar or warm runs on without its binary (a warm stops its statements on the
# server as it exits).
set -e
[ -d /run/systemd/system ] || exit 0
case "$1" in
remove | 0)
	for unit in $(systemctl list-units --plain --no-legend --all 'innowarm*' 2>/dev/null | awk '{print $1}'); do
		systemctl stop "$unit" >/dev/null 2>&1 || true
	done
	;;
esac
exit 0
