"""Evidence in an S3-compatible object store (AWS S3, MinIO, …), signed with SigV4 by hand.

The bytes never pass through this service. A ticket is a presigned PUT (query-string
authentication) whose signed headers are `content-length;content-type;host`: the store
recomputes the signature from the request it receives, so a body of another size or type, a
different object or an expired address is refused by the store itself. The payload is
`UNSIGNED-PAYLOAD` because the client's bytes are unknown when the address is made. A view
address is a presigned GET that signs only the host. The service's own calls (the stored
size, the first bytes for the type check, the health check) are HEADs or a ranged GET
signed in the Authorization header.

Four requests do not justify an AWS SDK: SigV4 is a few HMACs (the signer is checked
against AWS's published examples), and botocore's pins do not fit this project's.

Addressing is path-style (`{endpoint}/{bucket}/{key}`, what MinIO and most S3-compatible
stores expect) or virtual-hosted (`{scheme}://{bucket}.{endpoint host}/{key}`, AWS's
default), as configured. The credentials need s3:PutObject, s3:GetObject and s3:ListBucket
(without ListBucket, S3 answers 403 instead of 404 for a missing object, which reads here as
unavailable storage).
"""

import hashlib
import hmac
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

import requests
import urllib3
from flask import Flask

from app.storage import (
    TYPE_HEAD_BYTES,
    VIEW_LIFETIME_SECONDS,
    EvidenceStorage,
    StorageUnavailable,
    check_key,
    upload_headers,
)

ALGORITHM = "AWS4-HMAC-SHA256"
SERVICE = "s3"
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
EMPTY_PAYLOAD_SHA256 = hashlib.sha256(b"").hexdigest()
ADDRESSING_STYLES = ("path", "virtual")
DEFAULT_REGION = "us-east-1"
REQUIRED_SETTINGS = (
    "EVIDENCE_S3_ENDPOINT",
    "EVIDENCE_S3_BUCKET",
    "EVIDENCE_S3_ACCESS_KEY_ID",
    "EVIDENCE_S3_SECRET_ACCESS_KEY",
)
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_ENDPOINT = re.compile(r"https?://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?/?")
_REGION = re.compile(r"[a-z0-9-]+")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def check_s3_settings(config: Mapping) -> None:
    """Refuse to start with `EVIDENCE_STORAGE=s3` and settings that cannot work."""
    missing = [name for name in REQUIRED_SETTINGS if not config.get(name)]
    if missing:
        raise RuntimeError(f"EVIDENCE_STORAGE=s3 needs {', '.join(missing)}.")
    if not _ENDPOINT.fullmatch(config["EVIDENCE_S3_ENDPOINT"]):
        raise RuntimeError(
            "EVIDENCE_S3_ENDPOINT must be http(s)://host[:port] with no path, "
            "e.g. https://s3.sa-east-1.amazonaws.com or http://127.0.0.1:9000."
        )
    if not _BUCKET.fullmatch(config["EVIDENCE_S3_BUCKET"]):
        raise RuntimeError("EVIDENCE_S3_BUCKET must be a valid S3 bucket name.")
    if not _REGION.fullmatch(config.get("EVIDENCE_S3_REGION", DEFAULT_REGION)):
        raise RuntimeError("EVIDENCE_S3_REGION must be a region name such as us-east-1.")
    if config.get("EVIDENCE_S3_ADDRESSING", "path") not in ADDRESSING_STYLES:
        raise RuntimeError("EVIDENCE_S3_ADDRESSING must be 'path' or 'virtual'.")
    timeout = config.get("EVIDENCE_S3_TIMEOUT_SECONDS", 5)
    if not isinstance(timeout, int | float) or timeout <= 0:
        raise RuntimeError("EVIDENCE_S3_TIMEOUT_SECONDS must be a positive number.")


@dataclass(frozen=True)
class Credentials:
    access_key_id: str
    secret_access_key: str
    session_token: str = ""


def uri_encode(value: str, safe: str = "") -> str:
    """SigV4's encoding: every byte but A-Z a-z 0-9 - _ . ~ (and `safe`) as %XX."""
    return quote(value, safe="-_.~" + safe)


def canonical_query(params: Mapping[str, str]) -> str:
    return "&".join(
        f"{uri_encode(name)}={uri_encode(value)}" for name, value in sorted(params.items())
    )


