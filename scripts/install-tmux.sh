#!/usr/bin/env bash
# Installs tmux, which the test of the interactive query shell drives as a
# terminal. Does nothing when tmux is already present, so it is safe to run
# before every test run.
set -euo pipefail
. "$(dirname "$0")/apt-install.sh"

if command -v tmux >/dev/null 2>&1; then
	exit 0
fi
apt_install tmux tmux
if ! command -v tmux >/dev/null 2>&1; then
	echo "install-tmux: the tmux package is installed but no tmux binary was found" >&2
	exit 1
fi
echo "install-tmux: done" >&2
