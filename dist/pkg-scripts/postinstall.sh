#!/bin/sh
# After install or upgrade (.deb: configure [OLD-VERSION]; .rpm: 1 install, 2+ upgrade):
# systemd learns the new units, and on an upgrade the sidecars that run pick up the new
# binary. A warm in progress (innowarm-warm@) is left to finish with the binary it started.
set -e
[ -d /run/systemd/system ] || exit 0
systemctl daemon-reload >/dev/null 2>&1 || true
case "$1" in
configure) upgrade=${2:+yes} ;;
[2-9]*) upgrade=yes ;;
*) upgrade= ;;
esac
if [ -n "$upgrade" ]; then
	for unit in $(systemctl list-units --plain --no-legend --state=running 'innowarm*' 2>/dev/null | awk '{print $1}'); do
		case "$unit" in
		innowarm-warm@*) ;;
		*) systemctl try-restart "$unit" >/dev/null 2>&1 || true ;;
		esac
	done
fi
exit 0
