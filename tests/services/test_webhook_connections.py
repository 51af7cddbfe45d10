"""Connections the delivery engine keeps alive (`transport.KeptConnections`): attempts to one
endpoint address share a connection the receiver keeps open; an answer that asks to close,
or whose body goes past what is kept of it, is never reused; no cookie is ever sent back;
a single resend opens its own connection and closes it."""

import pytest

from app.models import KeyMode
from app.services.webhooks import transport
from tests.support.receiver import receiving


def _outgoing(url: str) -> transport.Outgoing:
    return transport.Outgoing(url, KeyMode.TEST, True, b"{}", {"X-Acme-Delivery-Id": "d"})


def _sent(app, urls: list[str], kept: transport.KeptConnections | None) -> list:
    with app.app_context():
        return [transport.send(_outgoing(url), kept) for url in urls]


def test_attempts_to_one_endpoint_share_a_kept_connection(app):
    with receiving(keep_alive=True) as receiver:
        with transport.KeptConnections(2) as kept:
            attempts = _sent(app, [receiver.url] * 3, kept)
        assert [attempt.status_code for attempt in attempts] == [200, 200, 200]
        assert len({received.connection for received in receiver.received}) == 1


def test_a_single_attempt_opens_its_own_connection(app):
    with receiving(keep_alive=True) as receiver:
        _sent(app, [receiver.url] * 2, None)
        assert len({received.connection for received in receiver.received}) == 2


@pytest.mark.parametrize(
    "headers",
    [{"Connection": "close"}, {"X-Filler": "x" * 10}],
    ids=["asks-to-close", "keeps-it-open"],
)
def test_an_answer_that_asks_to_close_is_not_reused(app, headers):
    with receiving(keep_alive=True) as receiver:
        receiver.reply(200, headers)
        with transport.KeptConnections(2) as kept:
            _sent(app, [receiver.url] * 2, kept)
        connections = {received.connection for received in receiver.received}
        assert len(connections) == (2 if "Connection" in headers else 1)


def test_an_answer_longer_than_what_is_kept_of_it_closes_its_connection(app, monkeypatch):
    monkeypatch.setattr(transport, "MAX_RESPONSE_BODY", 4)  # the receiver's body is 11 bytes
    with receiving(keep_alive=True) as receiver:
        with transport.KeptConnections(2) as kept:
            attempts = _sent(app, [receiver.url] * 2, kept)
        assert [attempt.body for attempt in attempts] == ['{"ok', '{"ok']
        assert len({received.connection for received in receiver.received}) == 2


def test_a_cookie_set_by_one_answer_is_never_sent_with_the_next(app):
    with receiving(keep_alive=True) as receiver:
        receiver.reply(200, {"Set-Cookie": "session=abc; Path=/"})
        with transport.KeptConnections(2) as kept:
            _sent(app, [receiver.url] * 2, kept)
        assert [received.headers.get("Cookie") for received in receiver.received] == [None, None]
