"""The embedded Redis-compatible server behaves as RQ needs real Redis to behave."""

import pytest
from redis import Redis
from redis.exceptions import ResponseError

from app.embedded_redis import EmbeddedRedis


@pytest.fixture(scope="module")
def embedded():
    server = EmbeddedRedis().start()
    yield Redis.from_url(server.url)
    server.stop()


def test_an_error_reply_keeps_the_connection_open(embedded):
    embedded.set("a-string", "v")
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        embedded.lpush("a-string", "x")
    assert embedded.get("a-string") == b"v"


def test_scripts_load_after_noscript(embedded):
    assert embedded.register_script("return 41 + 1")() == 42


def test_info_and_client_info_parse(embedded):
    assert embedded.info("server")["redis_version"]
    host, port = embedded.client_info()["addr"].rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0
