"""spark.createDataFrame from lists of tuples (no schema, column names, DDL string,
StructType), from Rows and from pandas DataFrames."""

import datetime
from decimal import Decimal

import pandas as pd
from pyspark.sql import Row
from pyspark.sql.types import DecimalType, IntegerType, StringType, StructField, StructType

from helpers import tuples


def test_tuples_without_schema_infer_types_and_names(spark):
    df = spark.createDataFrame([(1, "a", 1.5, True), (2, None, None, False)])
    assert df.dtypes == [("_1", "bigint"), ("_2", "string"), ("_3", "double"), ("_4", "boolean")]
    assert tuples(df) == [(1, "a", 1.5, True), (2, None, None, False)]


def test_tuples_with_column_names(spark):
    df = spark.createDataFrame([(1, "a"), (2, "b")], ["n", "s"])
    assert df.dtypes == [("n", "bigint"), ("s", "string")]
    assert tuples(df) == [(1, "a"), (2, "b")]


def test_ddl_schema_string(spark):
    df = spark.createDataFrame(
        [(1, "x", Decimal("2.50"), datetime.date(2020, 5, 17))],
        "id INT, tag STRING, amount DECIMAL(6,2), day DATE",
    )
    assert df.dtypes == [("id", "int"), ("tag", "string"), ("amount", "decimal(6,2)"), ("day", "date")]
    assert tuples(df) == [(1, "x", Decimal("2.50"), datetime.date(2020, 5, 17))]


def test_struct_type_schema_with_non_nullable_field(spark):
    schema = StructType([StructField("id", IntegerType(), False), StructField("v", DecimalType(10, 3), True)])
    df = spark.createDataFrame([(1, Decimal("0.125")), (2, None)], schema)
    assert df.schema == schema
    assert tuples(df) == [(1, Decimal("0.125")), (2, None)]


def test_rows(spark):
    df = spark.createDataFrame([Row(name="x", age=3), Row(name="y", age=None)])
    assert df.columns == ["name", "age"]
    assert df.collect() == [Row(name="x", age=3), Row(name="y", age=None)]


def test_pandas(spark):
    pdf = pd.DataFrame({"i": [1, 2], "f": [0.5, None], "s": ["a", None], "b": [True, False]})
    df = spark.createDataFrame(pdf)
    assert df.dtypes == [("i", "bigint"), ("f", "double"), ("s", "string"), ("b", "boolean")]
    assert tuples(df) == [(1, 0.5, "a", True), (2, None, None, False)]


def test_pandas_with_schema(spark):
    pdf = pd.DataFrame({"a": [1, 2, 3], "b": ["p", "q", "r"]})
    df = spark.createDataFrame(pdf, schema=StructType([StructField("a", IntegerType()), StructField("b", StringType())]))
    assert df.dtypes == [("a", "int"), ("b", "string")]
    assert df.where("a >= 2").count() == 2


def test_empty_with_schema(spark):
    df = spark.createDataFrame([], "a INT, b STRING")
    assert df.columns == ["a", "b"]
    assert df.count() == 0
