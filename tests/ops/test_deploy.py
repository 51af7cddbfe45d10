"""The deployment files: the Procfile and the systemd units run the same commands on real
entry points, and the Procfile's web command adds up every gunicorn worker's metrics."""

import ast
import configparser
import importlib.util
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from app.config import PROJECT_ROOT

UNITS = PROJECT_ROOT / "deploy" / "systemd"
UNIT_OF_PROCESS = {
    "release": "acme-release.service",
    "web": "acme-web.service",
    "worker": "acme-worker@.service",
    "cron": "acme-cron.service",
}
SHELL_DEFAULT = re.compile(r"\$\{([A-Z_]+):-[^}]*\}")  # ${PORT:-5000}: systemd has no defaults


def _procfile() -> dict[str, str]:
    lines = PROJECT_ROOT.joinpath("Procfile").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines if line.strip())


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
    processes = _procfile()
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
    commands = {name: _argv(command) for name, command in _procfile().items()}
    assert commands["release"] == ["flask", "--app", "wsgi", "db", "upgrade"]
    assert commands["web"][:2] == ["gunicorn", "wsgi:app"]
    assert commands["worker"] == ["python", "worker.py"]
    assert commands["cron"] == ["rq", "cron", "app.cron", "--url", "${REDIS_URL}"]
    wsgi = ast.parse(PROJECT_ROOT.joinpath("wsgi.py").read_text())
    assert "app" in {
        t.id for node in wsgi.body if isinstance(node, ast.Assign) for t in node.targets
    }
    worker = ast.parse(PROJECT_ROOT.joinpath("worker.py").read_text())
    assert "main" in {node.name for node in worker.body if isinstance(node, ast.FunctionDef)}
    assert importlib.util.find_spec("app.cron") is not None
    config = commands["web"][commands["web"].index("--config") + 1]
    assert PROJECT_ROOT.joinpath(config).is_file()


def test_units_stop_gracefully_and_only_the_web_writes_metric_files():
    web, worker = _unit("acme-web.service"), _unit("acme-worker@.service")
    assert web["Service"]["KillMode"] == worker["Service"]["KillMode"] == "mixed"
    assert web["Service"]["Environment"] == "PROMETHEUS_MULTIPROC_DIR=/run/acme-web"
    assert web["Service"]["RuntimeDirectory"] == "acme-web"
    assert _unit("acme-release.service")["Service"]["Type"] == "oneshot"
    assert not _unit("acme-release.service").has_section("Install")  # run once per deploy
    for name in ("acme-worker@.service", "acme-cron.service"):
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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _healthy(base: str) -> bool:
    try:
        return requests.get(f"{base}/healthz", timeout=1).status_code == 200
    except requests.RequestException:  # not listening yet, or still booting
        return False


@pytest.fixture
def procfile_web(app, tmp_path):
    """The Procfile's web line, run by a shell as honcho would, with two gunicorn workers."""
    port = _free_port()
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
    log = (tmp_path / "web.log").open("w")
    process = subprocess.Popen(
        ["/bin/sh", "-c", _procfile()["web"]],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: teardown stops gunicorn's workers too
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while not _healthy(base):
            assert process.poll() is None and time.monotonic() < deadline, (
                tmp_path / "web.log"
            ).read_text()
            time.sleep(0.2)
        yield base, metrics_directory
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


@pytest.mark.slow
def test_metrics_add_up_every_gunicorn_worker(procfile_web):
    base, metrics_directory = procfile_web
    for _ in range(20):
        assert requests.get(f"{base}/v1/openapi.json", timeout=5).status_code == 200
    for _ in range(4):  # whichever worker answers the scrape, it counts all of them
        exposition = requests.get(f"{base}/metrics", timeout=5).text
        samples = {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(exposition)
            for sample in family.samples
        }
        route = (("method", "GET"), ("route", "/v1/openapi.json"), ("status", "200"))
        assert samples[("acme_http_requests_total", route)] == 20
        assert samples[("acme_metrics_source_up", (("source", "requests"),))] == 1
    assert not (metrics_directory / "counter_1.db").exists()
    assert list(metrics_directory.glob("counter_*.db"))
