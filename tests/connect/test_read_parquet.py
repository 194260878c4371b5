"""spark.read.parquet: types, values and nullability of Parquet files written with
pyarrow, column pruning, filters over the file, and reading a directory of files."""

import datetime
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DateType,
    DecimalType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from helpers import sorted_tuples, tuples

TABLE = pa.table(
    {
        "id": pa.array([1, 2, 3], pa.int64()),
        "name": pa.array(["apple", "banana", None], pa.string()),
        "price": pa.array([Decimal("1.25"), Decimal("0.50"), Decimal("10.00")], pa.decimal128(10, 2)),
        "day": pa.array([datetime.date(2024, 1, 1), datetime.date(2024, 2, 29), None], pa.date32()),
        "score": pa.array([0.5, None, 2.25], pa.float64()),
    },
    schema=pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("name", pa.string()),
            pa.field("price", pa.decimal128(10, 2)),
            pa.field("day", pa.date32()),
            pa.field("score", pa.float64()),
        ]
    ),
)


@pytest.fixture
def fruit_file(tmp_path) -> str:
    path = tmp_path / "fruit.parquet"
    pq.write_table(TABLE, path)
    return str(path)


def test_schema_is_read_with_every_column_nullable(spark, fruit_file):
    assert spark.read.parquet(fruit_file).schema == StructType(
        [
            StructField("id", LongType(), True),
            StructField("name", StringType(), True),
            StructField("price", DecimalType(10, 2), True),
            StructField("day", DateType(), True),
            StructField("score", DoubleType(), True),
        ]
    )


def test_values(spark, fruit_file):
    assert tuples(spark.read.parquet(fruit_file).orderBy("id")) == [
        (1, "apple", Decimal("1.25"), datetime.date(2024, 1, 1), 0.5),
        (2, "banana", Decimal("0.50"), datetime.date(2024, 2, 29), None),
        (3, None, Decimal("10.00"), None, 2.25),
    ]


def test_format_parquet_load(spark, fruit_file):
    df = spark.read.format("parquet").load(fruit_file)
    assert df.count() == 3


def test_select_and_filter_over_the_file(spark, fruit_file):
    df = spark.read.parquet(fruit_file).where(F.col("price") > 1).select("name", "score")
    assert sorted_tuples(df) == [(None, 2.25), ("apple", 0.5)]


def test_directory_of_files(spark, tmp_path):
    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(pa.table({"n": pa.array([1, 2], pa.int32())}), folder / "part-0.parquet")
    pq.write_table(pa.table({"n": pa.array([3], pa.int32())}), folder / "part-1.parquet")
    df = spark.read.parquet(str(folder))
    assert df.dtypes == [("n", "int")]
    assert sorted_tuples(df) == [(1,), (2,), (3,)]
