"""Authentication: a second `aether serve --token secret` accepts clients that send the
token (`sc://localhost:PORT/;token=secret`) and refuses wrong or missing tokens with
gRPC UNAUTHENTICATED, as Spark Connect does with a pre-shared token."""

import pytest
from pyspark.errors.exceptions.connect import SparkConnectGrpcException

from helpers import AetherServer

pytestmark = [pytest.mark.aether_only, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def token_server(aether_bin):
    server = AetherServer(aether_bin, "--token", "secret")
    yield server
    server.stop()


def test_right_token_connects(token_server, new_session):
    session = new_session(f"sc://localhost:{token_server.port}/;token=secret")
    assert session.range(3).count() == 3
    assert session.sql("SELECT 40 + 2 AS answer").first().answer == 42


def test_wrong_token_is_refused(token_server, new_session):
    session = new_session(f"sc://localhost:{token_server.port}/;token=wrong")
    with pytest.raises(SparkConnectGrpcException) as error:
        session.range(3).count()
    assert "UNAUTHENTICATED" in str(error.value)


def test_missing_token_is_refused(token_server, new_session):
    session = new_session(f"sc://localhost:{token_server.port}")
    with pytest.raises(SparkConnectGrpcException) as error:
        session.range(3).count()
    assert "UNAUTHENTICATED" in str(error.value)
