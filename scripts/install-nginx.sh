#!/usr/bin/env bash
# Installs what the gateway's comparison with nginx needs (BENCHMARKS.md, the
# nginx test-rig's tests): the nginx binary from Debian's "nginx" package.
# Does nothing when nginx is already on PATH or in /usr/sbin, so it is safe to
# run before every test or benchmark run. The package's own service is not
# used: the test rig starts nginx on a free loopback port with its own config.
set -euo pipefail
. "$(dirname "$0")/apt-install.sh"

have_nginx() {
	command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]]
}

if have_nginx; then
	exit 0
fi
if ! apt_install nginx nginx; then
	echo "install-nginx: install nginx yourself (any 1.18 or later) and put it on PATH or point ZKPRESTO_NGINX at the binary" >&2
	exit 1
fi
if ! have_nginx; then
	echo "install-nginx: the nginx package is installed but no nginx binary was found" >&2
	exit 1
fi
echo "install-nginx: done" >&2
