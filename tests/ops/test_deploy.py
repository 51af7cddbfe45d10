"""The deployment files: the Procfile, the systemd units and `./scripts/run` run the same
commands on real entry points, and the Procfile's web command adds up every gunicorn
worker's metrics."""

import ast
import configparser
import contextlib
import importlib.util
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from prometheus_client.mmap_dict import MmapedDict

from app import devstack
from app.config import PROJECT_ROOT, engine_options
from tests.ops.scraping import sample, samples_of
from tests.support.processes import answers_ok, free_port, procfile, wait_for, wait_or_kill

UNITS = PROJECT_ROOT / "deploy" / "systemd"
UNIT_OF_PROCESS = {
    "release": "acme-release.service",
    "web": "acme-web.service",
    "worker": "acme-worker@.service",
    "webhooks": "acme-webhooks.service",
    "cron": "acme-cron.service",
}
SHELL_DEFAULT = re.compile(r"\$\{([A-Z_]+):-[^}]*\}")  # ${PORT:-5000}: systemd has no defaults


def _unit(name: str) -> configparser.ConfigParser:
    unit = configparser.ConfigParser(interpolation=None)
    unit.optionxform = str  # systemd keys are case-sensitive
    unit.read_string(UNITS.joinpath(name).read_text())
    return unit


def _argv(command: str) -> list[str]:
    """The command as a list, the program by its name (the unit names it by absolute path)."""
    program, *arguments = shlex.split(SHELL_DEFAULT.sub(r"${\1}", command))
    return [Path(program).name, *arguments]


def test_procfile_and_systemd_units_run_the_same_commands():
    processes = procfile()
    assert set(processes) == set(UNIT_OF_PROCESS)
    for process, unit_name in UNIT_OF_PROCESS.items():
        unit = _unit(unit_name)
        assert _argv(unit["Service"]["ExecStart"]) == _argv(processes[process]), process
        assert unit["Service"]["EnvironmentFile"] == "/etc/acme/acme.env"
        assert unit["Service"]["WorkingDirectory"] == "/srv/acme"
        program = Path(shlex.split(unit["Service"]["ExecStart"])[0])
        assert program.parent == Path("/srv/acme/.venv/bin"), unit_name
        assert (PROJECT_ROOT / ".venv" / "bin" / program.name).exists(), program.name


def test_the_commands_name_real_entry_points():
    commands = {name: _argv(command) for name, command in procfile().items()}
    assert commands["release"] == ["flask", "--app", "wsgi", "db", "upgrade"]
    assert commands["web"][:2] == ["gunicorn", "wsgi:app"]
    assert commands["worker"] == ["python", "worker.py", "money"]
    assert commands["webhooks"] == [
        "python",
        "worker.py",
        "webhooks",
        "--processes",
        "${WEBHOOK_PROCESSES}",
    ]
    assert commands["cron"] == ["rq", "cron", "app.cron"]  # REDIS_URL from the environment
    wsgi = ast.parse(PROJECT_ROOT.joinpath("wsgi.py").read_text())
    assert "app" in {
        t.id for node in wsgi.body if isinstance(node, ast.Assign) for t in node.targets
    }
    worker = ast.parse(PROJECT_ROOT.joinpath("worker.py").read_text())
    assert "main" in {node.name for node in worker.body if isinstance(node, ast.FunctionDef)}
    assert importlib.util.find_spec("app.cron") is not None
    config = commands["web"][commands["web"].index("--config") + 1]
    assert PROJECT_ROOT.joinpath(config).is_file()


def test_the_run_command_starts_the_procfiles_processes(monkeypatch):
    """`./scripts/run` (app/devstack.py) runs the Procfile's commands with their defaults,
    web on loopback; `release` is its migration step, and it adds the printing receiver."""
    commands = procfile()
    defaults = dict(re.findall(r"\$\{([A-Z_]+):-([^}]*)\}", "\n".join(commands.values())))
    for name in defaults:
        monkeypatch.delenv(name, raising=False)
    port = int(defaults["PORT"])
    started = devstack.child_commands(port=port, receiver_port=port + 1)
    assert set(started) - {"receiver"} == set(commands) - {"release"}
    for name in set(started) - {"receiver"}:
        expanded = SHELL_DEFAULT.sub(lambda default: defaults[default[1]], commands[name])
        loopback = expanded.replace("0.0.0.0:", "127.0.0.1:")
        assert _argv(shlex.join(started[name])) == _argv(loopback), name


def test_units_stop_gracefully_and_only_the_web_writes_metric_files():
    web, worker = _unit("acme-web.service"), _unit("acme-worker@.service")
    webhooks = _unit("acme-webhooks.service")
    assert web["Service"]["KillMode"] == worker["Service"]["KillMode"] == "mixed"
    assert webhooks["Service"]["KillMode"] == "mixed"
    assert web["Service"]["Environment"] == "PROMETHEUS_MULTIPROC_DIR=/run/acme-web"
    assert web["Service"]["RuntimeDirectory"] == "acme-web"
    assert _unit("acme-release.service")["Service"]["Type"] == "oneshot"
    assert not _unit("acme-release.service").has_section("Install")  # run once per deploy
    for name in ("acme-worker@.service", "acme-webhooks.service", "acme-cron.service"):
        assert "Environment" not in _unit(name)["Service"]
    example = PROJECT_ROOT.joinpath("deploy", "acme.env.example").read_text()
    assert not re.search(r"^PROMETHEUS_MULTIPROC_DIR=", example, re.MULTILINE)


