"""Window functions through the DataFrame API: ranking, offsets, aggregates over
partitions and frames, and the names and types Spark gives them."""

import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

from helpers import tuples


@pytest.fixture(scope="module")
def sales(spark):
    """Seven sales in three regions, with a tie and a NULL amount."""
    return spark.createDataFrame(
        [
            ("east", 1, 10),
            ("east", 2, 20),
            ("east", 3, 20),
            ("west", 1, 5),
            ("west", 2, None),
            ("west", 3, 7),
            ("north", 1, 1),
        ],
        "region STRING, day INT, amount INT",
    )


def ordered(df):
    return tuples(df.orderBy("region", "day"))


def test_ranking_functions(sales):
    w = Window.partitionBy("region").orderBy(F.col("amount").desc())
    df = sales.select(
        "region",
        "day",
        F.row_number().over(w).alias("rn"),
        F.rank().over(w).alias("rk"),
        F.dense_rank().over(w).alias("drk"),
    )
    assert ordered(df) == [
        ("east", 1, 3, 3, 2),
        ("east", 2, 1, 1, 1),
        ("east", 3, 2, 1, 1),
        ("north", 1, 1, 1, 1),
        ("west", 1, 2, 2, 2),
        ("west", 2, 3, 3, 3),
        ("west", 3, 1, 1, 1),
    ]
    assert df.dtypes[2:] == [("rn", "int"), ("rk", "int"), ("drk", "int")]


def test_percent_rank_cume_dist_and_ntile(sales):
    w = Window.partitionBy("region").orderBy("day")
    df = sales.select(
        "region",
        "day",
        F.percent_rank().over(w).alias("pr"),
        F.cume_dist().over(w).alias("cd"),
        F.ntile(2).over(w).alias("half"),
    )
    rows = ordered(df.where(F.col("region") == "east"))
    assert rows == [("east", 1, 0.0, 1 / 3, 1), ("east", 2, 0.5, 2 / 3, 1), ("east", 3, 1.0, 1.0, 2)]
    assert df.dtypes[2:] == [("pr", "double"), ("cd", "double"), ("half", "int")]


def test_lag_and_lead(sales):
    w = Window.partitionBy("region").orderBy("day")
    df = sales.select(
        "region",
        "day",
        F.lag("amount").over(w).alias("prev"),
        F.lead("amount", 1, -1).over(w).alias("next"),
        F.lag("amount", 2).over(w).alias("prev2"),
    )
    assert ordered(df) == [
        ("east", 1, None, 20, None),
        ("east", 2, 10, 20, None),
        ("east", 3, 20, -1, 10),
        ("north", 1, None, -1, None),
        ("west", 1, None, None, None),
        ("west", 2, 5, 7, None),
        ("west", 3, None, -1, 5),
    ]


def test_running_total_and_partition_aggregates(sales):
    running = Window.partitionBy("region").orderBy("day")
    whole = Window.partitionBy("region")
    df = sales.withColumn("running", F.sum("amount").over(running)).withColumn(
        "share", F.col("amount") / F.sum("amount").over(whole)
    )
    assert [(r[0], r[1], r[3]) for r in ordered(df)] == [
        ("east", 1, 10),
        ("east", 2, 30),
        ("east", 3, 50),
        ("north", 1, 1),
        ("west", 1, 5),
        ("west", 2, 5),
        ("west", 3, 12),
    ]
    assert ordered(df)[0][4] == pytest.approx(0.2)
    assert df.dtypes[3] == ("running", "bigint")


def test_range_frame_includes_peers(sales):
    # The default frame of an ordered window is RANGE: rows tied on the order key are
    # summed together.
    w = Window.partitionBy("region").orderBy("amount")
    df = sales.where(F.col("region") == "east").select("day", F.sum("amount").over(w).alias("s"))
    assert sorted(tuples(df)) == [(1, 10), (2, 50), (3, 50)]


