"""Aether's own configuration through spark.conf: `aether.*` keys, the RAPIDS alias
`spark.rapids.sql.enabled` sharing its value with `aether.gpu.enabled`, validation of
values, and unknown `aether.*` keys."""

import pytest
from pyspark.errors import IllegalArgumentException, SparkNoSuchElementException
from pyspark.sql import functions as F

pytestmark = pytest.mark.aether_only


def test_aether_keys_have_defaults(spark):
    assert spark.conf.get("aether.engine") in {"auto", "cpu", "gpu"}
    assert spark.conf.get("aether.sql.explain") in {"ALL", "NOT_ON_GPU", "NONE"}


def test_set_and_unset_aether_key(spark):
    before = spark.conf.get("aether.engine")
    spark.conf.set("aether.engine", "cpu")
    try:
        assert spark.conf.get("aether.engine") == "cpu"
        assert spark.range(10).count() == 10
    finally:
        spark.conf.unset("aether.engine")
    assert spark.conf.get("aether.engine") == before


def test_rapids_alias_sets_aether_key(spark):
    spark.conf.set("spark.rapids.sql.enabled", "false")
    try:
        assert spark.conf.get("aether.gpu.enabled") == "false"
        assert spark.conf.get("spark.rapids.sql.enabled") == "false"
    finally:
        spark.conf.unset("spark.rapids.sql.enabled")
    assert spark.conf.get("aether.gpu.enabled") == "true"


def test_aether_key_sets_rapids_alias(spark):
    spark.conf.set("aether.gpu.enabled", False)
    try:
        assert spark.conf.get("spark.rapids.sql.enabled") == "false"
    finally:
        spark.conf.unset("aether.gpu.enabled")


def test_bad_value_is_rejected(spark):
    with pytest.raises(IllegalArgumentException):
        spark.conf.set("aether.engine", "quantum")
    assert spark.conf.get("aether.engine") in {"auto", "cpu", "gpu"}


def test_unknown_aether_key(spark):
    with pytest.raises(SparkNoSuchElementException):
        spark.conf.get("aether.no.such.key")


def test_sql_set_aether_key(spark):
    spark.sql("SET aether.sql.explain = ALL").collect()
    try:
        assert spark.conf.get("aether.sql.explain") == "ALL"
    finally:
        spark.conf.unset("aether.sql.explain")


def test_queries_run_with_gpu_disabled(spark):
    spark.conf.set("spark.rapids.sql.enabled", "false")
    try:
        assert spark.range(100).agg(F.sum("id")).first()[0] == 4950
    finally:
        spark.conf.unset("spark.rapids.sql.enabled")
