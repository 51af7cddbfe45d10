"""Texts a published pattern matches, for tests that compare the document with the service."""

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st


def texts_matching(pattern: str, count: int) -> list[str]:
    """`count` texts the pattern matches, by hypothesis, the same ones on every run."""
    texts: list[str] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.from_regex(pattern, fullmatch=True))
    def collect(text: str) -> None:
        texts.append(text)

    collect()
    return texts
