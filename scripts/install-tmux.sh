#!/usr/bin/env bash
# Installs tmux, which the test of the interactive query shell drives as a
# terminal. Does nothing when tmux is already present, so it is safe to run
# before every test run.
set -euo pipefail

if command -v tmux >/dev/null 2>&1; then
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-tmux: apt-get not found; install tmux yourself" >&2
	exit 1
fi

if [[ $(id -u) -eq 0 ]]; then
	as_root=()
elif command -v sudo >/dev/null 2>&1; then
	as_root=(sudo)
else
	echo "install-tmux: need root or sudo to run apt-get install tmux" >&2
	exit 1
fi

echo "install-tmux: installing the Debian tmux package" >&2
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y -qq --no-install-recommends tmux >/dev/null

if ! command -v tmux >/dev/null 2>&1; then
	echo "install-tmux: the tmux package is installed but tmux is still missing" >&2
	exit 1
fi
echo "install-tmux: done" >&2
