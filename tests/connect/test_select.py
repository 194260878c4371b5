"""select and selectExpr: by name, with Column expressions and aliases, star, CASE WHEN,
aggregates in a select list, and the column names Spark gives to expressions."""

from pyspark.sql import functions as F

from helpers import tuples


def test_select_by_name(people):
    df = people.orderBy("id").select("name", "age")
    assert df.columns == ["name", "age"]
    assert tuples(df) == [("Alice", 34), ("Bob", 45), ("Carol", None), ("Dave", 29)]


def test_select_columns_and_expressions(people):
    df = people.select(people.id, F.col("name"), (F.col("age") + 1).alias("next_age"), F.upper("name"))
    assert df.columns == ["id", "name", "next_age", "upper(name)"]
    assert tuples(df.where("id = 1")) == [(1, "Alice", 35, "ALICE")]


def test_select_star(people):
    assert people.select("*").columns == ["id", "name", "age", "city", "salary"]


def test_unaliased_expression_names(people):
    df = people.select(F.col("age") * 2, F.lit(1), F.col("salary").isNull())
    assert df.columns == ["(age * 2)", "1", "(salary IS NULL)"]


def test_select_expr(people):
    df = people.selectExpr("id * 2 AS twice", "upper(name)", "coalesce(city, 'none') AS city")
    assert df.columns == ["twice", "upper(name)", "city"]
    assert tuples(df.orderBy("twice")) == [(2, "ALICE", "NY"), (4, "BOB", "SF"), (6, "CAROL", "NY"), (8, "DAVE", "none")]


def test_literal_types(spark):
    df = spark.range(1).select(F.lit(1).alias("i"), F.lit(2**40).alias("l"), F.lit("s").alias("s"), F.lit(1.5).alias("d"), F.lit(True).alias("b"))
    assert df.dtypes == [("i", "int"), ("l", "bigint"), ("s", "string"), ("d", "double"), ("b", "boolean")]
    assert tuples(df) == [(1, 2**40, "s", 1.5, True)]


def test_when_otherwise(people):
    df = people.select("id", F.when(F.col("age") >= 40, "senior").when(F.col("age").isNotNull(), "junior").otherwise("unknown").alias("band"))
    assert tuples(df.orderBy("id")) == [(1, "junior"), (2, "senior"), (3, "unknown"), (4, "junior")]


def test_aggregates_in_select_make_a_global_aggregate(people):
    df = people.selectExpr("count(*) AS n", "max(age) AS oldest")
    assert tuples(df) == [(4, 45)]
    assert tuples(people.select(F.min("salary"))) == [(4200.25,)]
