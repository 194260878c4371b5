"""spark.range and SQL's range() table function: start/end/step, numPartitions, and
the non-nullable bigint `id` column."""

from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType


def test_range_end(spark):
    assert [r.id for r in spark.range(5).collect()] == [0, 1, 2, 3, 4]


def test_range_start_end_step(spark):
    assert [r.id for r in spark.range(2, 10, 3).collect()] == [2, 5, 8]


def test_negative_step(spark):
    assert [r.id for r in spark.range(5, 0, -2).collect()] == [5, 3, 1]


def test_num_partitions_does_not_change_rows(spark):
    assert sorted(r.id for r in spark.range(0, 10, 1, 3).collect()) == list(range(10))


def test_schema(spark):
    assert spark.range(3).schema == StructType([StructField("id", LongType(), False)])


def test_large_range_aggregates(spark):
    row = spark.range(1_000_000).agg(F.count("*").alias("n"), F.sum("id").alias("s")).first()
    assert (row.n, row.s) == (1_000_000, 499_999_500_000)


def test_sql_range_table_function(spark):
    df = spark.sql("SELECT id FROM range(1, 10, 4)")
    assert df.dtypes == [("id", "bigint")]
    assert [r.id for r in df.collect()] == [1, 5, 9]
