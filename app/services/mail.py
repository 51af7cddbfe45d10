"""Outgoing e-mail to merchants (failing webhook endpoints, disputes), behind one function.

`MAIL_BACKEND`: `console` (default: logged, nothing sent), `file` (each message written as
an .eml file under `<instance>/mail/`, handy in development and tests) or `smtp` (SMTP_HOST,
SMTP_PORT, SMTP_USERNAME, SMTP_PASSWORD, SMTP_STARTTLS).
"""

import logging
import smtplib
import uuid
from email.message import EmailMessage

from flask import current_app

from app.config import instance_path

log = logging.getLogger(__name__)


def send(to: list[str], subject: str, body: str) -> None:
    if not to:
        return
    message = EmailMessage()
    message["From"] = current_app.config["MAIL_FROM"]
    message["To"] = ", ".join(to)
    message["Subject"] = subject
    message.set_content(body)
    backend = current_app.config["MAIL_BACKEND"]
    if backend == "smtp":
        _send_smtp(message)
    elif backend == "file":
        folder = instance_path() / "mail"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{uuid.uuid4().hex}.eml").write_bytes(bytes(message))
    else:
        log.info("e-mail (console backend)", extra={"to": to, "subject": subject})


def _send_smtp(message: EmailMessage) -> None:
    config = current_app.config
    with smtplib.SMTP(config["SMTP_HOST"], config["SMTP_PORT"], timeout=30) as smtp:
        if config["SMTP_STARTTLS"]:
            smtp.starttls()
        if config["SMTP_USERNAME"]:
            smtp.login(config["SMTP_USERNAME"], config["SMTP_PASSWORD"])
        smtp.send_message(message)
