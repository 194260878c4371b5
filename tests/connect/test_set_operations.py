"""union, unionAll, unionByName (with missing columns), intersect(All), exceptAll and
subtract, with Spark's duplicate semantics."""

import pytest

from helpers import sorted_tuples


@pytest.fixture(scope="module")
def left(spark):
    return spark.createDataFrame([(1, "a"), (1, "a"), (2, "b"), (3, "c")], "n INT, s STRING")


@pytest.fixture(scope="module")
def right(spark):
    return spark.createDataFrame([(1, "a"), (3, "c"), (4, "d")], "n INT, s STRING")


def test_union_keeps_duplicates(left, right):
    assert sorted_tuples(left.union(right)) == [(1, "a"), (1, "a"), (1, "a"), (2, "b"), (3, "c"), (3, "c"), (4, "d")]
    assert left.unionAll(right).count() == 7


def test_union_is_by_position(spark):
    xy = spark.createDataFrame([(1, 2)], "x INT, y INT")
    yx = spark.createDataFrame([(3, 4)], "y INT, x INT")
    df = xy.union(yx)
    assert df.columns == ["x", "y"]
    assert sorted_tuples(df) == [(1, 2), (3, 4)]


def test_union_by_name(spark):
    xy = spark.createDataFrame([(1, 2)], "x INT, y INT")
    yx = spark.createDataFrame([(3, 4)], "y INT, x INT")
    df = xy.unionByName(yx)
    assert df.columns == ["x", "y"]
    assert sorted_tuples(df) == [(1, 2), (4, 3)]


def test_union_by_name_allow_missing_columns(spark, left):
    other = spark.createDataFrame([(5, True)], "n INT, flag BOOLEAN")
    df = left.unionByName(other, allowMissingColumns=True)
    assert df.columns == ["n", "s", "flag"]
    assert sorted_tuples(df.where("n = 5 OR n = 2")) == [(2, "b", None), (5, None, True)]


def test_intersect_is_distinct(left, right):
    assert sorted_tuples(left.intersect(right)) == [(1, "a"), (3, "c")]


def test_intersect_all(spark, left):
    other = spark.createDataFrame([(1, "a"), (1, "a"), (1, "a"), (2, "b")], "n INT, s STRING")
    assert sorted_tuples(left.intersectAll(other)) == [(1, "a"), (1, "a"), (2, "b")]
    # The side with more copies does not decide: min(3, 2) copies either way.
    assert sorted_tuples(other.intersectAll(left)) == [(1, "a"), (1, "a"), (2, "b")]


def test_except_all(left, right):
    assert sorted_tuples(left.exceptAll(right)) == [(1, "a"), (2, "b")]


def test_except_all_counts_copies_and_nulls(spark):
    a = spark.createDataFrame([(1,), (1,), (1,), (None,), (None,), (2,)], "x INT")
    b = spark.createDataFrame([(1,), (None,), (3,)], "x INT")
    assert sorted_tuples(a.exceptAll(b)) == [(None,), (1,), (1,), (2,)]
    assert sorted_tuples(a.intersectAll(b)) == [(None,), (1,)]


def test_subtract_is_distinct(left, right):
    assert sorted_tuples(left.subtract(right)) == [(2, "b")]


def test_sql_set_operations(spark):
    rows = spark.sql("SELECT * FROM VALUES (1), (2), (2) AS a(x) EXCEPT SELECT * FROM VALUES (1) AS b(x)").collect()
    assert [r.x for r in rows] == [2]