def canonical_request(
    method: str,
    path: str,
    params: Mapping[str, str],
    headers: Mapping[str, str],
    payload_hash: str,
) -> str:
    """The request as SigV4 signs it; `headers` are the signed ones, lower-case names."""
    names = sorted(headers)
    return "\n".join(
        [
            method,
            uri_encode(path, safe="/"),
            canonical_query(params),
            *(f"{name}:{' '.join(headers[name].split())}" for name in names),
            "",
            ";".join(names),
            payload_hash,
        ]
    )


@dataclass(frozen=True)
class Signer:
    """AWS Signature Version 4 for S3, for one set of credentials and one region."""

    credentials: Credentials
    region: str

    def presigned_query(
        self,
        method: str,
        host: str,
        path: str,
        timestamp: str,
        expires_in: int,
        headers: Mapping[str, str],
    ) -> str:
        """The query string that authenticates the request, signature last. The client
        must send exactly `headers` (and this host), or the store refuses the request."""
        signed = {"host": host} | {name.lower(): value for name, value in headers.items()}
        params = {
            "X-Amz-Algorithm": ALGORITHM,
            "X-Amz-Credential": f"{self.credentials.access_key_id}/{self.scope(timestamp)}",
            "X-Amz-Date": timestamp,
            "X-Amz-Expires": str(expires_in),
            "X-Amz-SignedHeaders": ";".join(sorted(signed)),
        }
        if self.credentials.session_token:
            params["X-Amz-Security-Token"] = self.credentials.session_token
        canonical = canonical_request(method, path, params, signed, UNSIGNED_PAYLOAD)
        signature = self.signature(timestamp, canonical)
        return f"{canonical_query(params)}&X-Amz-Signature={signature}"

    def signed_headers(
        self,
        method: str,
        host: str,
        path: str,
        timestamp: str,
        headers: Mapping[str, str],
    ) -> dict[str, str]:
        """`headers` plus the ones that authenticate a request with an empty body."""
        signed = {name.lower(): value for name, value in headers.items()} | {
            "host": host,
            "x-amz-content-sha256": EMPTY_PAYLOAD_SHA256,
            "x-amz-date": timestamp,
        }
        if self.credentials.session_token:
            signed["x-amz-security-token"] = self.credentials.session_token
        canonical = canonical_request(method, path, {}, signed, EMPTY_PAYLOAD_SHA256)
        authorization = (
            f"{ALGORITHM} Credential={self.credentials.access_key_id}/{self.scope(timestamp)},"
            f"SignedHeaders={';'.join(sorted(signed))},"
            f"Signature={self.signature(timestamp, canonical)}"
        )
        return signed | {"authorization": authorization}

    def scope(self, timestamp: str) -> str:
        return f"{timestamp[:8]}/{self.region}/{SERVICE}/aws4_request"

    def signature(self, timestamp: str, canonical: str) -> str:
        string_to_sign = "\n".join(
            [
                ALGORITHM,
                timestamp,
                self.scope(timestamp),
                hashlib.sha256(canonical.encode()).hexdigest(),
            ]
        )
        return _hmac(self.signing_key(timestamp[:8]), string_to_sign).hex()

    def signing_key(self, day: str) -> bytes:
        key = f"AWS4{self.credentials.secret_access_key}".encode()
        for part in (day, self.region, SERVICE, "aws4_request"):
            key = _hmac(key, part)
        return key


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode(), hashlib.sha256).digest()


