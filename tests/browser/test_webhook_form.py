"""The webhooks page's form as a screen reader gets it, in a real browser (issue 21): each of the
20 event checkboxes is named by its event, described by the catalog's description, and sits in
a group named by its legend; a second endpoint with a URL the account already has is refused
with the message on the URL field, naming the endpoint that has it."""

import re

import sqlalchemy as sa

from app.dashboard.forms.webhooks import EVENT_GROUPS
from app.extensions import db
from app.models import Role, WebhookEndpoint
from tests.browser.conftest import expect, sign_in
from tests.support import factories

URL = "http://127.0.0.1:9/hooks"


def test_every_event_checkbox_reads_its_name_and_description_in_its_group(app, page):
    sign_in(page, factories.make_member(app, role=Role.OWNER))
    page.goto("/dashboard/webhooks")
    events = page.get_by_role("region", name="Add endpoint").get_by_role("group", name="Events")
    expect(events.get_by_role("checkbox")).to_have_count(20)
    for group, entries in EVENT_GROUPS:
        boxes = events.get_by_role("group", name=str(group), exact=True)
        expect(boxes.get_by_role("checkbox")).to_have_count(len(entries))
        for entry in entries:
            box = boxes.get_by_role("checkbox", name=entry.event, exact=True)
            expect(box).to_have_accessible_description(entry.description)


def test_a_url_the_account_has_is_refused_on_the_url_field(app, page):
    sign_in(page, factories.make_member(app, role=Role.OWNER))
    page.goto("/dashboard/webhooks")
    form = page.get_by_role("region", name="Add endpoint")
    for _ in range(2):  # the page that shows the new secret keeps the form
        form.get_by_label("Endpoint URL").fill(URL)
        form.get_by_label("charge.paid", exact=True).check()
        form.get_by_role("button", name="Add test endpoint").click()
    (endpoint_id,) = _endpoint_ids(app)
    field = form.get_by_label("Endpoint URL")
    expect(field).to_have_value(URL)
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(field).to_have_accessible_description(
        re.compile(re.escape(f"Webhook endpoint {endpoint_id} already has this URL;"))
    )
    expect(page.get_by_role("alert")).to_contain_text("The endpoint was not added.")
    assert _endpoint_ids(app) == [endpoint_id]


def _endpoint_ids(app) -> list[str]:
    with app.app_context():
        return list(db.session.scalars(sa.select(WebhookEndpoint.id)))
