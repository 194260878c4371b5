#!/usr/bin/env bash
# Runs the Spark Connect end-to-end tests against `aether serve --tpch 1`.
#
#   tests/connect/run.sh [pytest arguments...]
#
# AETHER_PY_VENV  the virtual environment to create or reuse (default target/connect-venv)
# AETHER_BIN      the aether binary (default target/release/aether)
# PYTHON          the Python that creates the environment (default python3, 3.10 or later)
set -euo pipefail
cd "$(dirname "$0")/../.."

venv=${AETHER_PY_VENV:-target/connect-venv}
binary=${AETHER_BIN:-target/release/aether}
requirements=tests/connect/requirements.txt

if [ ! -x "$binary" ]; then
    echo "run.sh: no aether binary at $binary (cargo build --release, or set AETHER_BIN)" >&2
    exit 2
fi
binary=$(realpath "$binary")

if [ ! -x "$venv/bin/python" ]; then
    "${PYTHON:-python3}" -m venv "$venv"
fi
stamp="$venv/.requirements.sha256"
wanted=$(sha256sum "$requirements" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$wanted" ]; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    echo "$wanted" >"$stamp"
fi

port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp "${TMPDIR:-/tmp}/aether-serve.XXXXXX")
"$binary" serve --tpch 1 --port "$port" >"$log" 2>&1 &
server=$!

stop_server() {
    if kill -0 "$server" 2>/dev/null; then
        kill -TERM "$server" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$server" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$server" 2>/dev/null || true
    fi
    wait "$server" 2>/dev/null || true
}
trap stop_server EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

deadline=$((SECONDS + 120))
until grep -q "listening on" "$log"; do
    if ! kill -0 "$server" 2>/dev/null; then
        echo "run.sh: aether serve exited before listening:" >&2
        cat "$log" >&2
        exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
        echo "run.sh: aether serve did not say 'listening on' within 120 s:" >&2
        cat "$log" >&2
        exit 1
    fi
    sleep 0.2
done
echo "run.sh: aether serve --tpch 1 is listening on port $port (log: $log)"

export AETHER_CONNECT_URL="sc://localhost:$port"
export AETHER_BIN="$binary"
status=0
"$venv/bin/python" -m pytest tests/connect -q "$@" || status=$?
if [ "$status" -ne 0 ]; then
    echo "run.sh: last lines of the server log ($log):"
    tail -n 40 "$log"
fi
exit "$status"
