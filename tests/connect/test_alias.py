"""DataFrame.alias (a SubqueryAlias) for self-joins and qualified column names, and toDF
to rename every column."""

from pyspark.sql import functions as F

from helpers import sorted_tuples


def test_self_join_through_aliases(spark):
    staff = spark.createDataFrame([(1, "Boss", None), (2, "Ann", 1), (3, "Ben", 1), (4, "Cy", 2)], "id INT, name STRING, manager INT")
    df = staff.alias("e").join(staff.alias("m"), F.col("e.manager") == F.col("m.id")).select(
        F.col("e.name").alias("employee"), F.col("m.name").alias("manager")
    )
    assert sorted_tuples(df) == [("Ann", "Boss"), ("Ben", "Boss"), ("Cy", "Ann")]


def test_qualified_star(people):
    df = people.alias("p").select("p.*")
    assert df.columns == people.columns


def test_qualified_name_in_filter(people):
    df = people.alias("p").where(F.col("p.age") > 40).select("p.name")
    assert [r.name for r in df.collect()] == ["Bob"]


def test_to_df_renames_all_columns(people):
    df = people.select("id", "name").toDF("key", "label")
    assert df.columns == ["key", "label"]
    assert sorted_tuples(df.where("key < 3")) == [(1, "Alice"), (2, "Bob")]


def test_sql_subquery_alias(spark, people):
    people.createOrReplaceTempView("people_alias")
    rows = spark.sql("SELECT q.n FROM (SELECT count(*) AS n FROM people_alias) AS q").collect()
    assert rows[0].n == 4
