"""groupBy().agg() with several aggregate functions, the column names Spark gives them,
dict-style agg, count(), and global aggregates over NULLs."""

from pyspark.sql import functions as F

from helpers import sorted_tuples, tuples


def test_several_aggregates(people):
    df = people.groupBy("city").agg(
        F.count("*").alias("n"),
        F.count("age").alias("n_age"),
        F.sum("age").alias("sum_age"),
        F.avg("salary").alias("avg_salary"),
        F.min("name").alias("first_name"),
        F.max("age").alias("oldest"),
    )
    assert df.columns == ["city", "n", "n_age", "sum_age", "avg_salary", "first_name", "oldest"]
    assert sorted_tuples(df) == [
        (None, 1, 1, 29, 4200.25, "Dave", 29),
        ("NY", 2, 1, 34, 6000.25, "Alice", 34),
        ("SF", 1, 1, 45, None, "Bob", 45),
    ]


def test_default_aggregate_names(people):
    df = people.groupBy("city").agg(F.sum("age"), F.avg("age"), F.count("id"), F.countDistinct("city"), F.max("salary"))
    assert df.columns == ["city", "sum(age)", "avg(age)", "count(id)", "count(DISTINCT city)", "max(salary)"]


def test_aggregate_types(people):
    df = people.groupBy("city").agg(F.sum("age"), F.avg("age"), F.count("id"))
    assert df.dtypes == [("city", "string"), ("sum(age)", "bigint"), ("avg(age)", "double"), ("count(id)", "bigint")]


def test_agg_with_dict(people):
    df = people.groupBy("city").agg({"age": "max"})
    assert df.columns == ["city", "max(age)"]
    assert sorted_tuples(df) == [(None, 29), ("NY", 34), ("SF", 45)]


def test_group_by_count(people):
    df = people.groupBy("city").count()
    assert df.columns == ["city", "count"]
    assert sorted_tuples(df) == [(None, 1), ("NY", 2), ("SF", 1)]


def test_group_by_several_keys_and_expression(people):
    df = people.groupBy(F.col("city"), (F.col("id") % 2).alias("odd")).agg(F.count("*").alias("n"))
    assert sorted_tuples(df) == [(None, 0, 1), ("NY", 1, 2), ("SF", 0, 1)]


def test_global_aggregate(people):
    df = people.agg(F.count("*"), F.sum("salary"), F.min("age"), F.max("city"))
    assert df.columns == ["count(1)", "sum(salary)", "min(age)", "max(city)"]
    assert tuples(df) == [(4, 16200.75, 29, "SF")]


def test_decimal_sum_and_average(spark):
    df = spark.sql("SELECT CAST(v AS DECIMAL(10,2)) AS v FROM VALUES (1.10), (2.20), (3.35) AS t(v)")
    out = df.agg(F.sum("v").alias("s"), F.avg("v").alias("a"))
    assert out.dtypes == [("s", "decimal(20,2)"), ("a", "decimal(14,6)")]
    assert [str(x) for x in out.first()] == ["6.65", "2.216667"]
