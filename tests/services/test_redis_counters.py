"""`add_if_kept`: a counter that counts only once seeded, on the test Redis."""

from app.services.redis_counters import add_if_kept

KEY = "acme:test:bound"


def test_a_missing_key_is_not_counted_nor_created(redis):
    assert add_if_kept(redis, KEY) is None
    assert add_if_kept(redis, KEY, -3) is None
    assert redis.exists(KEY) == 0


def test_a_kept_key_is_added_to_and_keeps_its_expiry(redis):
    redis.set(KEY, 5, ex=600)
    assert add_if_kept(redis, KEY) == 6
    assert add_if_kept(redis, KEY, -4) == 2
    assert int(redis.get(KEY)) == 2
    assert 0 < redis.ttl(KEY) <= 600
