#!/usr/bin/env bash
# Fetches the real coordinators the tests start (zkprestotest/realserver):
# Trino 476 and PrestoDB 0.287, each with the tpch, memory and blackhole
# connectors, the file resource group manager and the password
# authenticators (the file authenticator, for the tests of TLS with
# passwords), and the clients the tests run against them (trino-jdbc 476,
# presto-jdbc 0.287, trino-cli 476, presto-cli 0.287), resolved by Maven from Maven Central
# with strict checksums.
# The result is cached (ZKPRESTO_REAL_SERVERS, by default
# ~/.cache/zkpresto/real-servers); a second run fetches nothing.
#
# Why these versions (docs/development.md, "Real servers"):
#   Trino 476 is the newest whose server is on Maven Central. The plugin zip
#   of trino-blackhole 476 is not published, and Trino refuses a plugin of
#   another SPI version, so the whole trino-server tarball is fetched and
#   only lib/ and the plugins are kept.
#   PrestoDB 0.287 is the newest at which presto-main, presto-tpch,
#   presto-memory, presto-blackhole, presto-resource-group-managers and
#   presto-password-authenticators are all published; the 2 GB presto-server tarball is assembled from them
#   instead.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${ZKPRESTO_REAL_SERVERS:-${XDG_CACHE_HOME:-$HOME/.cache}/zkpresto/real-servers}"
mkdir -p "$cache"
# Absolute: Maven runs from other directories below, and the tests read it
# from their own.
cache=$(cd "$cache" && pwd)

trino_version=476
presto_version=0.287
# The plugins each server gets; .complete holds the list, so that a cache
# made with fewer is fetched again.
plugins=(tpch memory blackhole resource-group-managers password-authenticators)
layout="plugins: ${plugins[*]}"
mvn_flags=(-q -B --strict-checksums -Dstyle.color=never)
# ZKPRESTO_MAVEN_REPO, when set, is Maven's local repository for this
# script (a fresh one measures a first fetch; CI may cache it), but for the
# Trino tarball, which goes through a repository of its own.
if [[ -n "${ZKPRESTO_MAVEN_REPO:-}" ]]; then
	mvn_flags+=("-Dmaven.repo.local=$ZKPRESTO_MAVEN_REPO")
fi

