"""cacheTable / uncacheTable / clearCache, through the catalog and through SQL. On Aether a
cached table's GPU-segment inputs stay on the GPU between queries; without a GPU the
answers are the same and nothing else changes."""

import pytest
from pyspark.errors import AnalysisException

from helpers import sorted_tuples


@pytest.fixture
def cache_table(spark):
    spark.createDataFrame([(1, 10), (2, 20), (2, 5)], "k INT, v INT").createOrReplaceTempView("cache_t")
    yield "cache_t"
    spark.catalog.clearCache()


def test_catalog_cache_and_uncache(spark, cache_table):
    assert not spark.catalog.isCached(cache_table)
    spark.catalog.cacheTable(cache_table)
    assert spark.catalog.isCached(cache_table)
    rows = spark.sql(f"SELECT k, sum(v) FROM {cache_table} GROUP BY k")
    assert sorted_tuples(rows) == [(1, 10), (2, 25)]
    spark.catalog.uncacheTable(cache_table)
    assert not spark.catalog.isCached(cache_table)


def test_sql_cache_table(spark, cache_table):
    spark.sql(f"CACHE TABLE {cache_table}").collect()
    assert spark.catalog.isCached(cache_table)
    assert spark.table(cache_table).count() == 3
    spark.sql(f"UNCACHE TABLE {cache_table}").collect()
    assert not spark.catalog.isCached(cache_table)
    spark.sql("UNCACHE TABLE IF EXISTS cache_no_such_table").collect()


def test_clear_cache(spark, cache_table):
    spark.catalog.cacheTable(cache_table)
    spark.catalog.clearCache()
    assert not spark.catalog.isCached(cache_table)


def test_caching_a_missing_table_fails(spark):
    with pytest.raises(AnalysisException):
        spark.catalog.cacheTable("cache_no_such_table")
    with pytest.raises(AnalysisException):
        spark.sql("CACHE TABLE cache_no_such_table").collect()
