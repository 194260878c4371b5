"""join: every join type, `on` as a column name list (USING semantics: one key column,
first), and explicit `df1["id"] == df2["id"]` conditions that keep both key columns."""

import pytest
from pyspark.sql import functions as F

from helpers import sorted_tuples


@pytest.fixture(scope="module")
def emp(spark):
    return spark.createDataFrame(
        [(1, "Ann", 10), (2, "Ben", 20), (3, "Cid", 30), (4, "Dot", None)],
        "id INT, name STRING, dept_id INT",
    )


@pytest.fixture(scope="module")
def dept(spark):
    return spark.createDataFrame([(10, "Sales"), (20, "R&D"), (40, "Legal")], "dept_id INT, dept_name STRING")


def test_inner_join_using_column(emp, dept):
    df = emp.join(dept, "dept_id")
    assert df.columns == ["dept_id", "id", "name", "dept_name"]
    assert sorted_tuples(df) == [(10, 1, "Ann", "Sales"), (20, 2, "Ben", "R&D")]


def test_join_on_column_list(emp, dept):
    df = emp.join(dept, ["dept_id"], "inner")
    assert df.columns == ["dept_id", "id", "name", "dept_name"]
    assert df.count() == 2


def test_left_join(emp, dept):
    df = emp.join(dept, "dept_id", "left").select("name", "dept_name")
    assert sorted_tuples(df) == [("Ann", "Sales"), ("Ben", "R&D"), ("Cid", None), ("Dot", None)]


def test_right_join(emp, dept):
    df = emp.join(dept, "dept_id", "right").select("dept_id", "name", "dept_name")
    assert sorted_tuples(df) == [(10, "Ann", "Sales"), (20, "Ben", "R&D"), (40, None, "Legal")]


def test_full_outer_join_merges_using_keys(emp, dept):
    df = emp.join(dept, "dept_id", "full").select("dept_id", "name", "dept_name")
    assert sorted_tuples(df) == [
        (None, "Dot", None),
        (10, "Ann", "Sales"),
        (20, "Ben", "R&D"),
        (30, "Cid", None),
        (40, None, "Legal"),
    ]


def test_outer_is_full(emp, dept):
    assert emp.join(dept, "dept_id", "outer").count() == 5


def test_left_semi(emp, dept):
    df = emp.join(dept, "dept_id", "left_semi")
    assert df.columns == ["dept_id", "id", "name"]
    assert sorted_tuples(df) == [(10, 1, "Ann"), (20, 2, "Ben")]


def test_left_anti(emp, dept):
    df = emp.join(dept, "dept_id", "left_anti")
    assert df.columns == ["dept_id", "id", "name"]
    assert sorted_tuples(df) == [(None, 4, "Dot"), (30, 3, "Cid")]


def test_left_semi_with_condition_keeps_left_columns(emp, dept):
    df = emp.join(dept, emp["dept_id"] == dept["dept_id"], "leftsemi")
    assert df.columns == ["id", "name", "dept_id"]
    assert sorted_tuples(df) == [(1, "Ann", 10), (2, "Ben", 20)]


def test_cross_join(emp, dept):
    df = emp.crossJoin(dept)
    assert df.columns == ["id", "name", "dept_id", "dept_id", "dept_name"]
    assert df.count() == 12


def test_how_cross(emp, dept):
    assert emp.join(dept, how="cross").count() == 12


def test_condition_keeps_both_key_columns(emp, dept):
    df = emp.join(dept, emp["dept_id"] == dept["dept_id"])
    assert df.columns == ["id", "name", "dept_id", "dept_id", "dept_name"]
    assert sorted_tuples(df.select(emp["name"], dept["dept_id"])) == [("Ann", 10), ("Ben", 20)]


def test_condition_with_left_join_and_extra_predicate(emp, dept):
    condition = (emp["dept_id"] == dept["dept_id"]) & (dept["dept_name"] != "R&D")
    df = emp.join(dept, condition, "left").select(emp["id"], dept["dept_name"])
    assert sorted_tuples(df) == [(1, "Sales"), (2, None), (3, None), (4, None)]


def test_join_on_several_columns(spark):
    left = spark.createDataFrame([(1, "a", 1.0), (1, "b", 2.0), (2, "a", 3.0)], "k1 INT, k2 STRING, x DOUBLE")
    right = spark.createDataFrame([(1, "b", "yes"), (2, "a", "also")], "k1 INT, k2 STRING, y STRING")
    df = left.join(right, ["k1", "k2"])
    assert df.columns == ["k1", "k2", "x", "y"]
    assert sorted_tuples(df) == [(1, "b", 2.0, "yes"), (2, "a", 3.0, "also")]


def test_join_then_aggregate(emp, dept):
    df = emp.join(dept, "dept_id", "left").groupBy(F.coalesce("dept_name", F.lit("-")).alias("d")).count()
    assert sorted_tuples(df) == [("-", 2), ("R&D", 1), ("Sales", 1)]