# A JDK whose major version is at least $1 (and at most $2, if given),
# printed as its home.
find_jdk() {
	local min=$1 max=${2:-999} home v
	for home in "${JAVA_HOME:-}" /usr/lib/jvm/*; do
		[[ -n "$home" && -x "$home/bin/java" ]] || continue
		v=$("$home/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
		if [[ -n "$v" && "${v%%.*}" -ge "$min" && "${v%%.*}" -le "$max" ]]; then
			echo "$home"
			return 0
		fi
	done
	return 1
}

# Runs Maven quietly: its output goes to a log, shown only when it fails.
maven() {
	local log
	log=$(mktemp)
	if ! mvn "${mvn_flags[@]}" "$@" >"$log" 2>&1; then
		echo "fetch-real-servers: mvn $* failed:" >&2
		tail -40 "$log" >&2
		rm -f "$log"
		exit 1
	fi
	rm -f "$log"
}

# Whether server directory $1 was completed with today's plugins.
complete() {
	[[ -f "$1/.complete" && "$(cat "$1/.complete")" == "$layout" ]]
}

need() {
	command -v "$1" >/dev/null 2>&1 || {
		echo "fetch-real-servers: $1 is missing; install Maven and a JDK (Debian: apt-get install maven)" >&2
		exit 1
	}
}

fetch_trino() {
	local dir="$cache/trino-$trino_version"
	complete "$dir" && return 0
	local jdk
	if ! jdk=$(find_jdk 24); then
		echo "fetch-real-servers: Trino $trino_version needs Java 24 or later; none found in JAVA_HOME or /usr/lib/jvm" >&2
		exit 1
	fi
	need mvn
	rm -rf "$dir.tmp" "$dir.download" && mkdir -p "$dir.tmp"
	# The 821 MB tarball goes through a local repository of its own, removed
	# once extracted: the extract is the cache.
	maven -Dmaven.repo.local="$dir.download/repository" dependency:copy \
		-Dartifact="io.trino:trino-server:$trino_version:tar.gz" -DoutputDirectory="$dir.download"
	local tarball="$dir.download/trino-server-$trino_version.tar.gz"
	local top="trino-server-$trino_version" targets p
	local members=("$top/lib" "${plugins[@]/#/$top/plugin/}")
	# A jar shared by plugins is one file hard-linked into each: the other
	# plugins' copies are extracted too, then only the plugins wanted kept.
	# (tar refuses a name inside a member already named as not found.)
	mapfile -t targets < <(tar -tvzf "$tarball" "${members[@]}" | sed -n 's/.* link to //p' | sort -u |
		grep -v -F -f <(printf '%s/\n' "${members[@]}") || true)
	mkdir -p "$dir.download/extract" "$dir.tmp/plugin"
	tar -xzf "$tarball" -C "$dir.download/extract" --strip-components=1 "${members[@]}" "${targets[@]}"
	mv "$dir.download/extract/lib" "$dir.tmp/lib"
	for p in "${plugins[@]}"; do
		mv "$dir.download/extract/plugin/$p" "$dir.tmp/plugin/$p"
	done
	rm -rf "$dir.download"
	echo "$jdk" >"$dir.tmp/java-home"
	echo "io.trino.server.TrinoServer" >"$dir.tmp/main-class"
	echo "$trino_version" >"$dir.tmp/version"
	echo "$layout" >"$dir.tmp/.complete"
	rm -rf "$dir" && mv "$dir.tmp" "$dir"
}

# Copies artifact $1's runtime dependencies (itself included) into $2.
presto_deps() {
	local work
	work=$(mktemp -d)
	sed "s/ARTIFACT/$1/g" "$here/realservers/presto-$presto_version.pom" >"$work/pom.xml"
	(cd "$work" && maven dependency:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory="$2")
	rm -rf "$work"
}

fetch_presto() {
	local dir="$cache/presto-$presto_version"
	complete "$dir" && return 0
	local jdk
	# PrestoDB 0.287 runs on Java 17; a newer one is the fallback.
	if ! jdk=$(find_jdk 17 17) && ! jdk=$(find_jdk 17); then
		echo "fetch-real-servers: PrestoDB $presto_version needs Java 17; none found in JAVA_HOME or /usr/lib/jvm" >&2
		exit 1
	fi
	need mvn
	rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
	presto_deps presto-main "$dir.tmp/lib"
	local p
	for p in "${plugins[@]}"; do
		presto_deps "presto-$p" "$dir.tmp/plugin/$p"
	done
	if ! compgen -G "$dir.tmp/lib/presto-main-*.jar" >/dev/null; then
		echo "fetch-real-servers: PrestoDB $presto_version: presto-main did not land in lib/" >&2
		exit 1
	fi
	echo "$jdk" >"$dir.tmp/java-home"
	echo "com.facebook.presto.server.PrestoServer" >"$dir.tmp/main-class"
	echo "$presto_version" >"$dir.tmp/version"
	echo "$layout" >"$dir.tmp/.complete"
	rm -rf "$dir" && mv "$dir.tmp" "$dir"
}

# The Java clients BI tools and users run, for the tests through the
# gateway: the JDBC drivers and the CLIs of both, in clients/. .complete
# holds the list, so that a cache made with fewer fetches only the jars it
# lacks.
clients=("io.trino:trino-jdbc:$trino_version" "com.facebook.presto:presto-jdbc:$presto_version"
	"io.trino:trino-cli:$trino_version:jar:executable" "com.facebook.presto:presto-cli:$presto_version:jar:executable")
clients_layout="clients: ${clients[*]}"

fetch_clients() {
	local dir="$cache/clients"
	[[ -f "$dir/.complete" && "$(cat "$dir/.complete")" == "$clients_layout" ]] && return 0
	need mvn
	rm -rf "$dir.tmp" && mkdir -p "$dir.tmp" "$dir"
	local a group artifact version type classifier jar
	for a in "${clients[@]}"; do
		IFS=: read -r group artifact version type classifier <<<"$a"
		jar="$artifact-$version${classifier:+-$classifier}.jar"
		[[ -f "$dir/$jar" ]] && continue
		# Through clients.tmp, so that an interrupted copy never leaves a
		# partial jar under the name the tests read.
		maven dependency:copy -Dartifact="$a" -DoutputDirectory="$dir.tmp"
		mv "$dir.tmp/$jar" "$dir/$jar"
	done
	echo "$clients_layout" >"$dir/.complete"
	rm -rf "$dir.tmp"
}

start=$(date +%s)
fetch_trino
fetch_presto
fetch_clients
echo "fetch-real-servers: Trino $trino_version and PrestoDB $presto_version (and their JDBC drivers and CLIs) in $cache ($(du -sh "$cache" | cut -f1), $(($(date +%s) - start)) s)" >&2
