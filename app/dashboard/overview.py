"""The page a member lands on after signing in: for the mode shown (`?mode=test|live`),
balances, upcoming releases, today's payments, the daily paid volume of the last 30 days, the
payouts waiting for approval, the webhook endpoints whose deliveries keep failing and the
disputes still waiting for an answer, the most urgent deadline first. Only the API keys card
counts both modes, as the API keys page lists them.

Every other figure is the shown mode's, so nothing from the sandbox appears under the live
banner (nor live money under the test one).

Figures come from the services behind the API and the other pages (`wallets`,
`payment_stats` through `services.overview`), so the overview never disagrees with them.
"""

from flask import g, render_template
from flask.typing import ResponseReturnValue

from app.dashboard import bp
from app.dashboard.charts import VolumeChart
from app.dashboard.params import MODES, mode_arg
from app.dashboard.session import current_membership, member_required
from app.formats.labels import DISPUTE_STATUS_LABELS
from app.models.base import utcnow
from app.services import api_keys, wallets
from app.services import overview as overview_figures
from app.services.disputes import listing as dispute_listing
from app.services.wallets import PRIMARY_CURRENCY
from app.services.webhooks import alerts as webhook_alerts


@bp.get("/")
@member_required
def overview() -> ResponseReturnValue:
    """The mode's money and payments at a glance, then what needs an answer."""
    mode = mode_arg()
    account_id, key_mode, now = g.account_id, MODES[mode], utcnow()
    keys = api_keys.list_keys(account_id)
    return render_template(
        "dashboard/overview.html",
        membership=current_membership(),
        mode=mode,
        balances=wallets.balances(account_id, key_mode),
        upcoming_releases=overview_figures.upcoming_releases(account_id, key_mode),
        today=overview_figures.payments_today(account_id, key_mode, now),
        charts=_charts(overview_figures.daily_volume(account_id, key_mode, now)),
        chart_days=overview_figures.CHART_DAYS,
        pending_payouts=overview_figures.pending_payouts(account_id, key_mode),
        primary_currency=PRIMARY_CURRENCY,
        live_keys=sum(1 for k in keys if k.mode == "live"),
        test_keys=sum(1 for k in keys if k.mode == "test"),
        failing_webhooks=len(webhook_alerts.failing_endpoints(account_id, key_mode)),
        open_disputes=dispute_listing.open_cases_by_deadline(account_id, key_mode),
        dispute_status_labels=DISPUTE_STATUS_LABELS,
    )


def _charts(daily: list[dict]) -> list[VolumeChart]:
    """One chart per currency paid in these days, the primary currency first; none at all
    when nothing was paid (the page says what to do instead)."""
    paid = {code for point in daily for code in point["currencies"]}
    ordered = sorted(paid, key=lambda code: (code != PRIMARY_CURRENCY, code))
    return [VolumeChart.build(code, daily) for code in ordered]
