"""The service as the Procfile deploys it: its `web` line (gunicorn with
deploy/gunicorn.conf.py), booted once per session on the test database and Redis, on a
loopback port, with a realistic public host name. Bugs that only the real WSGI server shows
(how it frames request bodies, its worker processes) are caught here, not by the test
client. The process group is killed at the end of the session, whatever happened."""

import os
import secrets
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from tests.support import factories
from tests.support.processes import answers_ok, free_port, wait_for, wait_or_kill

ROOT = Path(__file__).resolve().parents[2]
PUBLIC_BASE_URL = "https://pagamentos.minha-loja-de-exemplo.com.br"
BOOT_SECONDS = 60
STOP_SECONDS = 15
REQUEST_SECONDS = 10


@dataclass(frozen=True)
class DeployedWeb:
    """The running web process: `base` is its loopback address; the public address it
    prints in links is PUBLIC_BASE_URL."""

    base: str
    log_path: Path

    def path(self, public_url: str) -> str:
        """The path and query of a link the service handed out on its public host."""
        assert public_url.startswith(PUBLIC_BASE_URL + "/"), public_url
        return public_url.removeprefix(PUBLIC_BASE_URL)

    def request(self, method: str, path: str, **kwargs) -> requests.Response:
        return requests.request(method, self.base + path, timeout=REQUEST_SECONDS, **kwargs)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def procfile_command(process_type: str) -> str:
    """The Procfile's command for `process_type`, bound to loopback instead of every
    interface."""
    for line in (ROOT / "Procfile").read_text().splitlines():
        name, _, command = line.partition(":")
        if name.strip() == process_type:
            return command.strip().replace("0.0.0.0:", "127.0.0.1:")
    raise AssertionError(f"no {process_type} process in the Procfile")


@pytest.fixture(scope="session")
def deployed_web(app, database_url, redis_url, tmp_path_factory):
    """The Procfile's web process with one worker, on the session's (migrated) database."""
    instance = tmp_path_factory.mktemp("deployed-instance")
    log_path = instance / "web.log"
    port = free_port()
    excluded = {"DATABASE_URL", "REDIS_URL", "PROMETHEUS_MULTIPROC_DIR", "INSTANCE_PATH"}
    env = {k: v for k, v in os.environ.items() if k not in excluded}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        PORT=str(port),
        WEB_CONCURRENCY="1",
        APP_ENV="testing",
        SECRET_KEY=secrets.token_hex(32),
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        PUBLIC_BASE_URL=PUBLIC_BASE_URL,
        INSTANCE_PATH=str(instance),
        SETTLEMENT_HOLD="0s",
    )
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            ["/bin/sh", "-c", "exec " + procfile_command("web")],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: teardown reaches gunicorn's workers
        )
    web = DeployedWeb(f"http://127.0.0.1:{port}", log_path)
    try:
        wait_for(
            lambda: process.poll() is not None or answers_ok(f"{web.base}/healthz"),
            BOOT_SECONDS,
            "the Procfile's web process",
        )
        assert process.poll() is None, web.log()
        yield web
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        wait_or_kill(process, timeout=STOP_SECONDS)


@pytest.fixture
def api_key(app) -> str:
    """A test-mode API key of a new account, written to the database the process serves."""
    return factories.make_api_key(app, factories.make_account(app))
