#!/usr/bin/env bash
# Makes the virtual environment of the Python clients interop/realservers
# runs (trino-python-client with its SQLAlchemy dialect, presto-python-client),
# from PyPI at the versions scripts/python/requirements.txt pins, in
# $ZKPRESTO_PYTHON_CLIENTS (default ~/.cache/zkpresto/python-clients). A
# second run with the same requirements does nothing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/apt-install.sh"

venv="${ZKPRESTO_PYTHON_CLIENTS:-${XDG_CACHE_HOME:-$HOME/.cache}/zkpresto/python-clients}"
req="$here/python/requirements.txt"
# The requirements a finished environment was made from: written last.
stamp="$venv/zkpresto-requirements.txt"
if [[ -x "$venv/bin/python" && -f "$stamp" ]] && cmp -s "$req" "$stamp"; then
	exit 0
fi
if ! command -v python3 >/dev/null 2>&1; then
	apt_install python-clients python3
fi
probe=$(mktemp -d)
if ! python3 -m venv "$probe/venv" >/dev/null 2>&1; then
	apt_install python-clients python3-venv
fi
rm -rf "$probe"
start=$(date +%s)
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
python3 -m venv "$venv"
log=$(mktemp)
if ! "$venv/bin/pip" install --disable-pip-version-check -r "$req" >"$log" 2>&1; then
	echo "install-python-clients: pip install -r $req failed:" >&2
	tail -30 "$log" >&2
	rm -f "$log"
	exit 1
fi
rm -f "$log"
cp "$req" "$stamp"
echo "install-python-clients: $venv ($(du -sh "$venv" | cut -f1), $(($(date +%s) - start)) s)" >&2
