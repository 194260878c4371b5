"""Errors reach the client as PySpark's exception types with Spark's error conditions:
missing tables, columns and paths are AnalysisException, bad SQL is ParseException."""

import pytest
from pyspark.errors import AnalysisException, ArithmeticException, ParseException


def test_missing_table(spark):
    with pytest.raises(AnalysisException) as error:
        spark.sql("SELECT * FROM no_such_table").collect()
    assert error.value.getCondition() == "TABLE_OR_VIEW_NOT_FOUND"


def test_missing_table_through_spark_table(spark):
    with pytest.raises(AnalysisException):
        spark.table("no_such_table").collect()


def test_missing_column_in_select(spark):
    with pytest.raises(AnalysisException) as error:
        spark.range(3).select("no_such_column").collect()
    assert error.value.getCondition().startswith("UNRESOLVED_COLUMN")


def test_missing_column_in_sql(spark):
    with pytest.raises(AnalysisException) as error:
        spark.sql("SELECT no_such_column FROM VALUES (1) AS t(x)").collect()
    assert error.value.getCondition().startswith("UNRESOLVED_COLUMN")


def test_missing_column_found_when_asking_for_the_schema(spark):
    with pytest.raises(AnalysisException):
        spark.range(3).filter("no_such_column > 1").columns


def test_bad_sql(spark):
    with pytest.raises(ParseException) as error:
        spark.sql("SELEC 1").collect()
    assert error.value.getCondition() == "PARSE_SYNTAX_ERROR"


def test_parse_exception_is_an_analysis_exception(spark):
    with pytest.raises(AnalysisException):
        spark.sql("SELECT 1 +").collect()


def test_missing_path(spark, tmp_path):
    with pytest.raises(AnalysisException) as error:
        spark.read.parquet(str(tmp_path / "missing.parquet")).collect()
    assert error.value.getCondition() == "PATH_NOT_FOUND"


def test_division_by_zero_under_ansi(spark):
    with pytest.raises(ArithmeticException) as error:
        spark.sql("SELECT 1 / 0").collect()
    assert error.value.getCondition() == "DIVIDE_BY_ZERO"


def test_session_still_works_after_errors(spark):
    with pytest.raises(AnalysisException):
        spark.sql("SELECT * FROM no_such_table").collect()
    assert spark.range(4).count() == 4
