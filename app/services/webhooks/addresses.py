"""Where an endpoint may point (SSRF): the URL rules at registration and the address check
behind them, which every attempt repeats on the addresses it is about to connect to.

Live endpoints must be `https` and resolve to public unicast addresses only; test endpoints
too, unless WEBHOOK_ALLOW_PRIVATE_TEST_URLS is on (development and testing, so a merchant's
laptop can receive).
"""

import ipaddress
import socket
import unicodedata
from urllib.parse import unquote, urlsplit

from flask import current_app

from app.errors import InvalidRequest
from app.marks import translatable
from app.models import KeyMode

# In UTF-8 bytes (the API takes ASCII only, the dashboard more): short enough for the unique
# index on (account, mode, url), as PostgreSQL indexes at most about 2.7 kB a row.
MAX_URL_LENGTH = 2048
# IPv6 ranges that embed an IPv4 address (NAT64, 6to4, IPv4-compatible): never a destination.
EMBEDDED_IPV4 = tuple(
    ipaddress.ip_network(n) for n in ("64:ff9b::/96", "64:ff9b:1::/48", "2002::/16", "::/96")
)
# IPv6 global unicast; IANA has allocated no public address outside it.
IPV6_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")
NOT_A_WEB_ADDRESS = translatable("url must be an http(s) address with a host.")
UNRESOLVED = translatable("The host %(host)s cannot be resolved.")


class DestinationRefused(Exception):
    """The endpoint's host may not be called; the message says why (English, marked, with
    its values kept apart as `errors.ApiError` keeps them)."""

    def __init__(self, template: str, **values: str):
        super().__init__(template % values)
        self.template, self.values = template, values


def check_url(url: str, mode: KeyMode) -> str:
    """Registration rules: http(s) with a host and no credentials; no blank or control
    character anywhere, nor percent-encoded in the host; live mode only https; the host must
    pass `destination_problem`.

    Blanks are refused, not trimmed: `urlsplit` silently drops tabs and line breaks, so the
    host checked here would not be the URL stored and sent."""
    if _has_blank_or_control(url):
        raise InvalidRequest(
            translatable(
                "url may not contain spaces, tabs, line breaks or other control characters."
            ),
            param="url",
        )
    try:
        parts = urlsplit(url)
    except ValueError as error:  # a bracketed host that is no IPv6 address, such as [zz]
        raise InvalidRequest(NOT_A_WEB_ADDRESS, param="url") from error
    if _has_blank_or_control(unquote(parts.netloc)):
        raise InvalidRequest(
            translatable(
                "url's host may not encode spaces, tabs, line breaks or other control characters."
            ),
            param="url",
        )
    too_long = len(url.encode(errors="surrogatepass")) > MAX_URL_LENGTH
    if too_long or parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidRequest(NOT_A_WEB_ADDRESS, param="url")
    if parts.username or parts.password:
        raise InvalidRequest(translatable("url must not carry credentials."), param="url")
    try:
        port = parts.port  # ValueError for a port out of range or not a number
    except ValueError:
        port = 0
    if port == 0:
        raise InvalidRequest(translatable("url has an invalid port."), param="url")
    if mode is KeyMode.LIVE and parts.scheme != "https":
        raise InvalidRequest(translatable("Live endpoints must use https."), param="url")
    problem = destination_problem(parts.hostname, mode)
    if problem:
        raise InvalidRequest(problem.template, values=problem.values, param="url")
    return url


def _has_blank_or_control(text: str) -> bool:
    return any(c.isspace() or unicodedata.category(c) in ("Cc", "Cf") for c in text)


def destination_problem(host: str, mode: KeyMode) -> DestinationRefused | None:
    """Why an endpoint's host may not be registered, or None (see `checked_addresses`).
    Test endpoints are not resolved while WEBHOOK_ALLOW_PRIVATE_TEST_URLS is on."""
    if _private_allowed(mode):
        return None
    try:
        checked_addresses(host, mode)
    except DestinationRefused as refusal:
        return refusal
    return None


def checked_addresses(host: str, mode: KeyMode) -> list[str]:
    """The host's addresses, resolved now, in the resolver's order; DestinationRefused when
    it does not resolve or any address is not public. Live endpoints must resolve to public
    addresses only; test endpoints too, unless WEBHOOK_ALLOW_PRIVATE_TEST_URLS (on in
    development and testing, so a merchant's laptop can receive)."""
    try:
        addresses = resolve(host)
    except (socket.gaierror, UnicodeError):
        raise DestinationRefused(UNRESOLVED, host=host) from None
    if not addresses:
        raise DestinationRefused(UNRESOLVED, host=host)
    if _private_allowed(mode):
        return addresses
    for address in addresses:
        refusal = _not_public_unicast(ipaddress.ip_address(address.split("%")[0]))
        if refusal:
            raise DestinationRefused(refusal, host=host, address=address)
    return addresses


def _not_public_unicast(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why `ip` may not be called when it is no public unicast address, else None.
    `is_global` refuses private, loopback, link-local, unspecified, broadcast and 240.0.0.0/4,
    but lets multicast (224.0.0.0/4, ff00::/8) and IPv6 outside global unicast through."""
    embedded = ip.version == 6 and any(ip in network for network in EMBEDDED_IPV4)
    if embedded or not ip.is_global or (ip.version == 6 and ip.ipv4_mapped):
        return translatable("The host %(host)s resolves to a private address (%(address)s).")
    if ip.is_multicast:
        return translatable("The host %(host)s resolves to a multicast address (%(address)s).")
    if ip.version == 6 and ip not in IPV6_GLOBAL_UNICAST:
        return translatable("The host %(host)s resolves to a reserved address (%(address)s).")
    return None


def resolve(host: str) -> list[str]:
    """The host's TCP addresses, without repeats, in the resolver's order."""
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def _private_allowed(mode: KeyMode) -> bool:
    return mode is KeyMode.TEST and current_app.config["WEBHOOK_ALLOW_PRIVATE_TEST_URLS"]
