#!/usr/bin/env bash
# Installs what the gateway's comparison with nginx needs (BENCHMARKS.md, the
# nginx test-rig's tests): the nginx binary from Debian's "nginx" package.
# Does nothing when nginx is already on PATH or in /usr/sbin, so it is safe to
# run before every test or benchmark run. The package's own service is not
# used: the test rig starts nginx on a free loopback port with its own config.
set -euo pipefail

have_nginx() {
	command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]]
}

if have_nginx; then
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-nginx: apt-get not found; install nginx yourself (any 1.18 or later) and" >&2
	echo "put it on PATH or point ZKPRESTO_NGINX at the binary" >&2
	exit 1
fi

if [[ $(id -u) -eq 0 ]]; then
	as_root=()
elif command -v sudo >/dev/null 2>&1; then
	as_root=(sudo)
else
	echo "install-nginx: need root or sudo to run apt-get install nginx" >&2
	exit 1
fi

echo "install-nginx: installing the Debian nginx package" >&2
# policy-rc.d answering 101 keeps the package's own nginx service from being
# started on port 80 by the install (where there is an init system at all).
policy=/usr/sbin/policy-rc.d
added_policy=false
if [[ ! -e $policy ]]; then
	printf '#!/bin/sh\nexit 101\n' | "${as_root[@]}" tee "$policy" >/dev/null
	"${as_root[@]}" chmod 755 "$policy"
	added_policy=true
fi
cleanup() {
	if $added_policy; then
		"${as_root[@]}" rm -f "$policy"
	fi
}
trap cleanup EXIT
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y -qq --no-install-recommends nginx >/dev/null

if ! have_nginx; then
	echo "install-nginx: the nginx package is installed but no nginx binary was found" >&2
	exit 1
fi
echo "install-nginx: done" >&2
