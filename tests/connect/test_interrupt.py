"""spark.interruptAll() stops a running query: the query raises promptly with Spark's
OPERATION_CANCELED condition and the session keeps working."""

import threading
import time

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import functions as F


@pytest.mark.timeout(120)
def test_interrupt_all_cancels_a_running_query(new_session):
    session = new_session()
    left = session.range(1_000_000)
    right = session.range(1_000_000).withColumnRenamed("id", "id2")
    slow = left.crossJoin(right).where(F.col("id") * 3 + F.col("id2") == 7)

    outcome = {}

    def run():
        try:
            outcome["count"] = slow.count()
        except Exception as error:
            outcome["error"] = error
        outcome["finished"] = time.monotonic()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    time.sleep(3)
    assert worker.is_alive(), f"the slow query finished early: {outcome}"

    interrupted_at = time.monotonic()
    interrupted = session.interruptAll()
    worker.join(timeout=60)

    assert not worker.is_alive(), "the query was still running 60 s after interruptAll()"
    assert len(interrupted) >= 1
    error = outcome.get("error")
    assert isinstance(error, PySparkException), outcome
    assert error.getCondition() == "OPERATION_CANCELED"
    seconds = outcome["finished"] - interrupted_at
    assert seconds < 10, f"the query raised {seconds:.1f} s after interruptAll()"
    assert session.range(5).count() == 5


def test_interrupt_with_nothing_running(new_session):
    session = new_session()
    assert session.interruptAll() == []
    assert session.range(2).count() == 2
