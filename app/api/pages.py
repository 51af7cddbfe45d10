"""The two list envelopes of the API, built in one place so every list route of a kind
answers the same keys: by cursor (charges, dispute cases) or by page number (payments,
payouts)."""


def cursor_page(page, data: list) -> dict:
    """A page of a cursor listing (`has_more`, `next_cursor`), `data` being its items on the
    wire."""
    return {
        "object": "list",
        "data": data,
        "has_more": page.has_more,
        "next_cursor": page.next_cursor,
    }


def numbered_page(rows: list, total: int, query: dict) -> dict:
    """The page of `rows` that `query` asked for (`page`, `limit`), and how many match in all."""
    return {"data": rows, "total": total, "page": query["page"], "limit": query["limit"]}
