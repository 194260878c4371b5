"""distinct and dropDuplicates, with and without a subset of columns."""

import pytest

from helpers import sorted_tuples


@pytest.fixture(scope="module")
def visits(spark):
    return spark.createDataFrame(
        [("ann", "home"), ("ann", "home"), ("ann", "shop"), ("bob", "home"), (None, None), (None, None)],
        "who STRING, page STRING",
    )


def test_distinct(visits):
    assert sorted_tuples(visits.distinct()) == [(None, None), ("ann", "home"), ("ann", "shop"), ("bob", "home")]


def test_drop_duplicates_without_subset(visits):
    assert visits.dropDuplicates().count() == 4


def test_drop_duplicates_with_subset(visits):
    df = visits.dropDuplicates(["who"])
    assert df.columns == ["who", "page"]
    assert sorted(row.who or "" for row in df.collect()) == ["", "ann", "bob"]


def test_drop_duplicates_subset_keeps_whole_rows(visits):
    df = visits.where("who = 'bob' OR who IS NULL").drop_duplicates(["page"])
    assert sorted_tuples(df) == [(None, None), ("bob", "home")]


def test_sql_distinct_count(spark, visits):
    visits.createOrReplaceTempView("visits_distinct")
    row = spark.sql("SELECT count(DISTINCT who) AS n, count(DISTINCT who, page) AS m FROM visits_distinct").first()
    assert (row.n, row.m) == (2, 3)
