"""printSchema, df.schema and df.dtypes: Spark's type names and nullability for literals,
casts, decimals, nested types, and columns that can or cannot be NULL."""

from pyspark.sql.types import (
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from helpers import lines

ALL_TYPES = (
    "SELECT 1 AS i, CAST(2 AS BIGINT) AS l, 'x' AS s, CAST(1.5 AS DOUBLE) AS d, CAST(1.25 AS DECIMAL(5,2)) AS dec, "
    "DATE'2024-01-01' AS dt, TIMESTAMP'2024-01-01 10:00:00' AS ts, true AS b, CAST(NULL AS STRING) AS n, "
    "array(1, 2) AS arr, map('a', CAST(1 AS DOUBLE)) AS m, named_struct('x', 1, 'y', 'z') AS st, "
    "CAST(1 AS SMALLINT) AS sh, CAST(1 AS TINYINT) AS ty, CAST(1 AS FLOAT) AS fl, X'01' AS bin"
)


def test_print_schema(spark, capsys):
    spark.sql(ALL_TYPES).printSchema()
    assert capsys.readouterr().out == lines(
        "root",
        " |-- i: integer (nullable = false)",
        " |-- l: long (nullable = false)",
        " |-- s: string (nullable = false)",
        " |-- d: double (nullable = false)",
        " |-- dec: decimal(5,2) (nullable = false)",
        " |-- dt: date (nullable = false)",
        " |-- ts: timestamp (nullable = false)",
        " |-- b: boolean (nullable = false)",
        " |-- n: string (nullable = true)",
        " |-- arr: array (nullable = false)",
        " |    |-- element: integer (containsNull = false)",
        " |-- m: map (nullable = false)",
        " |    |-- key: string",
        " |    |-- value: double (valueContainsNull = false)",
        " |-- st: struct (nullable = false)",
        " |    |-- x: integer (nullable = false)",
        " |    |-- y: string (nullable = false)",
        " |-- sh: short (nullable = false)",
        " |-- ty: byte (nullable = false)",
        " |-- fl: float (nullable = false)",
        " |-- bin: binary (nullable = false)",
        "",
    )


def test_dtypes(spark):
    assert spark.sql(ALL_TYPES).dtypes == [
        ("i", "int"),
        ("l", "bigint"),
        ("s", "string"),
        ("d", "double"),
        ("dec", "decimal(5,2)"),
        ("dt", "date"),
        ("ts", "timestamp"),
        ("b", "boolean"),
        ("n", "string"),
        ("arr", "array<int>"),
        ("m", "map<string,double>"),
        ("st", "struct<x:int,y:string>"),
        ("sh", "smallint"),
        ("ty", "tinyint"),
        ("fl", "float"),
        ("bin", "binary"),
    ]


def test_schema_of_ddl_created_frame(people):
    assert people.schema == StructType(
        [
            StructField("id", IntegerType(), True),
            StructField("name", StringType(), True),
            StructField("age", IntegerType(), True),
            StructField("city", StringType(), True),
            StructField("salary", DoubleType(), True),
        ]
    )


def test_decimal_arithmetic_types(spark):
    df = spark.sql(
        "SELECT a + b AS plus, a * b AS times, a / b AS div, a * 2 AS by_int "
        "FROM VALUES (CAST(1.50 AS DECIMAL(15,2)), CAST(0.05 AS DECIMAL(15,2))) AS t(a, b)"
    )
    assert df.dtypes == [
        ("plus", "decimal(16,2)"),
        ("times", "decimal(31,4)"),
        ("div", "decimal(33,18)"),
        ("by_int", "decimal(17,2)"),
    ]


def test_nullability_follows_expressions(spark):
    df = spark.range(3).selectExpr("id", "id + 1 AS next", "CASE WHEN id > 0 THEN id END AS maybe", "count(*) OVER () AS n")
    assert df.schema == StructType(
        [
            StructField("id", LongType(), False),
            StructField("next", LongType(), False),
            StructField("maybe", LongType(), True),
            StructField("n", LongType(), False),
        ]
    )


def test_cast_and_decimal_schema(spark):
    df = spark.range(1).selectExpr("CAST(id AS DECIMAL(38,10)) AS big", "CAST(id AS STRING) AS s")
    assert df.schema.fields[0].dataType == DecimalType(38, 10)
    assert df.schema.simpleString() == "struct<big:decimal(38,10),s:string>"