def test_the_environment_example_sets_only_documented_variables():
    example = PROJECT_ROOT.joinpath("deploy", "acme.env.example").read_text()
    named = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]+)=", example, re.MULTILINE))
    readme = PROJECT_ROOT.joinpath("README.md").read_text()
    documented = set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", readme, re.MULTILINE))
    assert named, "no variables found: the pattern is stale"
    assert named <= documented, sorted(named - documented)


REPORT_FROZEN = "print(gc.get_freeze_count(), len(gc.get_objects()))"
FROZEN_AT_START = {
    "web": f"import gc, wsgi; {REPORT_FROZEN}",
    "worker": (
        "import gc, worker\n"
        f"worker.AppWorker.work = lambda *_: {REPORT_FROZEN}\n"
        "worker.main(['money'])"
    ),
    "pooled worker": (
        "import gc, os, worker, redis\n"
        f"worker.SimpleWorker.work = lambda *_: {REPORT_FROZEN}\n"
        "connection = redis.Redis.from_url(os.environ['REDIS_URL'])\n"
        "worker.PooledAppWorker(['webhooks'], connection=connection).work()"
    ),
}


@pytest.mark.parametrize("entry_point", FROZEN_AT_START)
def test_the_entry_points_leave_what_they_loaded_out_of_garbage_collection(app, entry_point):
    """`wsgi.py` as gunicorn's workers import it, `worker.py` (one process, or one of a
    pool's) up to its first job: what `create_app` loaded is frozen, so a full collection
    scans only what came after."""
    env = {
        **os.environ,
        "APP_ENV": "testing",
        "DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"],
        "REDIS_URL": app.config["REDIS_URL"],
    }
    started = subprocess.run(
        [sys.executable, "-c", FROZEN_AT_START[entry_point]],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    frozen, collectable = map(int, started.stdout.split())
    assert frozen > 100_000
    assert collectable < frozen / 100


@pytest.fixture
def procfile_web(app, tmp_path):
    """The Procfile's web line, run by a shell as honcho would, with two gunicorn workers."""
    port = free_port()
    metrics_directory = tmp_path / "metrics"
    metrics_directory.mkdir()
    (metrics_directory / "counter_1.db").write_bytes(b"left by a previous run")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "APP_ENV": "testing",
        "DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"],
        "REDIS_URL": app.config["REDIS_URL"],
        "PORT": str(port),
        "WEB_CONCURRENCY": "2",
        "PROMETHEUS_MULTIPROC_DIR": str(metrics_directory),
    }
    log = tmp_path / "web.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            ["/bin/sh", "-c", procfile()["web"]],
            cwd=PROJECT_ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: teardown stops gunicorn's workers
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(
            lambda: answers_ok(f"{base}/healthz") or process.poll() is not None,
            30,
            f"gunicorn to answer /healthz (its output: {log})",
        )
        assert process.poll() is None, log.read_text()
        yield base, metrics_directory
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        wait_or_kill(process, timeout=30)


OPENAPI = {"method": "GET", "route": "/v1/openapi.json", "status": "200"}
CONCURRENT_REQUESTS = 8
ROUNDS_FOR_BOTH_WORKERS = 25


def _openapi_requests_by_worker(metrics_directory: Path) -> dict[int, float]:
    """Each gunicorn worker's count of OPENAPI requests, read from its own counter file
    (`counter_<pid>.db`), as /metrics reads them before adding them up."""
    counts = {}
    for path in metrics_directory.glob("counter_*.db"):
        for key, value, _, _ in MmapedDict.read_all_values_from_file(str(path)):
            _, name, labels, _ = json.loads(key)
            if name == "acme_http_requests_total" and labels == OPENAPI and value:
                counts[int(path.stem.removeprefix("counter_"))] = value
    return counts


def _get(url: str) -> requests.Response:
    return requests.get(url, timeout=10)


@pytest.mark.slow
def test_metrics_add_up_every_gunicorn_worker(procfile_web):
    base, metrics_directory = procfile_web
    sent = 0
    with ThreadPoolExecutor(CONCURRENT_REQUESTS) as pool:
        for _ in range(ROUNDS_FOR_BOTH_WORKERS):  # concurrent, so one worker cannot take all
            answers = list(pool.map(_get, [f"{base}/v1/openapi.json"] * CONCURRENT_REQUESTS))
            assert [a.status_code for a in answers] == [200] * CONCURRENT_REQUESTS
            sent += CONCURRENT_REQUESTS
            by_worker = _openapi_requests_by_worker(metrics_directory)
            if len(by_worker) >= 2:
                break
        else:
            pytest.fail(
                f"{sent} concurrent requests were all answered by one gunicorn worker "
                f"({by_worker}): the sum across workers cannot be checked"
            )
        assert sum(by_worker.values()) == sent
        # whichever worker answers a scrape, it counts all of them
        scrapes = list(pool.map(_get, [f"{base}/metrics"] * CONCURRENT_REQUESTS))
    for scraped in scrapes:
        assert scraped.status_code == 200, scraped.text
        samples = samples_of(scraped.text)
        assert sample(samples, "acme_http_requests_total", **OPENAPI) == sent
        assert sample(samples, "acme_metrics_source_up", source="requests") == 1
    assert not (metrics_directory / "counter_1.db").exists()


def _gunicorn_settings() -> dict:
    """The plain values deploy/gunicorn.conf.py assigns, read without running it."""
    tree = ast.parse(PROJECT_ROOT.joinpath("deploy", "gunicorn.conf.py").read_text())
    return {
        target.id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
    }


def test_every_gunicorn_thread_can_keep_a_database_connection():
    settings = _gunicorn_settings()
    assert settings["worker_class"] == "app.web_worker.WebWorker"
    assert settings["threads"] <= engine_options("postgresql://db/acme")["pool_size"]
