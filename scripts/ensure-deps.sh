#!/usr/bin/env bash
# ensure-deps.sh go|server|test|s3server|agent|bench...: check what innowarm's make targets
# need and install it through apt when running as root on Debian/Ubuntu (s3server: with go
# install); otherwise stop with exit 2 and the exact package to install.
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
		# go.mod names Go 1.26; a go command of 1.21 or newer fetches that toolchain through
		# the Go module proxy by itself (GOTOOLCHAIN=auto), an older one cannot.
		if ! have go; then
			echo "ensure-deps: Go is not installed: install Go 1.21 or newer from https://go.dev/dl/ (it fetches the Go 1.26 toolchain go.mod names; Debian 12's golang-go is 1.19, too old), then run make again" >&2
			exit 2
		fi
		minor=$(go env GOVERSION 2>/dev/null | sed -n 's/.*go1\.\([0-9]*\).*/\1/p')
		if [ -z "$minor" ] || [ "$minor" -lt 21 ]; then
			echo "ensure-deps: $(go version 2>/dev/null || echo 'this go') is too old: install Go 1.21 or newer from https://go.dev/dl/ (it fetches the Go 1.26 toolchain go.mod names), then run make again" >&2
			exit 2
		fi
		;;
	test)
		# TestPasswordHiddenFromPs reads the process list with ps.
		have ps || apt_install procps
		;;
	server)
		find_server || apt_install mariadb-server
		# MariaDB needs its installer script beside the server (MySQL initializes itself).
		if have mariadbd || [ -x /usr/sbin/mariadbd ]; then
			have mariadb-install-db || have mysql_install_db || apt_install mariadb-server
		fi
		;;
	s3server)
		# The tests' S3 server (internal/objstore/s3test starts it): versitygw, built once into
		# GOBIN; the version is the one s3test.Version names, read from the binary's build info.
		version=v1.8.0
		gobin="$(go env GOBIN)"
		bin="${gobin:-$(go env GOPATH | cut -d: -f1)/bin}/versitygw"
		if ! go version -m "$bin" 2>/dev/null | grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/versity/versitygw[[:space:]]+$version[[:space:]]"; then
			echo "ensure-deps: installing versitygw $version (the tests' S3 server) with go install" >&2
			go install "github.com/versity/versitygw/cmd/versitygw@$version" || {
				echo "ensure-deps: go install github.com/versity/versitygw/cmd/versitygw@$version failed" >&2
				exit 2
			}
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
