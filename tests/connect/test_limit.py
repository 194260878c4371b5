"""limit, offset and tail."""

from pyspark.sql import Row


def test_limit(spark):
    assert [r.id for r in spark.range(100).orderBy("id").limit(3).collect()] == [0, 1, 2]


def test_limit_larger_than_input(spark):
    assert spark.range(5).limit(10).count() == 5


def test_limit_zero(spark):
    assert spark.range(5).limit(0).collect() == []


def test_offset(spark):
    assert [r.id for r in spark.range(10).orderBy("id").offset(7).collect()] == [7, 8, 9]


def test_offset_then_limit(spark):
    assert [r.id for r in spark.range(10).orderBy("id").offset(2).limit(3).collect()] == [2, 3, 4]


def test_tail(spark):
    assert spark.range(10).orderBy("id").tail(2) == [Row(id=8), Row(id=9)]


def test_sql_limit_offset(spark):
    spark.range(10).createOrReplaceTempView("limit_ten")
    rows = spark.sql("SELECT id FROM limit_ten ORDER BY id DESC LIMIT 2 OFFSET 1").collect()
    assert [r.id for r in rows] == [8, 7]
