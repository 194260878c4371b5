"""df.explain(): the plan is printed as text with a physical plan section; on Aether
with a GPU the report says, node by node, what runs on the GPU and why not."""

import os
import re
import shutil
import subprocess

import pytest


def explain_text(df, capsys, *args, **kwargs) -> str:
    df.explain(*args, **kwargs)
    return capsys.readouterr().out


def gpu_present() -> bool:
    if "AETHER_TEST_GPU" in os.environ:
        return os.environ["AETHER_TEST_GPU"] == "1"
    smi = shutil.which("nvidia-smi")
    return bool(smi) and subprocess.run([smi, "-L"], capture_output=True).returncode == 0


def test_explain_prints_physical_plan(spark, capsys):
    df = spark.range(100).selectExpr("id % 3 AS k", "id").groupBy("k").count()
    text = explain_text(df, capsys)
    assert text.startswith("== Physical Plan ==\n")


def test_extended_explain_has_logical_and_physical_plans(people, capsys):
    text = explain_text(people.where("age > 30").select("name"), capsys, True)
    for header in ["== Parsed Logical Plan ==", "== Analyzed Logical Plan ==", "== Optimized Logical Plan ==", "== Physical Plan =="]:
        assert header in text


def test_explain_of_sql_query(spark, capsys):
    spark.range(10).createOrReplaceTempView("explain_ten")
    text = explain_text(spark.sql("SELECT id, id * 2 AS twice FROM explain_ten WHERE id > 5"), capsys)
    assert "== Physical Plan ==" in text


@pytest.mark.aether_only
def test_explain_reports_gpu_placement(spark, capsys):
    if not gpu_present():
        pytest.skip("no GPU here: the placement report only says why nothing moved")
    df = spark.range(1_000_000).selectExpr("id % 7 AS k", "id * 2 AS v").where("v > 10").groupBy("k").sum("v")
    text = explain_text(df, capsys)
    assert "== Physical Plan ==" in text
    placement = re.compile(r"^\s*[*!$]Exec <\w+[^>]*> (will run on GPU|cannot run on GPU because .+)$", re.M)
    assert placement.search(text), text
