#!/usr/bin/env bash
# Installs chromium, which the test of the gateway's status page runs
# headless (a screenshot, and the DOM after the page's live refresh). Does
# nothing when chromium is already present, so it is safe to run before
# every test run.
set -euo pipefail
. "$(dirname "$0")/apt-install.sh"

if command -v chromium >/dev/null 2>&1; then
	exit 0
fi
apt_install chromium chromium
if ! command -v chromium >/dev/null 2>&1; then
	echo "install-chromium: the chromium package is installed but no chromium binary was found" >&2
	exit 1
fi
echo "install-chromium: done" >&2
