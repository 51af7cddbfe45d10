"""The app's Redis client parses answers with hiredis (issue 22): the pure-Python parser was a
third of a rate-limit check's CPU. redis-py falls back to it silently when hiredis is
missing or too old for it, so the pinned pair is checked here."""

from redis.utils import HIREDIS_AVAILABLE

from app.extensions import get_redis


def test_the_client_parses_answers_with_hiredis(app):
    assert HIREDIS_AVAILABLE
    with app.app_context():
        pool = get_redis().connection_pool
        connection = pool.get_connection()
        try:
            assert type(connection._parser).__name__ == "_HiredisParser"
            assert get_redis().ping()
        finally:
            pool.release(connection)
