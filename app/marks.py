"""Marks English text for the translation catalogs without translating it where it is written.

Services and wire formats speak English (the JSON API answers in it); a page translates the
same text where it shows it (`templating.refusal_text`, the label tables). `make translations`
extracts every `translatable(...)` argument, so marking is all a message needs to reach the
catalogs. Placeholders are `%(name)s`, filled from the values kept beside the text
(`errors.ApiError.values`), so each language can put them where its grammar wants them.
"""


def translatable(text: str) -> str:
    """`text`, unchanged: marked for extraction only."""
    return text


class Sentences(tuple):
    """Several marked messages said together (a Pix key's problems, say), as one value of an
    `errors.ApiError`: the API reads them joined by "; ", a page translates each."""

    def __str__(self) -> str:
        return "; ".join(self)
