"""spark.conf get/set/unset for Spark keys and free-form keys, values as strings,
defaults, SQL SET, and the errors Spark raises for unknown keys and bad values."""

import pytest
from pyspark.errors import IllegalArgumentException, SparkNoSuchElementException


def test_set_get_unset_restores_previous_value(spark):
    key = "spark.sql.session.timeZone"
    before = spark.conf.get(key)
    spark.conf.set(key, "America/New_York")
    try:
        assert spark.conf.get(key) == "America/New_York"
    finally:
        spark.conf.unset(key)
    assert spark.conf.get(key) == before


def test_values_come_back_as_strings(spark):
    spark.conf.set("spark.sql.shuffle.partitions", 7)
    spark.conf.set("spark.sql.ansi.enabled", False)
    try:
        assert spark.conf.get("spark.sql.shuffle.partitions") == "7"
        assert spark.conf.get("spark.sql.ansi.enabled") == "false"
    finally:
        spark.conf.unset("spark.sql.shuffle.partitions")
        spark.conf.unset("spark.sql.ansi.enabled")


def test_free_form_key(spark):
    spark.conf.set("test.connect.custom", "hello")
    assert spark.conf.get("test.connect.custom") == "hello"
    spark.conf.unset("test.connect.custom")
    with pytest.raises(SparkNoSuchElementException):
        spark.conf.get("test.connect.custom")


def test_unknown_key_raises_sql_conf_not_found(spark):
    with pytest.raises(SparkNoSuchElementException) as error:
        spark.conf.get("no.such.key")
    assert error.value.getCondition() == "SQL_CONF_NOT_FOUND"


def test_unknown_key_with_default(spark):
    assert spark.conf.get("no.such.key", "fallback") == "fallback"


def test_invalid_value_is_rejected(spark):
    with pytest.raises(IllegalArgumentException):
        spark.conf.set("spark.sql.shuffle.partitions", "abc")


def test_is_modifiable(spark):
    assert spark.conf.isModifiable("spark.sql.shuffle.partitions")


def test_sql_set_is_seen_by_conf(spark):
    spark.sql("SET test.connect.sql_set = 5").collect()
    try:
        assert spark.conf.get("test.connect.sql_set") == "5"
        rows = spark.sql("SET test.connect.sql_set").collect()
        assert [tuple(r) for r in rows] == [("test.connect.sql_set", "5")]
    finally:
        spark.conf.unset("test.connect.sql_set")


def test_typed_values_are_checked(spark):
    with pytest.raises(IllegalArgumentException, match="TYPE_MISMATCH"):
        spark.conf.set("spark.sql.ansi.enabled", "maybe")
    with pytest.raises(IllegalArgumentException, match="'int'"):
        spark.conf.set("spark.sql.repl.eagerEval.maxNumRows", "1.5")
    spark.conf.set("spark.sql.ansi.enabled", "TRUE")
    try:
        assert spark.conf.get("spark.sql.ansi.enabled") == "TRUE"
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")
