"""groupBy().pivot(): with and without the values given, one and several aggregates, a
NULL pivot value, and counts for absent combinations (NULL, as Spark gives them)."""

from pyspark.sql import functions as F

from helpers import sorted_tuples, tuples


def sales(spark):
    return spark.createDataFrame(
        [("x", "a", 1), ("x", "b", 2), ("y", "a", 3), ("y", None, 4), ("z", "a", 5), ("x", "a", 6)],
        "k STRING, p STRING, v INT",
    )


def test_pivot_without_values(spark):
    df = sales(spark).groupBy("k").pivot("p").agg(F.count("v"))
    assert df.columns == ["k", "null", "a", "b"]
    assert sorted_tuples(df) == [("x", None, 2, 1), ("y", 1, 1, None), ("z", None, 1, None)]


def test_pivot_with_values_and_several_aggregates(spark):
    df = sales(spark).groupBy("k").pivot("p", ["b", "a"]).agg(F.sum("v"), F.max("v").alias("m"))
    assert df.dtypes == [
        ("k", "string"),
        ("b_sum(v)", "bigint"),
        ("b_m", "int"),
        ("a_sum(v)", "bigint"),
        ("a_m", "int"),
    ]
    assert sorted_tuples(df) == [("x", 2, 2, 7, 6), ("y", None, None, 3, 3), ("z", None, None, 5, 5)]


def test_pivot_shortcut_and_expression(spark):
    df = sales(spark).groupBy("k").pivot("p", ["a"]).sum("v")
    assert df.columns == ["k", "a"]
    assert sorted_tuples(df) == [("x", 7), ("y", 3), ("z", 5)]
    years = spark.createDataFrame([(1, 2020, 10), (1, 2021, 20)], "k INT, y INT, v INT")
    assert years.groupBy("k").pivot("y").agg(F.sum("v") + 1).columns == ["k", "2020", "2021"]


def test_pivot_without_grouping(spark):
    years = spark.createDataFrame([(1, 2020, 10), (1, 2021, 20)], "k INT, y INT, v INT")
    assert tuples(years.groupBy().pivot("y").sum("v")) == [(10, 20)]
