"""Payment instruments for methods other than Pix: pure builders and validators with their
check digits.
"""


def is_digits(text: object, length: int) -> bool:
    """Whether `text` is exactly `length` ASCII digits (str.isdigit alone admits '²' and '٣')."""
    return isinstance(text, str) and len(text) == length and text.isascii() and text.isdigit()
