"""Spark SQL typing and statements through `spark.sql`: integer literal types, division,
VALUES column types, temporary views made by SQL, and `SET key`."""

import pytest

from helpers import tuples


def test_integer_literal_and_arithmetic_types(spark):
    df = spark.sql("SELECT 1 + 2 AS s, 7 / 2 AS q, 2147483648 AS big, -2147483648 AS low, count(*) AS n")
    assert df.dtypes == [("s", "int"), ("q", "double"), ("big", "bigint"), ("low", "int"), ("n", "bigint")]
    assert tuples(df) == [(3, 3.5, 2147483648, -2147483648, 1)]


def test_integer_column_division_is_double(spark):
    spark.createDataFrame([(7, 2), (1, 4), (None, 3)], "a INT, b BIGINT").createOrReplaceTempView("sql_division")
    df = spark.sql("SELECT a / b AS q, a + b AS s FROM sql_division ORDER BY a NULLS LAST")
    assert df.dtypes == [("q", "double"), ("s", "bigint")]
    assert tuples(df) == [(0.25, 5), (3.5, 9), (None, None)]


def test_values_columns_are_int(spark):
    df = spark.sql("SELECT x, x + 1 AS y FROM VALUES (1), (NULL), (3) AS t(x) ORDER BY x NULLS FIRST")
    assert df.dtypes == [("x", "int"), ("y", "int")]
    assert tuples(df) == [(None, None), (1, 2), (3, 4)]


def test_limit_and_group_by_with_int_literals(spark):
    df = spark.sql(
        "SELECT id % 3 AS k, sum(id * 2) AS s FROM range(10) GROUP BY id % 3 ORDER BY k LIMIT 2"
    )
    assert df.dtypes == [("k", "bigint"), ("s", "bigint")]
    assert tuples(df) == [(0, 36), (1, 24)]


def test_temp_view_from_sql_is_listed_as_temporary(spark):
    spark.sql("CREATE TEMP VIEW sql_temp_listed AS SELECT 1 AS one").collect()
    try:
        tables = {t.name: t for t in spark.catalog.listTables()}
        assert tables["sql_temp_listed"].isTemporary
        assert tuples(spark.table("sql_temp_listed")) == [(1,)]
    finally:
        spark.sql("DROP VIEW sql_temp_listed").collect()
    assert "sql_temp_listed" not in {t.name for t in spark.catalog.listTables()}


def test_set_unknown_key_shows_undefined(spark):
    rows = spark.sql("SET aether.test.never_set_anywhere").collect()
    assert [tuple(r) for r in rows] == [("aether.test.never_set_anywhere", "<undefined>")]


def test_integer_division_by_zero_fails_under_ansi(spark):
    from pyspark.errors import ArithmeticException

    spark.createDataFrame([(1, 0)], "a INT, b INT").createOrReplaceTempView("sql_zero")
    with pytest.raises(ArithmeticException):
        spark.sql("SELECT a / b FROM sql_zero").collect()


def test_sql_column_names(spark):
    spark.createDataFrame([(1, 2, True, "s")], "a INT, b INT, x BOOLEAN, s STRING").createOrReplaceTempView("sql_names")
    df = spark.sql(
        "SELECT a * (b - 1), -a, NOT x, a IS NULL, CAST(a AS BIGINT), a != 1, a || s, "
        "count(a), SUM(b), upper(s), a + 1 AS named FROM sql_names GROUP BY a, b, x, s"
    )
    assert df.columns == [
        "(a * (b - 1))",
        "(- a)",
        "(NOT x)",
        "(a IS NULL)",
        "a",
        "(NOT (a = 1))",
        "concat(a, s)",
        "count(a)",
        "sum(b)",
        "upper(s)",
        "named",
    ]
    assert tuples(df) == [(1, -1, False, False, 1, False, "1s", 1, 2, "S", 2)]


def test_count_distinct_of_several_columns_skips_tuples_with_nulls(spark):
    df = spark.sql("SELECT count(DISTINCT a, b) FROM VALUES (1, 2), (1, 3), (1, 2), (NULL, 1), (2, NULL) AS t(a, b)")
    assert df.columns == ["count(DISTINCT a, b)"]
    assert tuples(df) == [(2,)]


def test_int_overflow_fails_under_ansi(spark):
    from pyspark.errors import ArithmeticException

    with pytest.raises(ArithmeticException):
        spark.sql("SELECT 100000 * 100000").collect()
    assert tuples(spark.sql("SELECT CAST(100000 AS BIGINT) * 100000 AS big")) == [(10000000000,)]


def test_literal_typing_leaves_inserts_grouping_sets_and_unions_working(spark):
    spark.createDataFrame([(1, 5), (2, 6), (3, 7)], "a INT, b INT").createOrReplaceTempView("sql_shapes")
    rollup = spark.sql("SELECT a % 2 AS m, count(*) AS n FROM sql_shapes GROUP BY ROLLUP(a % 2) ORDER BY m NULLS FIRST")
    assert tuples(rollup) == [(None, 3), (0, 1), (1, 2)]
    union = spark.sql("SELECT 1 AS x UNION ALL SELECT 2")
    assert union.dtypes == [("x", "int")]
    assert sorted(tuples(union)) == [(1,), (2,)]
    names = spark.sql("SELECT CAST(1 AS STRING), sum(CAST(a AS BIGINT)) FROM sql_shapes")
    assert names.columns == ["CAST(1 AS STRING)", "sum(CAST(a AS BIGINT))"]
