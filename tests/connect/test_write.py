"""df.write to Parquet, CSV and JSON with save modes error, overwrite, append
and ignore, read back through spark.read."""

import pytest
from pyspark.errors import AnalysisException

from helpers import sorted_tuples


@pytest.fixture(scope="module")
def small(spark):
    return spark.createDataFrame([(1, "a", 0.5), (2, "b", None)], "id INT, tag STRING, x DOUBLE")


@pytest.fixture(scope="module")
def other(spark):
    return spark.createDataFrame([(3, "c", 1.5)], "id INT, tag STRING, x DOUBLE")


def test_parquet_round_trip(spark, small, out_path):
    small.write.parquet(out_path)
    back = spark.read.parquet(out_path)
    assert back.dtypes == [("id", "int"), ("tag", "string"), ("x", "double")]
    assert sorted_tuples(back) == [(1, "a", 0.5), (2, "b", None)]


def test_default_mode_fails_if_path_exists(small, out_path):
    small.write.parquet(out_path)
    with pytest.raises(AnalysisException):
        small.write.parquet(out_path)
    with pytest.raises(AnalysisException):
        small.write.mode("error").parquet(out_path)


def test_overwrite(spark, small, other, out_path):
    small.write.parquet(out_path)
    other.write.mode("overwrite").parquet(out_path)
    assert sorted_tuples(spark.read.parquet(out_path)) == [(3, "c", 1.5)]


def test_append(spark, small, other, out_path):
    small.write.parquet(out_path)
    other.write.mode("append").parquet(out_path)
    assert sorted_tuples(spark.read.parquet(out_path)) == [(1, "a", 0.5), (2, "b", None), (3, "c", 1.5)]


def test_ignore_keeps_existing_data(spark, small, other, out_path):
    small.write.parquet(out_path)
    other.write.mode("ignore").parquet(out_path)
    assert sorted_tuples(spark.read.parquet(out_path)) == [(1, "a", 0.5), (2, "b", None)]


def test_ignore_writes_when_missing(spark, other, out_path):
    other.write.mode("ignore").parquet(out_path)
    assert sorted_tuples(spark.read.parquet(out_path)) == [(3, "c", 1.5)]


def test_csv_with_header(spark, small, other, out_path):
    small.write.option("header", True).csv(out_path)
    other.write.mode("append").option("header", True).csv(out_path)
    back = spark.read.csv(out_path, header=True, schema="id INT, tag STRING, x DOUBLE")
    assert sorted_tuples(back) == [(1, "a", 0.5), (2, "b", None), (3, "c", 1.5)]


def test_json(spark, small, out_path):
    small.write.json(out_path)
    back = spark.read.json(out_path)
    assert back.dtypes == [("id", "bigint"), ("tag", "string"), ("x", "double")]
    assert sorted_tuples(back) == [(1, "a", 0.5), (2, "b", None)]


def test_format_save(spark, small, out_path):
    small.write.format("parquet").mode("overwrite").save(out_path)
    assert spark.read.format("parquet").load(out_path).count() == 2


def test_write_query_result(spark, out_path):
    spark.range(100).selectExpr("id", "id % 3 AS k").groupBy("k").count().write.parquet(out_path)
    assert sorted_tuples(spark.read.parquet(out_path)) == [(0, 34), (1, 33), (2, 33)]
