"""Extension objects shared by the whole app, bound to it in `create_app`."""

import select
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import marshmallow as ma
from flask import current_app, has_request_context
from flask_login import LoginManager
from flask_migrate import Migrate
from flask_smorest import Api
from flask_smorest import Blueprint as SmorestBlueprint
from flask_sqlalchemy import SQLAlchemy
from flask_wtf import CSRFProtect
from psycopg import Connection as PostgresConnection
from psycopg import OperationalError as PostgresOperationalError
from redis import Redis
from redis.connection import AbstractConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from rq import Queue
from sqlalchemy import MetaData, Table, event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.orm import DeclarativeBase, Session
from sqlalchemy.pool import Pool
from webargs.flaskparser import FlaskParser

from app import errors

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


ERROR_DESCRIPTIONS = {
    400: "invalid_request_error: the request is invalid (see error.details).",
    401: "authentication_error/unauthorized: missing or invalid credentials.",
    403: "permission_error: the caller may not do this.",
    404: "not_found_error/not_found: no such resource in the caller's account.",
    409: "conflict_error: idempotency conflict or a state that forbids the action.",
    422: "invalid_request_error/unprocessable_entity: a business rule refuses the request.",
    429: "rate_limit_error/rate_limited: too many sign-in attempts; retry after Retry-After.",
    503: "api_error/service_unavailable: a dependency is down; retry later.",
}


class ApiArgumentsParser(FlaskParser):
    """Validation failures become 400 `invalid_request` with one `details` entry per field."""

    DEFAULT_VALIDATION_STATUS = 400

    def handle_error(self, error, req, schema, *, error_status_code, error_headers):
        details = [
            {"param": param, "message": message}
            for param, message in _flatten_messages(error.normalized_messages())
        ]
        params = {d["param"] for d in details}
        single = details[0]["param"] if len(params) == 1 else None
        raise errors.InvalidRequest(
            "The request has invalid fields: " + ", ".join(sorted(params)) + ".",
            code=_field_error_code(schema, single),
            param=single,
            details=details,
        )

    def _handle_invalid_json_error(self, error, req, *args, **kwargs):
        raise errors.InvalidRequest("The request body is not valid JSON.")

    def _get_schema(self, argmap, req):
        """A route's schema class made into a schema once, not for every request (webargs
        builds one per parse, a deep copy of its fields: 4 % of a charge's CPU). Loading
        keeps no state on the schema, so the requests share it."""
        if isinstance(argmap, type) and issubclass(argmap, ma.Schema):
            return _schema_of(argmap)
        return super()._get_schema(argmap, req)


@cache
def _schema_of(schema_class: type[ma.Schema]) -> ma.Schema:
    return schema_class()


def _field_error_code(schema, param: str | None) -> str | None:
    """A field may name a more specific code than `invalid_request` (amount: `invalid_amount`)."""
    field = schema.fields.get(param) if param else None
    return field.metadata.get("error_code") if field is not None else None


def _flatten_messages(messages, prefix=""):
    """Yield (dotted.param, message) from marshmallow's nested message dicts."""
    for key, value in messages.items():
        location_level = prefix == "" and key in {"json", "query", "headers", "form", "view_args"}
        if location_level:
            path = prefix
        elif key == "_schema":  # marshmallow's name for "the body as a whole"
            path = prefix or "body"
        else:
            path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict):
            yield from _flatten_messages(value, path if not location_level else "")
        else:
            for message in value if isinstance(value, list) else [value]:
                if isinstance(message, dict):
                    yield from _flatten_messages(message, path)
                else:
                    yield path or "body", str(message)


class Blueprint(SmorestBlueprint):
    """flask-smorest Blueprint whose argument errors speak the contract's envelope."""

    ARGUMENTS_PARSER = ApiArgumentsParser()

    def errors(self, *statuses: int):
        """Document the error answers a route can give, each in the error envelope."""

        def decorator(view):
            for status in statuses:
                view = self.alt_response(
                    status, schema=errors.ErrorSchema, description=ERROR_DESCRIPTIONS[status]
                )(view)
            return view

        return decorator


class AcmeApi(Api):
    """smorest's Api, but HTTP errors go through our envelope (JSON on /v1, HTML elsewhere)."""

    ERROR_SCHEMA = errors.ErrorSchema

    def handle_http_exception(self, error):
        return errors.handle_http_exception(error)


db = SQLAlchemy(model_class=Base, session_options={"expire_on_commit": False})


@contextmanager
def outside_transaction() -> Iterator[None]:
    """The block's statements each committed as they run (autocommit), with no BEGIN and
    COMMIT round trips around them: for a lone statement through the session that needs no
    transaction, such as the read of a charge the sandbox then acts on (issue 22; the hottest
    such statements skip the session: `models.pooled`). A transaction the session already has
    open is used as it is, so nothing of a caller's is ever committed early. What the block
    loads stays loaded (the session does not expire on commit); the next statement after it
    begins a transaction as usual."""
    if session_in_transaction():
        yield
        return
    db.session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})
    try:
        yield
    except BaseException:
        db.session.rollback()
        raise
    db.session.commit()  # nothing to commit on the server: the connection goes back to the pool


