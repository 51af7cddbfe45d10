"""Signed storage addresses: valid only for the request they were issued for, until expiry."""

import pytest

from app.storage.signing import Grant, SignatureRefused, sign, verify

SECRET = b"s" * 32
NOW = 1_800_000_000
UPLOAD = Grant(
    method="PUT",
    key="evidence/med_1/receipt.pdf",
    expires_at=NOW + 900,
    content_type="application/pdf",
    content_length=12_345,
)


def test_a_signed_address_verifies_for_its_own_request():
    params = UPLOAD.params(SECRET)
    assert set(params) == {"expires", "type", "length", "signature"}
    assert verify(SECRET, "PUT", UPLOAD.key, params, NOW) == UPLOAD


@pytest.mark.parametrize(
    ("method", "key", "change"),
    [
        ("GET", UPLOAD.key, {}),
        ("PUT", "evidence/med_2/receipt.pdf", {}),
        ("PUT", UPLOAD.key, {"type": "image/png"}),
        ("PUT", UPLOAD.key, {"length": "12346"}),
        ("PUT", UPLOAD.key, {"expires": str(NOW + 9_000)}),
        ("PUT", UPLOAD.key, {"signature": "0" * 64}),
    ],
    ids=["method", "key", "type", "length", "expiry", "signature"],
)
def test_any_change_to_the_request_or_the_address_is_refused(method, key, change):
    params = UPLOAD.params(SECRET) | change
    with pytest.raises(SignatureRefused, match="signature"):
        verify(SECRET, method, key, params, NOW)


def test_another_secret_never_verifies():
    with pytest.raises(SignatureRefused):
        verify(b"t" * 32, "PUT", UPLOAD.key, UPLOAD.params(SECRET), NOW)


def test_an_expired_address_is_refused_even_with_a_good_signature():
    params = UPLOAD.params(SECRET)
    assert verify(SECRET, "PUT", UPLOAD.key, params, NOW + 899) == UPLOAD
    with pytest.raises(SignatureRefused, match="expired"):
        verify(SECRET, "PUT", UPLOAD.key, params, NOW + 900)


@pytest.mark.parametrize(
    "params",
    [{}, {"expires": "soon", "signature": "x"}, {"expires": str(NOW + 1)}],
    ids=["empty", "bad-expiry", "no-signature"],
)
def test_an_incomplete_address_is_refused(params):
    with pytest.raises(SignatureRefused, match="incomplete"):
        verify(SECRET, "GET", UPLOAD.key, params, NOW)


def test_a_view_address_binds_no_type_or_length():
    view = Grant(method="GET", key=UPLOAD.key, expires_at=NOW + 300)
    params = view.params(SECRET)
    assert set(params) == {"expires", "signature"}
    assert verify(SECRET, "GET", UPLOAD.key, params, NOW) == view
    assert sign(SECRET, view) != sign(SECRET, UPLOAD)


def test_no_field_can_spill_into_the_next():
    spilled = Grant(method="PUT", key=f"{UPLOAD.key}\napplication/pdf", expires_at=NOW + 900)
    honest = Grant(
        method="PUT", key=UPLOAD.key, content_type="application/pdf", expires_at=NOW + 900
    )
    assert sign(SECRET, spilled) != sign(SECRET, honest)
