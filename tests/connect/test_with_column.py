"""withColumn(s), withColumnRenamed / withColumnsRenamed and drop."""

from pyspark.sql import functions as F

from helpers import tuples


def test_with_column_adds_at_the_end(people):
    df = people.withColumn("age2", F.col("age") * 2)
    assert df.columns == ["id", "name", "age", "city", "salary", "age2"]
    assert tuples(df.orderBy("id").select("age2")) == [(68,), (90,), (None,), (58,)]


def test_with_column_replaces_in_place(people):
    df = people.withColumn("age", F.coalesce("age", F.lit(0)))
    assert df.columns == ["id", "name", "age", "city", "salary"]
    assert tuples(df.orderBy("id").select("age")) == [(34,), (45,), (0,), (29,)]


def test_with_columns(people):
    df = people.withColumns({"one": F.lit(1), "name": F.lower("name")})
    assert df.columns == ["id", "name", "age", "city", "salary", "one"]
    assert tuples(df.select("name", "one").where("id = 2")) == [("bob", 1)]


def test_with_column_renamed(people):
    df = people.withColumnRenamed("name", "full_name").withColumnRenamed("missing", "ignored")
    assert df.columns == ["id", "full_name", "age", "city", "salary"]


def test_with_columns_renamed(people):
    df = people.withColumnsRenamed({"id": "key", "city": "town"})
    assert df.columns == ["key", "name", "age", "town", "salary"]
    assert tuples(df.select("key", "town").orderBy("key").limit(1)) == [(1, "NY")]


def test_drop_one_and_several(people):
    assert people.drop("salary").columns == ["id", "name", "age", "city"]
    assert people.drop("age", "city").columns == ["id", "name", "salary"]
    assert people.drop(people.name).columns == ["id", "age", "city", "salary"]


def test_drop_unknown_column_is_a_no_op(people):
    assert people.drop("no_such_column").columns == ["id", "name", "age", "city", "salary"]
