"""spark.catalog: current database, listTables, tableExists and listColumns for
temporary views."""

from pyspark.sql import functions as F


def test_current_database_and_catalog(spark):
    assert spark.catalog.currentDatabase() == "default"
    assert spark.catalog.currentCatalog() == "spark_catalog"


def test_list_tables_includes_temp_views(spark):
    spark.range(3).createOrReplaceTempView("cat_listed")
    tables = {t.name: t for t in spark.catalog.listTables()}
    assert "cat_listed" in tables
    assert tables["cat_listed"].isTemporary
    assert tables["cat_listed"].tableType == "TEMPORARY"


def test_table_exists(spark):
    spark.range(3).createOrReplaceTempView("cat_exists")
    assert spark.catalog.tableExists("cat_exists")
    assert not spark.catalog.tableExists("cat_does_not_exist")


def test_list_columns(spark):
    df = spark.range(2).select(
        "id",
        F.col("id").cast("string").alias("label"),
        F.col("id").cast("decimal(10,2)").alias("amount"),
        F.expr("CASE WHEN id > 0 THEN CAST(1.5 AS DOUBLE) END").alias("maybe"),
    )
    df.createOrReplaceTempView("cat_columns")
    columns = [(c.name, c.dataType, c.nullable) for c in spark.catalog.listColumns("cat_columns")]
    assert columns == [
        ("id", "bigint", False),
        ("label", "string", False),
        ("amount", "decimal(10,2)", True),
        ("maybe", "double", True),
    ]


def test_dropped_view_disappears(spark):
    spark.range(1).createOrReplaceTempView("cat_gone")
    spark.catalog.dropTempView("cat_gone")
    assert not spark.catalog.tableExists("cat_gone")
    assert "cat_gone" not in [t.name for t in spark.catalog.listTables()]
