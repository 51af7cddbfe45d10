"""WSGI entry point: `gunicorn wsgi:app`.

Everything loaded by `create_app` (modules, mappers, compiled statements, templates: about
200,000 objects) lives as long as the process, so it is moved out of the garbage
collector's sight (`gc.freeze`). Otherwise each full collection scans all of it while
holding the interpreter: about 100 ms during which every thread of the worker stands still,
which was the tail of charge creation's latency.
"""

import gc

from app import create_app

app = create_app()
gc.freeze()
