"""Read /metrics the way Prometheus does."""

from prometheus_client.parser import text_string_to_metric_families


def scrape(client, headers: dict | None = None) -> dict[tuple[str, frozenset], float]:
    """Every sample of a 200 /metrics answer, by (name, labels)."""
    response = client.get("/metrics", headers=headers or {})
    assert response.status_code == 200, response.get_data(as_text=True)
    return samples_of(response.get_data(as_text=True))


def samples_of(exposition: str) -> dict[tuple[str, frozenset], float]:
    """Every sample of a text exposition, by (name, labels)."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
    }


def sample(samples: dict, name: str, **labels) -> float:
    """One sample's value; 0 when the series is absent (a counter not yet incremented)."""
    return samples.get((name, frozenset(labels.items())), 0.0)
