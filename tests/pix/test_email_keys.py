"""Pix e-mail keys are ASCII only, with no IDNA (`xn--`) domain label: a look-alike address
(`example.com` with a Cyrillic U+0430 for its a) is never valid, nor normalised into existence."""

import pytest

from app.pix.keys import PixKeyType, validate

LOOK_ALIKES = [
    "pay@ex\u0430mple.com",  # Cyrillic U+0430
    "p\u0430y@example.com",
    "pay@xn--exmple-4nf.com",  # the Cyrillic look-alike's IDNA form
    "pay@XN--EXMPLE-4NF.COM",
    "pay@pix.xn--exmple-4nf.com.br",
    "pay@exemplo.xn--p1ai",
    "pay@exa\u0301mple.com",  # a combining accent
    "pay@\uff45xample.com",  # fullwidth e, which NFKC would fold to e
]


@pytest.mark.parametrize("key", LOOK_ALIKES)
@pytest.mark.parametrize("key_type", [PixKeyType.EMAIL, None], ids=["given", "detected"])
def test_a_look_alike_address_is_not_a_valid_key(key, key_type):
    check = validate(key, key_type)
    assert (check.valid, check.type, check.normalised) == (False, PixKeyType.EMAIL, None)
    assert "ASCII" in check.errors[0] or "xn--" in check.errors[0]


@pytest.mark.parametrize(
    ("key", "normalised"),
    [
        ("Pay@Example.com", "pay@example.com"),
        ("fulano.xn@exemplo.com.br", "fulano.xn@exemplo.com.br"),
        ("pay@my-xn--shop.com.br", "pay@my-xn--shop.com.br"),
    ],
)
def test_plain_ascii_addresses_stay_valid(key, normalised):
    check = validate(key)
    assert (check.valid, check.type, check.normalised) == (True, PixKeyType.EMAIL, normalised)
