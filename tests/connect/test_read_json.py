"""spark.read.json over JSON-lines files: inferred types, Spark's alphabetical column
order, missing fields as NULL, and a DDL schema string."""

import pytest

from helpers import sorted_tuples

JSON_LINES = '{"name": "apple", "qty": 3, "price": 1.5}\n{"name": "pear", "qty": 10}\n{"qty": 7, "price": 0.25, "name": "fig"}\n'


@pytest.fixture
def fruit_json(tmp_path) -> str:
    path = tmp_path / "fruit.json"
    path.write_text(JSON_LINES)
    return str(path)


def test_inferred_schema_sorts_columns_by_name(spark, fruit_json):
    df = spark.read.json(fruit_json)
    assert df.dtypes == [("name", "string"), ("price", "double"), ("qty", "bigint")]


def test_missing_fields_are_null(spark, fruit_json):
    assert sorted_tuples(spark.read.json(fruit_json)) == [
        ("apple", 1.5, 3),
        ("fig", 0.25, 7),
        ("pear", None, 10),
    ]


def test_ddl_schema_string(spark, fruit_json):
    df = spark.read.schema("qty INT, name STRING").json(fruit_json)
    assert df.dtypes == [("qty", "int"), ("name", "string")]
    assert sorted_tuples(df) == [(3, "apple"), (7, "fig"), (10, "pear")]


def test_format_json_load(spark, fruit_json):
    assert spark.read.format("json").load(fruit_json).where("qty > 5").count() == 2