def test_rows_between_frame(sales):
    w = Window.partitionBy("region").orderBy("day").rowsBetween(-1, Window.currentRow)
    df = sales.select("region", "day", F.sum("amount").over(w).alias("s"), F.count("*").over(w).alias("n"))
    assert ordered(df) == [
        ("east", 1, 10, 1),
        ("east", 2, 30, 2),
        ("east", 3, 40, 2),
        ("north", 1, 1, 1),
        ("west", 1, 5, 1),
        ("west", 2, 5, 2),
        ("west", 3, 7, 2),
    ]


def test_range_between_offsets(spark):
    df = spark.createDataFrame([(1, 1), (2, 2), (4, 4), (5, 8)], "t INT, v INT")
    w = Window.orderBy("t").rangeBetween(-1, 1)
    assert tuples(df.select("t", F.sum("v").over(w).alias("s")).orderBy("t")) == [
        (1, 3),
        (2, 3),
        (4, 12),
        (5, 12),
    ]


def test_unbounded_frame_and_first_last(sales):
    w = (
        Window.partitionBy("region")
        .orderBy("day")
        .rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    )
    df = sales.select(
        "region",
        "day",
        F.first("amount").over(w).alias("first"),
        F.last("amount").over(w).alias("last"),
        F.max("amount").over(w).alias("top"),
    )
    assert ordered(df)[:3] == [("east", 1, 10, 20, 20), ("east", 2, 10, 20, 20), ("east", 3, 10, 20, 20)]


def test_window_without_partition(sales):
    df = sales.select("region", "day", F.row_number().over(Window.orderBy("region", "day")).alias("n"))
    assert [r[2] for r in tuples(df.orderBy("n"))] == [1, 2, 3, 4, 5, 6, 7]


def test_top_row_per_group(sales):
    w = Window.partitionBy("region").orderBy(F.col("amount").desc_nulls_last(), "day")
    top = sales.withColumn("rn", F.row_number().over(w)).where("rn = 1").drop("rn")
    assert sorted(tuples(top)) == [("east", 2, 20), ("north", 1, 1), ("west", 3, 7)]


def test_default_window_column_name(sales):
    w = Window.partitionBy("region").orderBy("day")
    df = sales.select(F.row_number().over(w), F.sum("amount").over(Window.partitionBy("region")))
    assert df.columns == [
        "row_number() OVER (PARTITION BY region ORDER BY day ASC NULLS FIRST ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)",
        "sum(amount) OVER (PARTITION BY region ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)",
    ]


def test_sql_window_function(spark, sales):
    sales.createOrReplaceTempView("window_sales")
    df = spark.sql(
        "SELECT region, day, sum(amount) OVER (PARTITION BY region ORDER BY day) AS running "
        "FROM window_sales WHERE region = 'east'"
    )
    assert tuples(df.orderBy("day")) == [("east", 1, 10), ("east", 2, 30), ("east", 3, 50)]


def test_non_window_function_is_an_analysis_error(sales):
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException):
        sales.select(F.upper("region").over(Window.partitionBy("day"))).collect()


def test_ranking_needs_an_ordered_window(sales):
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match="WINDOW_FUNCTION_FRAME_NOT_ORDERED"):
        sales.select(F.rank().over(Window.partitionBy("region"))).collect()


def test_integer_range_offsets_over_dates_are_rejected(spark):
    from pyspark.errors import AnalysisException

    df = spark.sql("SELECT * FROM VALUES (DATE '2024-01-01', 1), (DATE '2024-01-05', 2) AS t(d, v)")
    w = Window.orderBy("d").rangeBetween(-7, 0)
    with pytest.raises(AnalysisException, match="RANGE_FRAME_INVALID_TYPE"):
        df.select("d", F.sum("v").over(w).alias("s")).collect()


def test_first_and_last_over_sliding_frames(sales):
    w = Window.partitionBy("region").orderBy("day").rowsBetween(-1, 1)
    df = sales.select(
        "region",
        "day",
        F.first("amount", True).over(w).alias("first"),
        F.last("amount").over(w).alias("last"),
    )
    assert ordered(df.where(F.col("region") == "west")) == [
        ("west", 1, 5, None),
        ("west", 2, 5, 7),
        ("west", 3, 7, 7),
    ]
