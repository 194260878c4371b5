"""spark.read.csv: header, inferSchema, DDL schema strings, separators and NULLs."""

import pytest

from helpers import sorted_tuples, tuples

CSV = "id,name,price,active\n1,apple,1.5,true\n2,banana,0.25,false\n3,,2.0,true\n"


@pytest.fixture
def fruit_csv(tmp_path) -> str:
    path = tmp_path / "fruit.csv"
    path.write_text(CSV)
    return str(path)


def test_header_without_inference_reads_strings(spark, fruit_csv):
    df = spark.read.option("header", True).csv(fruit_csv)
    assert df.dtypes == [("id", "string"), ("name", "string"), ("price", "string"), ("active", "string")]
    assert tuples(df.orderBy("id")) == [
        ("1", "apple", "1.5", "true"),
        ("2", "banana", "0.25", "false"),
        ("3", None, "2.0", "true"),
    ]


def test_infer_schema(spark, fruit_csv):
    df = spark.read.csv(fruit_csv, header=True, inferSchema=True)
    assert df.dtypes == [("id", "int"), ("name", "string"), ("price", "double"), ("active", "boolean")]
    assert tuples(df.orderBy("id")) == [
        (1, "apple", 1.5, True),
        (2, "banana", 0.25, False),
        (3, None, 2.0, True),
    ]


def test_ddl_schema_string(spark, fruit_csv):
    df = spark.read.csv(fruit_csv, header=True, schema="id LONG, name STRING, price DOUBLE, active BOOLEAN")
    assert df.dtypes == [("id", "bigint"), ("name", "string"), ("price", "double"), ("active", "boolean")]
    assert df.where("price > 1").count() == 2


def test_no_header_names_columns_by_position(spark, tmp_path):
    path = tmp_path / "plain.csv"
    path.write_text("1,x\n2,y\n")
    df = spark.read.csv(str(path))
    assert df.columns == ["_c0", "_c1"]
    assert sorted_tuples(df) == [("1", "x"), ("2", "y")]


def test_separator_option(spark, tmp_path):
    path = tmp_path / "semi.csv"
    path.write_text("a;b\n1;2\n3;4\n")
    df = spark.read.format("csv").option("header", "true").option("sep", ";").option("inferSchema", "true").load(str(path))
    assert df.dtypes == [("a", "int"), ("b", "int")]
    assert sorted_tuples(df) == [(1, 2), (3, 4)]
