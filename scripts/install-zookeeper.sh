#!/usr/bin/env bash
# Installs what the real-ZooKeeper tests and the demo need: java and the
# ZooKeeper server jars from Debian's "zookeeper" package. Does nothing when
# both are already present, so it is safe to run before every test run.
set -euo pipefail
. "$(dirname "$0")/apt-install.sh"

jar_dir=/usr/share/java

have_zookeeper() {
	command -v java >/dev/null 2>&1 &&
		[[ -f "$jar_dir/zookeeper.jar" && -f "$jar_dir/zookeeper-jute.jar" ]]
}

if have_zookeeper; then
	exit 0
fi
if ! apt_install zookeeper zookeeper; then
	echo "install-zookeeper: install Java and ZooKeeper 3.8 yourself and point ZKPRESTO_ZOOKEEPER_CLASSPATH at its jars (for example /opt/zookeeper/lib/*)" >&2
	exit 1
fi
if ! have_zookeeper; then
	echo "install-zookeeper: the zookeeper package is installed but java or $jar_dir/zookeeper.jar is still missing" >&2
	exit 1
fi
echo "install-zookeeper: done" >&2
