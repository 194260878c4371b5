"""Two sessions on one server are isolated: each has its own temporary views and
configuration, also while both are used from two threads at the same time."""

import threading

import pytest


def test_views_and_conf_are_per_session(new_session):
    first, second = new_session(), new_session()
    first.range(3).createOrReplaceTempView("sess_only_first")
    first.conf.set("spark.sql.session.timeZone", "Asia/Tokyo")

    assert first.catalog.tableExists("sess_only_first")
    assert not second.catalog.tableExists("sess_only_first")
    assert second.conf.get("spark.sql.session.timeZone") != "Asia/Tokyo"


def test_same_view_name_means_different_data(new_session):
    first, second = new_session(), new_session()
    first.range(10).createOrReplaceTempView("sess_shared_name")
    second.range(1000).createOrReplaceTempView("sess_shared_name")
    assert first.sql("SELECT sum(id) FROM sess_shared_name").first()[0] == 45
    assert second.sql("SELECT sum(id) FROM sess_shared_name").first()[0] == 499500


@pytest.mark.timeout(180)
def test_concurrent_use_from_two_threads(new_session):
    sessions = {"A": new_session(), "B": new_session()}
    expected = {"A": (45, "Europe/Paris"), "B": (499500, "America/Lima")}
    sessions["A"].range(10).createOrReplaceTempView("sess_concurrent")
    sessions["B"].range(1000).createOrReplaceTempView("sess_concurrent")
    sessions["A"].conf.set("spark.sql.session.timeZone", "Europe/Paris")
    sessions["B"].conf.set("spark.sql.session.timeZone", "America/Lima")

    seen = {"A": [], "B": []}
    errors = []
    start = threading.Barrier(2)

    def work(name):
        session = sessions[name]
        try:
            start.wait()
            for _ in range(15):
                total = session.sql("SELECT sum(id) AS s FROM sess_concurrent").first().s
                seen[name].append((total, session.conf.get("spark.sql.session.timeZone")))
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=work, args=(name,)) for name in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=150)

    assert not errors, errors
    for name in sessions:
        assert seen[name] == [expected[name]] * 15


def test_stopping_one_session_leaves_the_other(new_session):
    first, second = new_session(), new_session()
    second.range(4).createOrReplaceTempView("sess_survivor")
    first.stop()
    assert second.sql("SELECT count(*) FROM sess_survivor").first()[0] == 4
