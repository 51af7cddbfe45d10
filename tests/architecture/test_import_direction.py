"""Imports flow one way (issue 20): the contracts in pyproject.toml's `[tool.importlinter]`
hold, and `import app.config` loads nothing of ours beyond it."""

import subprocess
import sys
from pathlib import Path

from app.config import PROJECT_ROOT

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def test_no_import_runs_against_the_layers():
    """A failure names the import and its chain; place a new module in pyproject.toml."""
    result = subprocess.run(
        [LINT_IMPORTS, "--no-cache", "--no-logo"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_config_imports_nothing_of_ours():
    """Any layer may read settings without loading the models, providers or services."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, app.config; print(*sorted(m for m in sys.modules if m.startswith('app')))",
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert loaded == ["app", "app.config"]
