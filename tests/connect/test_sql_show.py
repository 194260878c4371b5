"""spark.sql(...).show(): the exact text Spark prints, including column names Spark
derives from expressions, NULL, number and date formatting, truncation and vertical mode."""

from helpers import lines, show_text


def test_integers_strings_and_null(spark):
    df = spark.sql("SELECT * FROM VALUES (1, 'a'), (2, 'bb'), (3, NULL) AS t(id, name)")
    assert show_text(df) == lines(
        "+---+----+",
        "| id|name|",
        "+---+----+",
        "|  1|   a|",
        "|  2|  bb|",
        "|  3|NULL|",
        "+---+----+",
        "",
    )


def test_decimal_date_double_boolean_bigint(spark):
    df = spark.sql(
        "SELECT CAST(1.5 AS DECIMAL(10,2)) AS price, DATE '2024-02-29' AS day, "
        "CAST(0.1 AS DOUBLE) + CAST(0.2 AS DOUBLE) AS dbl, true AS flag, CAST(-7 AS BIGINT) AS big, "
        "CAST(1.0E10 AS DOUBLE) AS large"
    )
    assert show_text(df) == lines(
        "+-----+----------+-------------------+----+---+------+",
        "|price|       day|                dbl|flag|big| large|",
        "+-----+----------+-------------------+----+---+------+",
        "| 1.50|2024-02-29|0.30000000000000004|true| -7|1.0E10|",
        "+-----+----------+-------------------+----+---+------+",
        "",
    )


def test_float_division_and_null_double(spark):
    df = spark.sql(
        "SELECT CAST(1.5 AS FLOAT) AS f, 1/3 AS third, CAST(NULL AS DOUBLE) AS nd, CAST(100 AS DOUBLE) AS hundred"
    )
    assert show_text(df) == lines(
        "+---+------------------+----+-------+",
        "|  f|             third|  nd|hundred|",
        "+---+------------------+----+-------+",
        "|1.5|0.3333333333333333|NULL|  100.0|",
        "+---+------------------+----+-------+",
        "",
    )


def test_derived_column_names(spark):
    df = spark.sql("SELECT 1 + 2, count(*), sum(id), avg(id), max(id) FROM VALUES (1), (2), (3), (4) AS t(id)")
    assert show_text(df) == lines(
        "+-------+--------+-------+-------+-------+",
        "|(1 + 2)|count(1)|sum(id)|avg(id)|max(id)|",
        "+-------+--------+-------+-------+-------+",
        "|      3|       4|     10|    2.5|      4|",
        "+-------+--------+-------+-------+-------+",
        "",
    )


def test_timestamp(spark):
    df = spark.sql("SELECT TIMESTAMP '2024-01-02 03:04:05' AS ts")
    assert show_text(df) == lines(
        "+-------------------+",
        "|                 ts|",
        "+-------------------+",
        "|2024-01-02 03:04:05|",
        "+-------------------+",
        "",
    )


def test_long_strings_are_truncated_to_20_characters(spark):
    df = spark.sql("SELECT 'abcdefghijklmnopqrstuvwxyz' AS long, 'short' AS s")
    assert show_text(df) == lines(
        "+--------------------+-----+",
        "|                long|    s|",
        "+--------------------+-----+",
        "|abcdefghijklmnopq...|short|",
        "+--------------------+-----+",
        "",
    )


def test_truncate_false_left_aligns(spark):
    df = spark.sql("SELECT 'abcdefghijklmnopqrstuvwxyz' AS long, 'short' AS s")
    assert show_text(df, truncate=False) == lines(
        "+--------------------------+-----+",
        "|long                      |s    |",
        "+--------------------------+-----+",
        "|abcdefghijklmnopqrstuvwxyz|short|",
        "+--------------------------+-----+",
        "",
    )


def test_truncate_to_given_width(spark):
    df = spark.sql("SELECT 'abcdefghijklmnopqrstuvwxyz' AS long, 'short' AS s")
    assert show_text(df, truncate=5) == lines(
        "+-----+-----+",
        "| long|    s|",
        "+-----+-----+",
        "|ab...|short|",
        "+-----+-----+",
        "",
    )


def test_show_n_rows_says_more_exist(spark):
    assert show_text(spark.sql("SELECT * FROM VALUES (0), (1), (2), (3), (4) AS t(id)"), 2) == lines(
        "+---+",
        "| id|",
        "+---+",
        "|  0|",
        "|  1|",
        "+---+",
        "only showing top 2 rows",
    )


def test_vertical(spark):
    df = spark.sql("SELECT * FROM VALUES (1, 'Alice'), (2, NULL) AS t(id, name) ORDER BY id")
    assert show_text(df, vertical=True) == lines(
        "-RECORD 0-----",
        " id   | 1     ",
        " name | Alice ",
        "-RECORD 1-----",
        " id   | 2     ",
        " name | NULL  ",
        "",
    )


def test_empty_result_shows_header_only(spark):
    df = spark.sql("SELECT id, id * 2 AS twice FROM VALUES (1) AS t(id) WHERE id > 1")
    assert show_text(df) == lines(
        "+---+-----+",
        "| id|twice|",
        "+---+-----+",
        "+---+-----+",
        "",
    )


def test_nested_types(spark):
    df = spark.sql("SELECT array(1, 2, 3) AS arr, named_struct('a', 1, 'b', 'x') AS st, map('k', 1) AS m")
    assert show_text(df) == lines(
        "+---------+------+--------+",
        "|      arr|    st|       m|",
        "+---------+------+--------+",
        "|[1, 2, 3]|{1, x}|{k -> 1}|",
        "+---------+------+--------+",
        "",
    )
