"""filter and where with Column conditions and SQL strings, including NULL semantics."""

from pyspark.sql import functions as F

from helpers import sorted_tuples


def names(df):
    return sorted(row.name for row in df.collect())


def test_filter_with_column(people):
    assert names(people.filter(people.age > 30)) == ["Alice", "Bob"]


def test_where_with_sql_string(people):
    assert names(people.where("age > 30 AND city = 'NY'")) == ["Alice"]


def test_and_or_not(people):
    condition = ((F.col("age") < 40) & (F.col("city") == "NY")) | ~F.col("salary").isNotNull()
    assert names(people.filter(condition)) == ["Alice", "Bob"]


def test_null_comparisons_drop_rows(people):
    assert names(people.filter(F.col("city") != "NY")) == ["Bob"]
    assert names(people.filter(F.col("city").isNull())) == ["Dave"]


def test_isin_like_between(people):
    assert names(people.filter(F.col("id").isin(1, 3))) == ["Alice", "Carol"]
    assert names(people.filter(F.col("name").like("%a%"))) == ["Carol", "Dave"]
    assert names(people.filter(F.col("age").between(29, 34))) == ["Alice", "Dave"]


def test_chained_filters(people):
    df = people.where("salary IS NOT NULL").filter(F.col("salary") > 4500).select("id")
    assert sorted_tuples(df) == [(1,), (3,)]
