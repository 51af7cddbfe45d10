"""The daily paid volume chart (inline SVG, drawn by `dashboard/_volume_chart.html`) of the
overview and the payment stats page: its geometry is computed here in whole pixels, so the
template only places what it is given and the figures table below it shows the same days."""

import math
from dataclasses import dataclass
from datetime import date

from app.templating import money


@dataclass(frozen=True)
class Bar:
    """One day of the chart: its paid volume and where its bar stands."""

    day: date
    volume: int
    x: int
    y: int
    width: int
    height: int

    @property
    def label_x(self) -> int:
        return self.x + self.width // 2


@dataclass(frozen=True)
class VolumeChart:
    """The daily paid volume of one currency as SVG geometry, in whole pixels."""

    LEFT, RIGHT, TOP, PLOT_HEIGHT, BOTTOM = 120, 16, 16, 180, 48
    PLOT_WIDTH, MIN_STEP, MAX_BAR_WIDTH, X_LABELS = 640, 4, 40, 8

    currency: str
    bars: tuple[Bar, ...]
    max_volume: int
    step: int

    @classmethod
    def build(cls, currency: str, daily: list[dict]) -> "VolumeChart":
        volumes = [(date.fromisoformat(p["date"]), p["currencies"].get(currency, 0)) for p in daily]
        top = max((volume for _, volume in volumes), default=0)
        step = max(cls.MIN_STEP, cls.PLOT_WIDTH // max(len(volumes), 1))
        width = max(1, min(step * 3 // 4, cls.MAX_BAR_WIDTH))
        bars = []
        for index, (day, volume) in enumerate(volumes):
            height = volume * cls.PLOT_HEIGHT // top if top else 0
            height = max(height, 1) if volume else 0  # a day with money never looks empty
            x = cls.LEFT + index * step + (step - width) // 2
            bars.append(Bar(day, volume, x, cls.TOP + cls.PLOT_HEIGHT - height, width, height))
        return cls(currency=currency, bars=tuple(bars), max_volume=top, step=step)

    @property
    def width(self) -> int:
        return self.LEFT + self.step * len(self.bars) + self.RIGHT

    @property
    def height(self) -> int:
        return self.TOP + self.PLOT_HEIGHT + self.BOTTOM

    @property
    def baseline(self) -> int:
        return self.TOP + self.PLOT_HEIGHT

    @property
    def plot_right(self) -> int:
        return self.width - self.RIGHT

    @property
    def y_ticks(self) -> list[tuple[int, str]]:
        """Gridlines at zero, half and the highest day, labelled in the currency."""
        if not self.max_volume:
            return [(self.baseline, money(0, self.currency))]
        values = (0, self.max_volume // 2, self.max_volume)
        plot, top = self.PLOT_HEIGHT, self.max_volume
        return [(self.baseline - v * plot // top, money(v, self.currency)) for v in values]

    @property
    def x_labels(self) -> list[Bar]:
        """At most `X_LABELS` days labelled, evenly spaced, the most recent always."""
        every = max(1, math.ceil(len(self.bars) / self.X_LABELS))
        return [bar for i, bar in enumerate(reversed(self.bars)) if i % every == 0]

    @property
    def total(self) -> int:
        return sum(bar.volume for bar in self.bars)

    @property
    def best_day(self) -> Bar | None:
        return max(self.bars, key=lambda bar: bar.volume) if self.max_volume else None
