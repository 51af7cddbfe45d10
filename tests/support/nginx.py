"""A real nginx running the shipped site, deploy/nginx/acme.conf, on loopback ports in front of
a gunicorn of the tests': one way to find it, render the site and run it, so every test that
puts nginx in front of the application runs the file that is shipped, the same way.

Only the site's ports, file paths and upstream address are replaced; a text to replace that is
no longer in it, or a machine path left in it, fails the test instead of testing another
file."""

import contextlib
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.config import PROJECT_ROOT
from tests.support.processes import wait_for, wait_or_kill

SHIPPED_SITE = PROJECT_ROOT / "deploy" / "nginx" / "acme.conf"
# Debian's nginx is in /usr/sbin, often not in PATH.
NGINX = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
BOOT_SECONDS = 15
STOP_SECONDS = 10
MACHINE_PATH = re.compile(r"\s(/(?:etc|var)/[^\s;]+)")
# nginx.conf around the site: in the foreground, every file in the test's directory, as the
# user running the tests (a worker as `nobody` could not read them); errors at nginx's
# default level, the level deployed machines log at.
MAIN_CONFIG = """
daemon off;
user {user};
worker_processes 1;
pid {directory}/nginx.pid;
error_log {directory}/error.log;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {directory}/body;
    proxy_temp_path {directory}/proxy;
    fastcgi_temp_path {directory}/fastcgi;
    uwsgi_temp_path {directory}/uwsgi;
    scgi_temp_path {directory}/scgi;
    include {directory}/acme.conf;
}}
"""


def needs_nginx(*commands: str) -> pytest.MarkDecorator:
    """Skips, naming what is missing, where nginx or a command the test runs beside it is not
    installed: a machine without them cannot run these tests, it has not failed them."""
    missing = [name for name in commands if not shutil.which(name)]
    if not NGINX:
        missing.insert(0, "nginx")
    return pytest.mark.skipif(
        bool(missing),
        reason=f"needs {', '.join(missing)} (./scripts/test installs nginx as root)",
    )


@dataclass(frozen=True)
class NginxLogs:
    access: Path
    error: Path


def render_site(
    directory: Path,
    *,
    https_port: int,
    http_port: int,
    upstream_port: int,
    certificate: Path,
    key: Path,
    client_ca: Path,
) -> Path:
    """The shipped site, in front of `upstream_port` and with its files in `directory`, and
    the nginx.conf that includes it: that nginx.conf's path."""
    logs = _logs(directory)
    replacements = {
        "listen 443 ssl;": f"listen 127.0.0.1:{https_port} ssl;",
        "listen [::]:443 ssl;": "",
        "listen 80;": f"listen 127.0.0.1:{http_port};",
        "listen [::]:80;": "",
        "server 127.0.0.1:8000;": f"server 127.0.0.1:{upstream_port};",
        "/etc/acme/tls/fullchain.pem": str(certificate),
        "/etc/acme/tls/privkey.pem": str(key),
        "/etc/acme/tls/psp-client-ca.pem": str(client_ca),
        "/var/log/nginx/acme-access.log": str(logs.access),
        "/var/log/nginx/error.log": str(logs.error),
    }
    site = SHIPPED_SITE.read_text()
    directives = _directives(site)
    for shipped in replacements:
        assert shipped in directives, f"{shipped!r} is no longer in {SHIPPED_SITE}"
    left = set(MACHINE_PATH.findall(directives)) - replacements.keys()
    assert not left, f"{SHIPPED_SITE} names paths the tests do not replace: {sorted(left)}"
    for shipped, here in replacements.items():
        site = site.replace(shipped, here)
    directory.joinpath("acme.conf").write_text(site)
    main = directory / "nginx.conf"
    user = pwd.getpwuid(os.geteuid()).pw_name
    main.write_text(MAIN_CONFIG.format(user=user, directory=directory))
    return main


def _directives(config: str) -> str:
    return "\n".join(line.partition("#")[0] for line in config.splitlines())


def _logs(directory: Path) -> NginxLogs:
    return NginxLogs(directory / "access.log", directory / "error.log")


def nginx_command(config: Path, *arguments: str) -> list[str]:
    """nginx on `config` alone: its prefix is the config's directory, its errors on stderr
    until the config's error log is open."""
    return [NGINX, "-c", str(config), "-p", str(config.parent), "-e", "stderr", *arguments]


@contextlib.contextmanager
def running_nginx(config: Path, https_port: int) -> Iterator[NginxLogs]:
    """nginx on a config of render_site's, once it listens on `https_port`; stopped at the
    end whatever happened, so no test leaves one running on its ports."""
    directory = config.parent
    output = directory / "nginx.out"
    with output.open("wb") as log:
        process = subprocess.Popen(
            nginx_command(config), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        wait_for(
            lambda: process.poll() is not None or _listening(https_port),
            BOOT_SECONDS,
            "nginx to listen",
        )
        assert process.poll() is None, output.read_text()
        yield _logs(directory)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGQUIT)  # nginx's graceful stop
        wait_or_kill(process, timeout=STOP_SECONDS)


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True
