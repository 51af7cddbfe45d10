"""Every start-up check of the settings, in the order they run (`create_app` calls
`validate_settings`).

`app.config` reads the environment and checks only what it owns, importing nothing of ours, so
any layer may use it. A part with settings of its own keeps their check beside the code that
reads them; this list names each one.
"""

from app.config import validate_config
from app.pix.locations import validate_public_base_url
from app.providers.api_pix.settings_check import validate_api_pix
from app.services.secrets_box import validate_secrets

CHECKS = (validate_config, validate_secrets, validate_public_base_url, validate_api_pix)


def validate_settings(config: dict) -> None:
    """Refuse to start with settings that would be unsafe, rather than run with them."""
    for check in CHECKS:
        check(config)
