"""The deployed stack's fixture, `deployed`, is defined in tests/support/deployed.py (the browser
tests use it too) and registered by tests/conftest.py."""

from tests.support.deployed import PUBLIC_BASE_URL, REQUEST_SECONDS, DeployedStack

__all__ = ["PUBLIC_BASE_URL", "REQUEST_SECONDS", "DeployedStack"]