class S3EvidenceStorage(EvidenceStorage):
    def __init__(
        self,
        endpoint: str,
        bucket: str,
        signer: Signer,
        addressing: str = "path",
        timeout: float = 5,
        clock: Callable[[], float] = time.time,
    ):
        parts = urlsplit(endpoint)
        self.scheme = parts.scheme
        self.endpoint_host = _host_header(parts.scheme, parts.hostname or "", parts.port)
        self.bucket = bucket
        self.signer = signer
        self.addressing = addressing
        self.timeout = timeout
        self.clock = clock

    @classmethod
    def from_app(cls, app: Flask) -> "S3EvidenceStorage":
        config = app.config
        credentials = Credentials(
            access_key_id=config["EVIDENCE_S3_ACCESS_KEY_ID"],
            secret_access_key=config["EVIDENCE_S3_SECRET_ACCESS_KEY"],
            session_token=config.get("EVIDENCE_S3_SESSION_TOKEN", ""),
        )
        return cls(
            endpoint=config["EVIDENCE_S3_ENDPOINT"],
            bucket=config["EVIDENCE_S3_BUCKET"],
            signer=Signer(credentials, config.get("EVIDENCE_S3_REGION", DEFAULT_REGION)),
            addressing=config.get("EVIDENCE_S3_ADDRESSING", "path"),
            timeout=config.get("EVIDENCE_S3_TIMEOUT_SECONDS", 5),
        )

    # The EvidenceStorage interface

    def signed_put_url(
        self, key: str, content_type: str, content_length: int, expires_in: int
    ) -> str:
        headers = upload_headers(content_type, content_length)
        return self.presigned_url("PUT", key, expires_in, headers)

    def view_address(self, key: str, expires_in: int = VIEW_LIFETIME_SECONDS) -> str:
        return self.presigned_url("GET", check_key(key), expires_in)

    def stored_size(self, key: str) -> int | None:
        response = self.head(check_key(key))
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise StorageUnavailable(f"The evidence storage answered {response.status_code}.")
        try:
            return int(response.headers["Content-Length"])
        except (KeyError, ValueError) as error:
            raise StorageUnavailable("The evidence storage did not give a size.") from error

    def stored_head(self, key: str) -> bytes | None:
        byte_range = {"Range": f"bytes=0-{TYPE_HEAD_BYTES - 1}"}
        response = self.signed_request(requests.get, "GET", check_key(key), byte_range, stream=True)
        with response:
            if response.status_code == 404:
                return None
            if response.status_code not in (200, 206):
                raise StorageUnavailable(f"The evidence storage answered {response.status_code}.")
            try:
                return response.raw.read(TYPE_HEAD_BYTES, decode_content=True)
            except (OSError, urllib3.exceptions.HTTPError) as error:
                raise StorageUnavailable("The evidence storage cannot be read.") from error

    def upload_origin(self) -> str:
        return f"{self.scheme}://{self.location('')[0]}"

    def healthy(self) -> bool:
        try:
            return self.head("").status_code == 200
        except StorageUnavailable:
            return False

    # Addresses and requests

    def location(self, key: str) -> tuple[str, str]:
        """The Host header and the (unencoded) path of an object, or of the bucket for ""."""
        if self.addressing == "virtual":
            return f"{self.bucket}.{self.endpoint_host}", f"/{key}"
        return self.endpoint_host, f"/{self.bucket}/{key}" if key else f"/{self.bucket}"

    def presigned_url(
        self, method: str, key: str, expires_in: int, headers: Mapping[str, str] | None = None
    ) -> str:
        host, path = self.location(key)
        query = self.signer.presigned_query(
            method, host, path, self.timestamp(), expires_in, headers or {}
        )
        return f"{self.scheme}://{host}{uri_encode(path, safe='/')}?{query}"

    def head(self, key: str) -> requests.Response:
        """A signed HEAD of the object (or of the bucket for "")."""
        return self.signed_request(requests.head, "HEAD", key)

    def signed_request(
        self,
        send: Callable[..., requests.Response],
        method: str,
        key: str,
        headers: Mapping[str, str] | None = None,
        **options,
    ) -> requests.Response:
        """A request with an empty body sent with `send` (requests.head, requests.get),
        signed in the Authorization header; StorageUnavailable when the store cannot be
        reached in time or answers 5xx."""
        host, path = self.location(key)
        signed = self.signer.signed_headers(method, host, path, self.timestamp(), headers or {})
        try:
            response = send(
                f"{self.scheme}://{host}{uri_encode(path, safe='/')}",
                headers=signed,
                timeout=self.timeout,
                allow_redirects=False,
                **options,
            )
        except requests.RequestException as error:
            raise StorageUnavailable("The evidence storage cannot be reached.") from error
        if response.status_code >= 500:
            raise StorageUnavailable(f"The evidence storage answered {response.status_code}.")
        return response

    def timestamp(self) -> str:
        return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(self.clock()))


def _host_header(scheme: str, hostname: str, port: int | None) -> str:
    """What HTTP clients send as Host (the port only when it is not the scheme's default),
    which is what the store signs against."""
    host = f"[{hostname}]" if ":" in hostname else hostname
    return host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
