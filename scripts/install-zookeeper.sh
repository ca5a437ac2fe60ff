#!/usr/bin/env bash
# Installs what the real-ZooKeeper tests and the demo need: java and the
# ZooKeeper server jars from Debian's "zookeeper" package. Does nothing when
# both are already present, so it is safe to run before every test run.
set -euo pipefail

jar_dir=/usr/share/java

have_zookeeper() {
	command -v java >/dev/null 2>&1 &&
		[[ -f "$jar_dir/zookeeper.jar" && -f "$jar_dir/zookeeper-jute.jar" ]]
}

if have_zookeeper; then
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-zookeeper: apt-get not found; install Java and ZooKeeper 3.8 yourself and" >&2
	echo "point ZKPRESTO_ZOOKEEPER_CLASSPATH at its jars (for example /opt/zookeeper/lib/*)" >&2
	exit 1
fi

if [[ $(id -u) -eq 0 ]]; then
	as_root=()
elif command -v sudo >/dev/null 2>&1; then
	as_root=(sudo)
else
	echo "install-zookeeper: need root or sudo to run apt-get install zookeeper" >&2
	exit 1
fi

echo "install-zookeeper: installing the Debian zookeeper package" >&2
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y -qq --no-install-recommends zookeeper >/dev/null

if ! have_zookeeper; then
	echo "install-zookeeper: the zookeeper package is installed but java or $jar_dir/zookeeper.jar is still missing" >&2
	exit 1
fi
echo "install-zookeeper: done" >&2
