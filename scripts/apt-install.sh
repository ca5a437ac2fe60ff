#!/usr/bin/env bash
# apt_install NAME PACKAGE: installs Debian's PACKAGE for the install-NAME
# script that sources this file, as root or through sudo, without starting
# the services the package ships (the test rig starts what it needs itself,
# on free loopback ports). The one place that knows how this project
# installs a Debian package.
apt_install() {
	local name=$1 package=$2
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "install-$name: apt-get not found; install $package yourself" >&2
		return 1
	fi
	local as_root=()
	if [[ $(id -u) -ne 0 ]]; then
		if ! command -v sudo >/dev/null 2>&1; then
			echo "install-$name: need root or sudo to run apt-get install $package" >&2
			return 1
		fi
		as_root=(sudo)
	fi
	echo "install-$name: installing the Debian $package package" >&2
	# policy-rc.d answering 101 keeps the package's own service from being
	# started by the install (where there is an init system at all).
	local policy=/usr/sbin/policy-rc.d added_policy=false
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\nexit 101\n' | "${as_root[@]}" tee "$policy" >/dev/null
		"${as_root[@]}" chmod 755 "$policy"
		added_policy=true
	fi
	local status=0
	"${as_root[@]}" apt-get update -qq &&
		"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends "$package" >/dev/null || status=$?
	if $added_policy; then
		"${as_root[@]}" rm -f "$policy"
	fi
	return $status
}
