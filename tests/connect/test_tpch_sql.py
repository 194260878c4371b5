"""The 22 TPC-H queries (SF1, validation parameters) run through spark.sql give the same
answers as `aether sql` run on the same data: decimals, strings and dates exactly,
floating point to 1e-9 relative, rows in the same order where the query sorts them."""

import csv
import datetime
import io
import math
import re
import subprocess
from decimal import Decimal

import pytest

from helpers import TPCH_TABLES

pytestmark = pytest.mark.tpch


def statements(script: str) -> list:
    return [s.strip() for s in script.split(";") if s.strip()]


def aether_answer(aether_bin, data_dir, query_file) -> list:
    tables = [arg for t in TPCH_TABLES for arg in ("--table", f"{t}={data_dir / t}")]
    result = subprocess.run(
        [aether_bin, "sql", *tables, "--format", "csv", "--file", str(query_file)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return list(csv.reader(io.StringIO(result.stdout)))


def render(value) -> str:
    """A value as `aether sql --format csv` writes it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime.date):
        return value.isoformat()
    return str(value)


def same_value(value, text: str) -> bool:
    if isinstance(value, float):
        return text != "" and math.isclose(value, float(text), rel_tol=1e-9, abs_tol=1e-12)
    return render(value) == text


def run_spark(spark, script: str, against_spark: bool):
    """Runs every statement of a query script; returns the rows of the last query."""
    result = None
    for statement in statements(script):
        if against_spark:
            # Spark refuses permanent views over temporary views (the tables are temporary there).
            statement = re.sub(r"(?i)^create view", "create temporary view", statement)
        df = spark.sql(statement)
        if statement.lower().lstrip().startswith("select"):
            result = (df.columns, df.collect())
    return result


@pytest.mark.parametrize("n", range(1, 23))
def test_query_matches_aether_sql(tpch, tpch_files, aether_bin, against_spark, n):
    query_file = tpch_files / "queries" / f"q{n}.sql"
    script = query_file.read_text()
    columns, rows = run_spark(tpch, script, against_spark)
    header, *expected = aether_answer(aether_bin, tpch_files, query_file)

    # Names are not compared: the server names unaliased aggregates as Spark does
    # (`sum(l_quantity)`), the command line as DataFusion does (`sum(lineitem.l_quantity)`).
    assert len(columns) == len(header)
    assert len(rows) == len(expected), f"Q{n}: {len(rows)} rows, aether sql gave {len(expected)}"
    actual = [list(row) for row in rows]
    if "order by" not in script.lower():
        actual.sort(key=lambda r: [render(v) for v in r])
        expected.sort()
    for index, (got, want) in enumerate(zip(actual, expected)):
        assert all(same_value(v, t) for v, t in zip(got, want)), f"Q{n} row {index}: {got} != {want}"
