"""Actions: collect (Row objects), toPandas, count, first, take, head, isEmpty."""

import datetime
from decimal import Decimal

import pandas as pd
from pyspark.sql import Row


def test_collect_returns_rows(people):
    rows = people.orderBy("id").collect()
    assert len(rows) == 4
    first = rows[0]
    assert isinstance(first, Row)
    assert first.name == "Alice" and first["age"] == 34 and first[0] == 1
    assert first.asDict() == {"id": 1, "name": "Alice", "age": 34, "city": "NY", "salary": 5000.5}


def test_count(people):
    assert people.count() == 4
    assert people.where("age IS NULL").count() == 1


def test_first_take_head(spark):
    df = spark.range(10).orderBy("id")
    assert df.first() == Row(id=0)
    assert df.take(2) == [Row(id=0), Row(id=1)]
    assert df.head() == Row(id=0)
    assert df.head(3) == [Row(id=0), Row(id=1), Row(id=2)]


def test_empty_results(spark):
    empty = spark.range(0)
    assert empty.first() is None
    assert empty.head() is None
    assert empty.take(3) == []
    assert empty.isEmpty()
    assert not spark.range(1).isEmpty()


def test_to_pandas_values_and_dtypes(spark):
    pdf = spark.sql(
        "SELECT 1 AS i, CAST(2 AS BIGINT) AS l, 'x' AS s, CAST(1.5 AS DOUBLE) AS d, "
        "CAST(1.25 AS DECIMAL(5,2)) AS dec, DATE'2024-01-01' AS dt, true AS b"
    ).toPandas()
    assert list(pdf.dtypes.astype(str)) == ["int32", "int64", "object", "float64", "object", "object", "bool"]
    assert pdf.iloc[0].tolist() == [1, 2, "x", 1.5, Decimal("1.25"), datetime.date(2024, 1, 1), True]


def test_to_pandas_integer_nulls_become_nan(spark):
    pdf = spark.createDataFrame([(1, None), (2, 5)], "a INT, b INT").toPandas()
    expected = pd.DataFrame({"a": pd.Series([1, 2], dtype="int32"), "b": [float("nan"), 5.0]})
    pd.testing.assert_frame_equal(pdf, expected)


def test_to_pandas_of_people(people):
    pdf = people.orderBy("id").toPandas()
    assert list(pdf.columns) == ["id", "name", "age", "city", "salary"]
    assert pdf["name"].tolist() == ["Alice", "Bob", "Carol", "Dave"]
    assert pdf["salary"].isna().tolist() == [False, True, False, False]
