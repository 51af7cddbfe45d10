"""The durable-write floor (issue 22): the least a POST that keeps something can cost here.

A bare WSGI application, no framework: `POST /` reads the body, does one
`INSERT … RETURNING id` and a `COMMIT` on PostgreSQL (one connection per server thread, kept
open, as the app's pool keeps them), and answers the id as JSON; `GET /` answers a constant
JSON. `bench/charges.py` serves it with the same gunicorn options as the app and drives it
with the same client, so "create / floor" says how far charge creation is from a durable
write on this machine, in this run. Never imported by the app.

Served as `gunicorn --pythonpath bench floor_app:app`, with DATABASE_URL in the environment.
"""

import json
import os
import threading

import psycopg

# The table is made by bench/charges.py (`FLOOR_TABLE_SQL`) before the server starts.
INSERT_SQL = "INSERT INTO bench_floor (body) VALUES (%s) RETURNING id"
MAX_BODY = 64 * 1024

_connections = threading.local()


def _connection() -> psycopg.Connection:
    """This thread's connection, opened on first use (psycopg's URL, not SQLAlchemy's)."""
    if getattr(_connections, "conn", None) is None:
        url = os.environ["DATABASE_URL"].replace("postgresql+psycopg://", "postgresql://")
        _connections.conn = psycopg.connect(url)
    return _connections.conn


def app(environ, start_response):
    if environ["REQUEST_METHOD"] == "POST":
        length = min(int(environ.get("CONTENT_LENGTH") or 0), MAX_BODY)
        body = environ["wsgi.input"].read(length).decode("utf-8", "replace")
        conn = _connection()
        with conn.transaction():
            (row_id,) = conn.execute(INSERT_SQL, (body,)).fetchone()
        answer, status = {"id": row_id}, "201 Created"
    else:
        answer, status = {"status": "ok"}, "200 OK"
    payload = json.dumps(answer).encode()
    start_response(
        status, [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))]
    )
    return [payload]
