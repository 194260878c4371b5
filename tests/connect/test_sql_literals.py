"""Spark SQL literal syntax: typed numeric suffixes (Y, S, L, F, D, BD), exponent and
decimal literals, typed date/timestamp/interval literals, and the types they produce."""

import datetime
from decimal import Decimal

from helpers import tuples


def test_numeric_suffixes(spark):
    df = spark.sql("SELECT 1Y AS y, 2S AS s, 3L AS l, 1.5F AS f, 2.5D AS d, 1.25BD AS bd")
    assert df.dtypes == [("y", "tinyint"), ("s", "smallint"), ("l", "bigint"), ("f", "float"), ("d", "double"), ("bd", "decimal(3,2)")]
    assert tuples(df) == [(1, 2, 3, 1.5, 2.5, Decimal("1.25"))]


def test_unsuffixed_numbers(spark):
    df = spark.sql("SELECT 7 AS i, 3000000000 AS big, 1.50 AS dec, 1E2 AS e")
    assert df.dtypes == [("i", "int"), ("big", "bigint"), ("dec", "decimal(3,2)"), ("e", "double")]
    assert tuples(df) == [(7, 3000000000, Decimal("1.50"), 100.0)]


def test_typed_literals(spark):
    df = spark.sql("SELECT DATE '2024-02-29' AS d, DATE '2024-02-29' + INTERVAL '1' DAY AS next_day, X'CAFE' AS b")
    assert df.dtypes == [("d", "date"), ("next_day", "date"), ("b", "binary")]
    assert tuples(df) == [(datetime.date(2024, 2, 29), datetime.date(2024, 3, 1), bytearray(b"\xca\xfe"))]


def test_double_arithmetic_with_suffixes(spark):
    assert spark.sql("SELECT 0.1D + 0.2D AS x").first().x == 0.30000000000000004
