#!/usr/bin/env bash
# Builds what scripts/device-check.sh runs on a GPU host and packs it into .devcarry/:
# the `aether` binary and the GPU test binaries, stripped and xz-compressed (about
# 21 MB each). Uses the test build, which also builds `aether`, so DataFusion is built
# once. .devcarry/ is meant to be ignored (`echo /.devcarry/ >> .git/info/exclude`).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release --workspace --no-run --message-format=json 2>/dev/null \
    | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["target"]["name"], m["executable"])
' > /tmp/aether-executables.txt
mkdir -p .devcarry
rm -f .devcarry/*.xz
wanted="aether gpu_runtime gpu_transfer gpu_queries"
while read -r name path; do
    for w in $wanted; do
        # `aether` names the binary and its unit tests too: take the binary.
        if [ "$name" = "$w" ] && { [ "$w" != aether ] || [[ "$path" != */deps/* ]]; }; then
            strip -o "/tmp/$name" "$path"
            xz -T2 -6 -c "/tmp/$name" > ".devcarry/$name.xz"
        fi
    done
done < /tmp/aether-executables.txt
ls -la .devcarry
