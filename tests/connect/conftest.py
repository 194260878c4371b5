"""Fixtures for the Spark Connect end-to-end tests.

The suite talks to a running Spark Connect server at AETHER_CONNECT_URL (default
sc://localhost:15002), normally `aether serve --tpch 1` started by run.sh. The same tests
run against a real Spark Connect server with AETHER_TEST_AGAINST_SPARK=1; tests marked
`aether_only` are then skipped, and the TPC-H tables are registered from the Parquet
directory named by AETHER_TEST_TPCH_PARQUET (written by `aether datagen tpch`).
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from helpers import TPCH_TABLES
from known_gaps import KNOWN_GAPS

REPO_ROOT = Path(__file__).resolve().parents[2]
CONNECT_URL = os.environ.get("AETHER_CONNECT_URL", "sc://localhost:15002")
AGAINST_SPARK = os.environ.get("AETHER_TEST_AGAINST_SPARK") == "1"


def pytest_collection_modifyitems(config, items):
    if not AGAINST_SPARK:
        for item in items:
            gap = KNOWN_GAPS.get(item.nodeid.split("tests/connect/")[-1])
            if gap is not None:
                item.add_marker(pytest.mark.xfail(reason=gap, strict=True))
        return
    skip = pytest.mark.skip(reason="Aether-only behaviour (AETHER_TEST_AGAINST_SPARK=1)")
    for item in items:
        if "aether_only" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def connect_url() -> str:
    return CONNECT_URL


@pytest.fixture(scope="session")
def against_spark() -> bool:
    return AGAINST_SPARK


@pytest.fixture(scope="session")
def spark(connect_url):
    session = SparkSession.builder.remote(connect_url).getOrCreate()
    yield session
    session.stop()


@pytest.fixture
def new_session(connect_url):
    """Creates extra, independent sessions on the server; all are stopped afterwards."""
    sessions = []

    def create(url: str = connect_url):
        session = SparkSession.builder.remote(url).create()
        sessions.append(session)
        return session

    yield create
    for session in sessions:
        try:
            session.stop()
        except Exception:
            pass


@pytest.fixture
def out_path(tmp_path) -> str:
    """A path that does not exist yet, inside a fresh temporary directory, for writes."""
    return str(tmp_path / "out")


@pytest.fixture(scope="session")
def people(spark):
    """Four people, with NULLs in age, city and salary."""
    return spark.createDataFrame(
        [
            (1, "Alice", 34, "NY", 5000.5),
            (2, "Bob", 45, "SF", None),
            (3, "Carol", None, "NY", 7000.0),
            (4, "Dave", 29, None, 4200.25),
        ],
        "id INT, name STRING, age INT, city STRING, salary DOUBLE",
    )


@pytest.fixture(scope="session")
def aether_bin() -> str:
    binary = Path(os.environ.get("AETHER_BIN", REPO_ROOT / "target" / "release" / "aether"))
    if not binary.is_file():
        pytest.skip(f"no aether binary at {binary} (set AETHER_BIN)")
    return str(binary)


@pytest.fixture(scope="session")
def tpch(spark):
    """Makes the eight TPC-H SF1 tables visible to `spark`.

    Aether registers them in every session (`aether serve --tpch 1`); against real Spark
    they are temporary views over AETHER_TEST_TPCH_PARQUET.
    """
    parquet = os.environ.get("AETHER_TEST_TPCH_PARQUET")
    if parquet:
        for table in TPCH_TABLES:
            spark.read.parquet(os.path.join(parquet, table)).createOrReplaceTempView(table)
    elif AGAINST_SPARK:
        pytest.skip("set AETHER_TEST_TPCH_PARQUET to run the TPC-H tests against Spark")
    return spark


@pytest.fixture(scope="session")
def tpch_files(aether_bin, tmp_path_factory):
    """A directory holding the TPC-H SF1 tables as Parquet and the 22 queries as
    queries/q1.sql..q22.sql, from `aether datagen tpch --sf 1 --queries`
    (or AETHER_TEST_TPCH_PARQUET when it already holds both)."""
    given = os.environ.get("AETHER_TEST_TPCH_PARQUET")
    if given and (Path(given) / "queries" / "q22.sql").is_file():
        yield Path(given)
        return
    out = tmp_path_factory.mktemp("tpch-sf1")
    result = subprocess.run(
        [aether_bin, "datagen", "tpch", "--sf", "1", "--out", str(out), "--queries"],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0 or not (out / "queries" / "q22.sql").is_file():
        pytest.fail(f"`aether datagen tpch --sf 1 --queries` failed:\n{result.stderr}")
    yield out
    shutil.rmtree(out, ignore_errors=True)
