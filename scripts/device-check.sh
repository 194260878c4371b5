#!/usr/bin/env bash
# Runs the GPU checks and benchmarks on a GPU host that has no Rust toolchain.
#
# Build here first (`scripts/device-pack.sh`), which leaves stripped, xz-compressed
# binaries in .devcarry/; on the GPU host, from the repository root:
#   bash scripts/device-check.sh OUT_DIR [tests] [sf1] [sf10] [duckdb10] [parquet10]
# (tests, sf1 and sf10 when none is named). `duckdb10` writes SF10 as Parquet with the
# queries (`aether datagen --queries`) and times DuckDB over it, in memory and from
# Parquet (scripts/duckdb_tpch.py); it needs the duckdb cp312 wheel in .whl/ (see
# docs/benchmarks.md). `parquet10` times Aether over the same files (after duckdb10).
# At SF10 each engine's run, and the GPU-resident run, also writes every query's
# EXPLAIN ANALYZE to OUT_DIR/explain-sf10-ENGINE/qN.txt (ENGINE gpu-resident for the
# latter). AETHER_BENCH_ENGINES (default "cpu gpu auto") picks the engines the sf
# parts time, besides the GPU-resident run. Every log and JSON report goes to
# OUT_DIR; summary.txt lists each step's exit status and time. Nothing is built on the
# GPU host.
set -uo pipefail
out=${1:?usage: device-check.sh OUT_DIR [tests] [sf1] [sf10] [duckdb10] [parquet10]}
shift
parts=${*:-tests sf1 sf10}
repo=$(pwd)
wants() { [[ " $parts " == *" $1 "* ]]; }
mkdir -p "$out" /tmp/bin
for f in .devcarry/*.xz; do
    name=$(basename "$f" .xz)
    xz -dc "$f" > "/tmp/bin/$name" && chmod +x "/tmp/bin/$name"
done
cd /tmp/bin || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/gpu.txt" 2>&1
run() { # name, command...
    local name=$1; shift
    local start=$(date +%s)
    "$@" > "$out/$name.log" 2>&1
    local rc=$?
    echo "$name: rc=$rc $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
    tail -3 "$out/$name.log" | sed 's/^/    /' >> "$out/summary.txt"
}
if wants tests; then
    for t in gpu_runtime gpu_transfer gpu_expressions gpu_queries; do
        [ -x "$t" ] && run "$t" "./$t" --include-ignored --test-threads 1
    done
    # The 22 TPC-H queries at SF10 against the CPU engine.
    [ -x gpu_queries ] && AETHER_GPU_TPCH_SF=10 run gpu_queries_tpch_sf10 \
        ./gpu_queries --include-ignored --test-threads 1 tpch_on_the_gpu
fi
for sf in 1 10; do
    wants "sf$sf" || continue
    for engine in ${AETHER_BENCH_ENGINES:-cpu gpu auto}; do
        explain=()
        [ "$sf" = 10 ] && explain=(--explain-analyze "$out/explain-sf$sf-$engine")
        run "bench-sf$sf-$engine" ./aether bench tpch --sf "$sf" --engine "$engine" \
            --iterations 3 --json "$out/bench-sf$sf-$engine.json" "${explain[@]}"
    done
    explain=()
    [ "$sf" = 10 ] && explain=(--explain-analyze "$out/explain-sf$sf-gpu-resident")
    run "bench-sf$sf-gpu-resident" ./aether bench tpch --sf "$sf" --engine gpu --resident \
        --iterations 3 --json "$out/bench-sf$sf-gpu-resident.json" "${explain[@]}"
done
if wants duckdb10; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site \
        "$repo"/.whl/duckdb-*.whl > "$out/pip.log" 2>&1
    run datagen-sf10 ./aether datagen tpch --sf 10 --out /tmp/tpch-sf10 --queries
    for mode in memory parquet; do
        flag=$([ "$mode" = memory ] && echo --memory)
        PYTHONPATH=/tmp/site run "duckdb-sf10-$mode" python3 "$repo/scripts/duckdb_tpch.py" \
            /tmp/tpch-sf10 $flag --iterations 3 --json "$out/duckdb-sf10-$mode.json"
    done
fi
if wants parquet10; then
    for engine in ${AETHER_BENCH_ENGINES:-cpu gpu auto}; do
        run "bench-parquet10-$engine" ./aether bench tpch --data /tmp/tpch-sf10 \
            --engine "$engine" --iterations 3 --json "$out/bench-parquet10-$engine.json"
    done
fi
# A device call returns only a few files: pack every log and report into one.
cat "$out/summary.txt"
(cd "$out" && tar czf /tmp/device-check.tgz . && find . -mindepth 1 -delete \
    && mv /tmp/device-check.tgz ./device-check.tgz)
