"""TPC-H through PySpark: each query's median time over Spark Connect, as JSON.

Compare with `aether bench tpch --sf 1` on the same machine to see what the protocol adds:

    aether serve --tpch 1 --port 15002 &
    python tests/connect/bench_tpch.py --queries-dir DIR/queries --iterations 3 > pyspark.json

where DIR/queries holds q1.sql..q22.sql (`aether datagen tpch --sf 1 --out DIR --queries`).
Times include planning, execution, Arrow transfer and the client's conversion to rows;
a script of several statements (Q15: create view, query, drop view) is timed whole, as
`aether bench` times it.
"""

import argparse
import json
import statistics
import time
from pathlib import Path

from pyspark.sql import SparkSession


def run_script(spark, script: str) -> list:
    """Runs each statement of `script`; returns the rows of its query."""
    rows = []
    for statement in (s.strip() for s in script.split(";")):
        if not statement:
            continue
        df = spark.sql(statement)
        if statement.lower().startswith("select"):
            rows = df.collect()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="sc://localhost:15002")
    parser.add_argument("--queries-dir", required=True, type=Path)
    parser.add_argument("--iterations", type=int, default=3)
    args = parser.parse_args()
    spark = SparkSession.builder.remote(args.url).getOrCreate()
    results = []
    for n in range(1, 23):
        sql = (args.queries_dir / f"q{n}.sql").read_text()
        run_script(spark, sql)  # warm-up
        times = []
        for _ in range(args.iterations):
            start = time.perf_counter()
            rows = run_script(spark, sql)
            times.append((time.perf_counter() - start) * 1000)
        results.append({"query": n, "rows": len(rows), "median_ms": statistics.median(times), "min_ms": min(times)})
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
