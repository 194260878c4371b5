#!/usr/bin/env python3
"""TPC-H in DuckDB over the same data and query text as `aether bench`, for comparison.

Reads what `aether datagen tpch --sf SF --out DIR --queries` wrote: the tables as Parquet
(`DIR/<table>/*.parquet`) and the 22 queries with the validation parameters and the
specification's row limits (`DIR/queries/q<N>.sql`). With `--memory` the tables are
loaded into DuckDB's own in-memory tables first (the in-memory case); without it every
query reads the Parquet files (the from-Parquet case). Like `aether bench`: one warm-up
run, then `--iterations` timed runs of each query; the JSON report has the same
per-query fields (`query`, `rows`, `times_ms`, `min_ms`, `median_ms`, `max_ms`).

    python3 scripts/duckdb_tpch.py DIR [--memory] [--iterations 3] [--json FILE]
"""

import argparse
import json
import os
import statistics
import sys
import time

TABLES = ["region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"]


def statements(sql):
    """The statements of a query file (Q15 is create view, query, drop view)."""
    return [s.strip() for s in sql.split(";") if s.strip()]


def run_query(con, parts):
    """Runs a query's statements; returns the row count of its query (DuckDB also gives
    DDL such as Q15's DROP VIEW a result, so the statement's kind decides)."""
    rows = 0
    for statement in parts:
        result = con.execute(statement)
        if statement.lower().startswith(("select", "with")):
            rows = len(result.fetchall())
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="directory written by `aether datagen tpch --queries`")
    parser.add_argument("--memory", action="store_true", help="load the tables into memory first")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--json", help="also write the results as JSON to this file")
    args = parser.parse_args()

    import duckdb  # imported here so --help works without it

    con = duckdb.connect()
    con.execute(f"SET threads = {args.threads}")
    start = time.perf_counter()
    for table in TABLES:
        source = f"read_parquet('{os.path.join(args.data, table)}/*.parquet')"
        kind = "TABLE" if args.memory else "VIEW"
        con.execute(f"CREATE {kind} {table} AS SELECT * FROM {source}")
    load_seconds = time.perf_counter() - start

    reports = []
    for n in range(1, 23):
        with open(os.path.join(args.data, "queries", f"q{n}.sql")) as f:
            parts = statements(f.read())
        run_query(con, parts)  # warm-up
        times = []
        for _ in range(args.iterations):
            t0 = time.perf_counter()
            rows = run_query(con, parts)
            times.append((time.perf_counter() - t0) * 1000.0)
        report = {
            "query": n,
            "rows": rows,
            "times_ms": times,
            "min_ms": min(times),
            "median_ms": statistics.median(times),
            "max_ms": max(times),
        }
        reports.append(report)
        print(f"Q{n:<2} {report['median_ms']:10.1f} ms  {rows} rows", flush=True)
    total = sum(r["median_ms"] for r in reports)
    print(f"total of medians: {total:.1f} ms (load {load_seconds:.1f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "benchmark": "tpch",
                    "engine": f"duckdb {duckdb.__version__}",
                    "data": "memory" if args.memory else "parquet",
                    "threads": args.threads,
                    "iterations": args.iterations,
                    "load_seconds": load_seconds,
                    "queries": reports,
                },
                f,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
