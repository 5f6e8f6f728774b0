#!/usr/bin/env bash
# ensure-deps.sh go|server|agent|bench...: check what innowarm's make targets need and install it
# through apt when running as root on Debian/Ubuntu; otherwise stop with exit 2 and the
# exact package to install.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }

find_server() {
	for n in mariadbd mysqld; do
		have "$n" && return 0
		for d in /usr/sbin /usr/local/sbin /usr/local/mysql/bin /opt/mysql/bin; do
			[ -x "$d/$n" ] && return 0
		done
	done
	return 1
}

apt_install() {
	# apt_install PACKAGE...: install or explain.
	if [ "$(id -u)" = 0 ] && have apt-get; then
		echo "ensure-deps: installing $* with apt-get" >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq >/dev/null || true
		# policy-rc.d 101 keeps a freshly installed system server from starting: the tests
		# and the demo use their own sandboxes.
		local policy=/usr/sbin/policy-rc.d created=""
		if [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; created=1; fi
		local rc=0
		apt-get install -y -qq "$@" >/dev/null || rc=$?
		[ -n "$created" ] && rm -f "$policy"
		[ "$rc" = 0 ] && return 0
		echo "ensure-deps: apt-get install $* failed (exit $rc)" >&2
		exit 2
	fi
	echo "ensure-deps: missing $*: install it with 'sudo apt-get install -y $*' (Debian/Ubuntu), then run make again" >&2
	exit 2
}

for what in "$@"; do
	case "$what" in
	go)
		if ! have go; then
			echo "ensure-deps: Go is not installed: install Go 1.24 or newer from https://go.dev/dl/ (Debian's golang-go is too old), then run make again" >&2
			exit 2
		fi
		;;
	server)
		find_server || apt_install mariadb-server
		# MariaDB needs its installer script beside the server (MySQL initializes itself).
		if have mariadbd || [ -x /usr/sbin/mariadbd ]; then
			have mariadb-install-db || have mysql_install_db || apt_install mariadb-server
		fi
		;;
	agent)
		# internal/agent's tests: a real haproxy on loopback (the package's own service is
		# kept from starting: policy-rc.d, above), the recipes' tools (sqlite3 stands in for
		# ProxySQL's admin tables), systemd-analyze for the unit.
		have haproxy || [ -x /usr/sbin/haproxy ] || apt_install haproxy
		have sqlite3 || apt_install sqlite3
		have jq || apt_install jq
		have curl || apt_install curl
		have systemd-analyze || apt_install systemd
		;;
	bench)
		have mariadb-slap || have mysqlslap || apt_install mariadb-client
		have sysbench || apt_install sysbench
		;;
	*)
		echo "ensure-deps: unknown requirement $what" >&2
		exit 2
		;;
	esac
done
