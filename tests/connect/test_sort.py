"""orderBy / sort: ascending and descending, Spark's default NULL placement (first when
ascending, last when descending), explicit nulls first/last and several keys."""

from pyspark.sql import functions as F


def ages(df):
    return [row.age for row in df.collect()]


def test_ascending_puts_nulls_first(people):
    assert ages(people.orderBy("age")) == [None, 29, 34, 45]


def test_descending_puts_nulls_last(people):
    assert ages(people.orderBy(F.desc("age"))) == [45, 34, 29, None]
    assert ages(people.sort("age", ascending=False)) == [45, 34, 29, None]


def test_explicit_null_placement(people):
    assert ages(people.orderBy(F.col("age").asc_nulls_last())) == [29, 34, 45, None]
    assert ages(people.orderBy(F.col("age").desc_nulls_first())) == [None, 45, 34, 29]
    assert ages(people.orderBy(F.asc_nulls_last("age"))) == [29, 34, 45, None]


def test_several_keys(people):
    df = people.orderBy(F.col("city").desc(), F.col("id").asc())
    assert [row.id for row in df.collect()] == [2, 1, 3, 4]


def test_ascending_list(people):
    df = people.sort(["city", "name"], ascending=[True, False])
    assert [row.name for row in df.collect()] == ["Dave", "Carol", "Alice", "Bob"]


def test_sort_by_expression(people):
    df = people.orderBy(F.length("name").desc(), "name")
    assert [row.name for row in df.collect()] == ["Alice", "Carol", "Dave", "Bob"]


def test_sql_order_by(spark):
    rows = spark.sql("SELECT * FROM VALUES (2), (NULL), (1) AS t(x) ORDER BY x DESC NULLS FIRST").collect()
    assert [row.x for row in rows] == [None, 2, 1]


def test_sort_by_a_column_the_select_dropped(people):
    df = people.select("name").orderBy(F.desc("id"))
    assert [row.name for row in df.collect()] == ["Dave", "Carol", "Bob", "Alice"]
