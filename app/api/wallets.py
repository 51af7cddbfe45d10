"""Wallets (apikey): balances per currency of the key's mode, read-only."""

from flask import g

from app.api.schemas.wallets import BalanceQuerySchema, BalanceSchema, WalletSchema
from app.api.security import ApiKeyView
from app.extensions import Blueprint
from app.services import wallets

blp = Blueprint("wallets", __name__, url_prefix="/v1/wallets", description="Wallets (apikey)")


def _flat(balance: wallets.Balance) -> dict:
    return {
        "available": balance.available,
        "pending": balance.pending,
        "currency": balance.currency,
        "next_release_at": balance.next_release_at,
        "next_release_amount": balance.next_release_amount,
    }


@blp.route("/balance")
class WalletBalance(ApiKeyView):
    @blp.arguments(BalanceQuerySchema, location="query", unknown="raise")
    @blp.response(200, BalanceSchema)
    @blp.errors(400, 401)
    def get(self, query):
        """Balances: the full shape, or the flat shape of one currency with `currency=`."""
        mode = g.api_key.mode
        if "currency" in query:
            return _flat(wallets.balance(g.account_id, mode, query["currency"].upper()))
        every = wallets.balances(g.account_id, mode)
        primary = every[0]
        return {
            **_flat(primary),
            "total": primary.total,
            "retained": primary.retained,
            "balances": every,
            "primary": primary,
        }


@blp.route("")
class Wallets(ApiKeyView):
    @blp.response(200, WalletSchema(many=True))
    @blp.errors(401)
    def get(self):
        """Every wallet of the account (in the key's mode), equal to the balance endpoint."""
        return wallets.balances(g.account_id, g.api_key.mode)
