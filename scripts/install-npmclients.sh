#!/usr/bin/env bash
# Installs the npm clients that the interop tests run against the gateway
# (interop/node, docs/interop.md): presto-client and trino-client at the
# versions interop/node/testdata/package-lock.json pins, with npm ci, into
# interop/node/testdata/node_modules. Node.js and npm come from Debian's
# packages when the machine has none. npm ci starts from the lock file each
# time, so the versions tested are always the ones committed.
set -euo pipefail
. "$(dirname "$0")/apt-install.sh"

if ! command -v node >/dev/null 2>&1; then
	apt_install npmclients nodejs
fi
if ! command -v npm >/dev/null 2>&1; then
	apt_install npmclients npm
fi
cd "$(dirname "$0")/../interop/node/testdata"
npm ci --no-audit --no-fund --loglevel=error >&2
echo "install-npmclients: done" >&2
