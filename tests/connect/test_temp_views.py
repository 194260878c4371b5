"""Temporary views: createOrReplaceTempView then spark.sql, replacing a view,
createTempView on an existing name, dropTempView, and views over SQL results."""

import pytest
from pyspark.errors import AnalysisException

from helpers import sorted_tuples


def test_query_a_temp_view(spark, people):
    people.createOrReplaceTempView("tv_people")
    df = spark.sql("SELECT city, count(*) AS n FROM tv_people WHERE city IS NOT NULL GROUP BY city")
    assert sorted_tuples(df) == [("NY", 2), ("SF", 1)]


def test_replace_changes_what_the_name_means(spark):
    spark.range(3).createOrReplaceTempView("tv_replace")
    assert spark.sql("SELECT count(*) FROM tv_replace").first()[0] == 3
    spark.range(7).createOrReplaceTempView("tv_replace")
    assert spark.sql("SELECT count(*) FROM tv_replace").first()[0] == 7


def test_create_temp_view_twice_fails(spark):
    spark.range(1).createOrReplaceTempView("tv_twice")
    with pytest.raises(AnalysisException):
        spark.range(2).createTempView("tv_twice")


def test_drop_temp_view(spark):
    spark.range(1).createOrReplaceTempView("tv_drop")
    assert spark.catalog.dropTempView("tv_drop") is True
    assert spark.catalog.dropTempView("tv_drop") is False
    with pytest.raises(AnalysisException):
        spark.sql("SELECT * FROM tv_drop").collect()


def test_view_over_sql_and_table_function(spark, people):
    people.createOrReplaceTempView("tv_base")
    spark.sql("SELECT name, age FROM tv_base WHERE age > 30").createOrReplaceTempView("tv_derived")
    assert sorted_tuples(spark.table("tv_derived")) == [("Alice", 34), ("Bob", 45)]


def test_sql_create_temp_view(spark):
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW tv_sql AS SELECT id * 10 AS x FROM VALUES (0), (1), (2) AS t(id)").collect()
    assert sorted_tuples(spark.sql("SELECT x FROM tv_sql")) == [(0,), (10,), (20,)]
