"""TPC-H Q1, Q3, Q5, Q6 and Q10 written with the DataFrame API (pyspark.sql.functions)
return exactly what their SQL text returns, on the SF1 tables."""

import datetime
from decimal import Decimal

import pytest
from pyspark.sql import functions as F

pytestmark = pytest.mark.tpch

Q1_SQL = """
select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty, sum(l_extendedprice) as sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
       avg(l_quantity) as avg_qty, avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc,
       count(*) as count_order
from lineitem
where l_shipdate <= date '1998-12-01' - interval '90' day
group by l_returnflag, l_linestatus
order by l_returnflag, l_linestatus
"""

Q3_SQL = """
select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate, o_shippriority
from customer, orders, lineitem
where c_mktsegment = 'BUILDING' and c_custkey = o_custkey and l_orderkey = o_orderkey
  and o_orderdate < date '1995-03-15' and l_shipdate > date '1995-03-15'
group by l_orderkey, o_orderdate, o_shippriority
order by revenue desc, o_orderdate
limit 10
"""

Q5_SQL = """
select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue
from customer, orders, lineitem, supplier, nation, region
where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey
  and c_nationkey = s_nationkey and s_nationkey = n_nationkey and n_regionkey = r_regionkey
  and r_name = 'ASIA' and o_orderdate >= date '1994-01-01'
  and o_orderdate < date '1994-01-01' + interval '1' year
group by n_name
order by revenue desc
"""

Q6_SQL = """
select sum(l_extendedprice * l_discount) as revenue
from lineitem
where l_shipdate >= date '1994-01-01' and l_shipdate < date '1994-01-01' + interval '1' year
  and l_discount between .06 - 0.01 and .06 + 0.01 and l_quantity < 24
"""

Q10_SQL = """
select c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) as revenue, c_acctbal, n_name,
       c_address, c_phone, c_comment
from customer, orders, lineitem, nation
where c_custkey = o_custkey and l_orderkey = o_orderkey and o_orderdate >= date '1993-10-01'
  and o_orderdate < date '1993-10-01' + interval '3' month and l_returnflag = 'R'
  and c_nationkey = n_nationkey
group by c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
order by revenue desc
limit 20
"""


def disc_price():
    return F.col("l_extendedprice") * (1 - F.col("l_discount"))


def q1(spark):
    return (
        spark.table("lineitem")
        .where(F.col("l_shipdate") <= F.lit(datetime.date(1998, 9, 2)))
        .groupBy("l_returnflag", "l_linestatus")
        .agg(
            F.sum("l_quantity").alias("sum_qty"),
            F.sum("l_extendedprice").alias("sum_base_price"),
            F.sum(disc_price()).alias("sum_disc_price"),
            F.sum(disc_price() * (1 + F.col("l_tax"))).alias("sum_charge"),
            F.avg("l_quantity").alias("avg_qty"),
            F.avg("l_extendedprice").alias("avg_price"),
            F.avg("l_discount").alias("avg_disc"),
            F.count("*").alias("count_order"),
        )
        .orderBy("l_returnflag", "l_linestatus")
    )


def q3(spark):
    customer = spark.table("customer").where(F.col("c_mktsegment") == "BUILDING")
    orders = spark.table("orders").where(F.col("o_orderdate") < F.lit(datetime.date(1995, 3, 15)))
    lineitem = spark.table("lineitem").where(F.col("l_shipdate") > F.lit(datetime.date(1995, 3, 15)))
    return (
        customer.join(orders, customer.c_custkey == orders.o_custkey)
        .join(lineitem, lineitem.l_orderkey == orders.o_orderkey)
        .groupBy("l_orderkey", "o_orderdate", "o_shippriority")
        .agg(F.sum(disc_price()).alias("revenue"))
        .select("l_orderkey", "revenue", "o_orderdate", "o_shippriority")
        .orderBy(F.desc("revenue"), "o_orderdate")
        .limit(10)
    )


def q5(spark):
    region = spark.table("region").where(F.col("r_name") == "ASIA")
    orders = spark.table("orders").where(
        (F.col("o_orderdate") >= F.lit(datetime.date(1994, 1, 1))) & (F.col("o_orderdate") < F.lit(datetime.date(1995, 1, 1)))
    )
    customer, lineitem = spark.table("customer"), spark.table("lineitem")
    supplier, nation = spark.table("supplier"), spark.table("nation")
    return (
        region.join(nation, nation.n_regionkey == region.r_regionkey)
        .join(supplier, supplier.s_nationkey == nation.n_nationkey)
        .join(lineitem, lineitem.l_suppkey == supplier.s_suppkey)
        .join(orders, orders.o_orderkey == lineitem.l_orderkey)
        .join(customer, (customer.c_custkey == orders.o_custkey) & (customer.c_nationkey == supplier.s_nationkey))
        .groupBy("n_name")
        .agg(F.sum(disc_price()).alias("revenue"))
        .orderBy(F.col("revenue").desc())
    )


def q6(spark):
    return (
        spark.table("lineitem")
        .where(
            (F.col("l_shipdate") >= F.lit(datetime.date(1994, 1, 1)))
            & (F.col("l_shipdate") < F.lit(datetime.date(1995, 1, 1)))
            & F.col("l_discount").between(Decimal("0.05"), Decimal("0.07"))
            & (F.col("l_quantity") < 24)
        )
        .agg(F.sum(F.col("l_extendedprice") * F.col("l_discount")).alias("revenue"))
    )


def q10(spark):
    orders = spark.table("orders").where(
        (F.col("o_orderdate") >= F.lit(datetime.date(1993, 10, 1))) & (F.col("o_orderdate") < F.lit(datetime.date(1994, 1, 1)))
    )
    lineitem = spark.table("lineitem").where(F.col("l_returnflag") == "R")
    customer, nation = spark.table("customer"), spark.table("nation")
    return (
        customer.join(orders, customer.c_custkey == orders.o_custkey)
        .join(lineitem, lineitem.l_orderkey == orders.o_orderkey)
        .join(nation, customer.c_nationkey == nation.n_nationkey)
        .groupBy("c_custkey", "c_name", "c_acctbal", "c_phone", "n_name", "c_address", "c_comment")
        .agg(F.sum(disc_price()).alias("revenue"))
        .select("c_custkey", "c_name", "revenue", "c_acctbal", "n_name", "c_address", "c_phone", "c_comment")
        .orderBy(F.desc("revenue"))
        .limit(20)
    )


@pytest.mark.parametrize(
    "sql, dataframe, rows",
    [(Q1_SQL, q1, 4), (Q3_SQL, q3, 10), (Q5_SQL, q5, 5), (Q6_SQL, q6, 1), (Q10_SQL, q10, 20)],
    ids=["q1", "q3", "q5", "q6", "q10"],
)
def test_dataframe_matches_sql(tpch, sql, dataframe, rows):
    expected = tpch.sql(sql)
    actual = dataframe(tpch)
    assert actual.schema == expected.schema
    expected_rows = expected.collect()
    assert len(expected_rows) == rows
    assert actual.collect() == expected_rows
