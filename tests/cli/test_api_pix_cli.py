"""`flask api-pix register-webhook` against the fake PSP: the URL registered, read back, and
the secret never printed."""

import pytest

from tests.support.fake_api_pix import RECEIVER_KEY, start_fake_api_pix

SECRET = "s3cr3t-path-token-0123456789abcdef"
PUBLIC_BASE_URL = "https://pay.acme.example.com"


@pytest.fixture
def psp(app, monkeypatch):
    """The live provider pointed at a fake PSP, with our public address and webhook secret."""
    fake = start_fake_api_pix()
    for name, value in fake.config().items():
        monkeypatch.setitem(app.config, name, value)
    monkeypatch.setitem(app.config, "PUBLIC_BASE_URL", PUBLIC_BASE_URL)
    monkeypatch.setitem(app.config, "API_PIX_WEBHOOK_SECRET", SECRET)
    yield fake
    fake.stop()


def register(app):
    return app.test_cli_runner().invoke(args=["api-pix", "register-webhook"])


def test_register_webhook_registers_our_url_and_prints_it_masked(app, psp):
    result = register(app)

    assert result.exit_code == 0, result.output
    assert psp.webhooks[RECEIVER_KEY]["webhookUrl"] == (
        f"{PUBLIC_BASE_URL}/v1/api-pix/webhook/{SECRET}"
    )
    (put,) = psp.calls("PUT", "/webhook/")
    assert put.body == {"webhookUrl": f"{PUBLIC_BASE_URL}/v1/api-pix/webhook/{SECRET}"}
    assert len(psp.calls("GET", "/webhook/")) == 1  # read back
    assert f"{PUBLIC_BASE_URL}/v1/api-pix/webhook/***" in result.output
    assert RECEIVER_KEY in result.output
    assert SECRET not in result.output


def test_register_webhook_escapes_a_key_with_reserved_characters(app, psp, monkeypatch):
    key = "+5511912345678"
    monkeypatch.setattr("tests.support.fake_api_pix.RECEIVER_KEY", key)
    monkeypatch.setitem(app.config, "API_PIX_RECEIVER_PIX_KEY", key)

    result = register(app)

    assert result.exit_code == 0, result.output
    assert psp.webhooks[key]["webhookUrl"] == f"{PUBLIC_BASE_URL}/v1/api-pix/webhook/{SECRET}"
    assert f"webhook for {key}:" in result.output


@pytest.mark.parametrize("unset", ["API_PIX_BASE_URL", "API_PIX_WEBHOOK_SECRET"])
def test_register_webhook_refuses_without_the_settings(app, psp, monkeypatch, unset):
    monkeypatch.setitem(app.config, unset, "")

    result = register(app)

    assert result.exit_code != 0
    assert f"set {unset} first" in result.output
    assert "Traceback" not in result.output
    assert psp.calls("PUT", "/webhook/") == []


def test_a_refusal_by_the_psp_is_shown_without_the_secret(app, psp):
    psp.fail_next(503)

    result = register(app)

    assert result.exit_code != 0
    assert "Not registered" in result.output and "Serviço indisponível" in result.output
    assert SECRET not in result.output
    assert RECEIVER_KEY not in psp.webhooks


def test_a_url_read_back_that_differs_is_an_error(app, psp):
    old = f"https://old.acme.example.com/v1/api-pix/webhook/{SECRET}"
    psp.webhooks[RECEIVER_KEY] = {"webhookUrl": old, "chave": RECEIVER_KEY}
    psp._put_webhook = lambda body, request, chave: (200, {})  # a PSP that kept the old URL

    result = register(app)

    assert result.exit_code != 0
    assert "https://old.acme.example.com/v1/api-pix/webhook/***" in result.output
    assert SECRET not in result.output