def existing_session() -> Session | None:
    """The request's (or job's) session if something made it, without making one: a read by
    id needs none, and making one only to close it at teardown was about 3 % of a charge
    read's CPU (issue 22)."""
    return db.session() if db.session.registry.has() else None


def session_in_transaction() -> bool:
    """Has the request's (or job's) session a transaction open? (`existing_session`)"""
    session = existing_session()
    return session is not None and session.in_transaction()


def insert_for(
    target: type | Table, dialect: str | None = None
) -> postgresql.Insert | sqlite.Insert:
    """An INSERT into a model's table (or a table) that may say ON CONFLICT, in `dialect` (by
    name) or else the app database's (PostgreSQL and SQLite spell the clause alike)."""
    name = dialect or db.engine.dialect.name
    return (postgresql if name == "postgresql" else sqlite).insert(target)


migrate = Migrate()
login_manager = LoginManager()
csrf = CSRFProtect()
api = AcmeApi()

# Queues by domain, each worked by its own processes (`python worker.py ROLE`), so money never
# waits behind a slow merchant's webhook endpoint: `money` (payment finalisation, refunds,
# payouts, settlement releases, charge expiry, Pix reconciliation: someone waits on them),
# `webhooks` (the event relay, deliveries and their sweep), `default` (dispute notices,
# failing-endpoint alerts, housekeeping; worked after `money`).
MONEY_QUEUE = "money"
WEBHOOK_QUEUE = "webhooks"
DEFAULT_QUEUE = "default"
QUEUE_NAMES = (MONEY_QUEUE, WEBHOOK_QUEUE, DEFAULT_QUEUE)  # every queue, in priority order


@event.listens_for(Engine, "connect")
def _sqlite_pragmas(dbapi_connection, _record) -> None:
    """SQLite: WAL so the web and the worker can read while one writes; enforce foreign keys."""
    if isinstance(dbapi_connection, sqlite3.Connection):
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()


@event.listens_for(Pool, "checkout")
def _replace_dropped_connection(dbapi_connection, _record, _proxy) -> None:
    """A pooled PostgreSQL connection the server closed while it sat idle (a restart, a
    failover, an idle timeout at a proxy) is replaced before a request or job uses it.

    An idle connection has nothing to read, so a readable socket means the server spoke or
    hung up (its termination notice, then end of file): one poll, no round trip. SQLAlchemy's
    `pool_pre_ping` asked the server instead, a round trip on every checkout, which was a
    fifth of a charge creation's time. Raising `DisconnectionError` makes the pool discard
    this connection and hand out another.
    """
    if not isinstance(dbapi_connection, PostgresConnection):
        return
    if dbapi_connection.closed or _has_unread_data(dbapi_connection):
        raise DisconnectionError("PostgreSQL closed this pooled connection while it was idle")


def _has_unread_data(connection: PostgresConnection) -> bool:
    try:
        descriptor = connection.pgconn.socket
    except PostgresOperationalError:  # libpq already knows the connection is gone
        return True
    poller = select.poll()
    poller.register(descriptor, select.POLLIN)
    return bool(poller.poll(0))


# Redis is optional for a request (rate limits, the sign-in throttle and the jobs enqueued
# after a commit all carry on without it), so a request never waits on it for long: short
# timeouts, and after one failed connection none is tried for REDIS_OUTAGE_PAUSE_SECONDS.
REDIS_CONNECT_TIMEOUT_SECONDS = 0.5
REDIS_COMMAND_TIMEOUT_SECONDS = 0.5
REDIS_OUTAGE_PAUSE_SECONDS = 5.0


def get_redis() -> Redis:
    """The app's Redis connection (one client per process; redis-py pools connections)."""
    client = current_app.extensions.get("acme_redis")
    if client is None:
        client = current_app.extensions["acme_redis"] = redis_client(
            current_app.config["REDIS_URL"]
        )
    return client


def redis_client(url: str) -> Redis:
    """A client whose connections fail fast in requests while Redis is down. RQ lengthens the
    command timeout of the worker's own client for its blocking pops."""
    client = Redis.from_url(
        url,
        socket_connect_timeout=REDIS_CONNECT_TIMEOUT_SECONDS,
        socket_timeout=REDIS_COMMAND_TIMEOUT_SECONDS,
    )
    pool = client.connection_pool
    pool.connection_class = type(
        f"FailFast{pool.connection_class.__name__}",
        (_FailFastInRequests, pool.connection_class),
        {"down_until": 0.0},  # one outage clock per client, shared by its connections
    )
    return client


class _FailFastInRequests(AbstractConnection):
    """Connects as usual; but once a connection fails, requests are refused at once until
    the pause is over, instead of each waiting out the timeouts. Jobs and the worker keep
    trying on every call: they are not waited on by anyone, and RQ backs off by itself."""

    down_until: float

    def connect(self) -> None:
        in_request = has_request_context()
        if in_request and time.monotonic() < type(self).down_until:
            raise RedisConnectionError("Redis failed moments ago; not tried again yet.")
        try:
            super().connect()
        except (RedisConnectionError, RedisTimeoutError):
            type(self).down_until = time.monotonic() + REDIS_OUTAGE_PAUSE_SECONDS
            raise


def get_queue(name: str = DEFAULT_QUEUE) -> Queue:
    return Queue(name, connection=get_redis())
