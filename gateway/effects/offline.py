"""``paygate certificate verify FILE [--key-url URL | --key FILE]`` (API.md, Command line): offline
verification of an effect certificate against published keys. Nothing here needs the database.

Keys come from a ``GET /v1/keys/certificates`` document, read from ``--key FILE`` (that JSON, or
one base64 raw public key) or fetched from ``--key-url``. Every key listed verifies, active or not:
rotation retires a signing key, never the certificates it signed.
"""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path
from typing import Any

import httpx

from gateway.domain.certificates import ALG


class Unverifiable(Exception):
    """The certificate or its keys could not be read; the message says from where and why."""


def keys_from_document(document: Any) -> dict[str, bytes]:
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise Unverifiable("a keys document must be {\"keys\": [{\"key_id\", \"alg\", \"public_key\"}]}")
    keys: dict[str, bytes] = {}
    for entry in document["keys"]:
        if isinstance(entry, dict) and entry.get("alg") == ALG and isinstance(entry.get("key_id"), str):
            keys[entry["key_id"]] = _raw(str(entry.get("public_key")))
    return keys


def _raw(value: str) -> bytes:
    try:
        raw = base64.b64decode(value.strip(), validate=True)
    except binascii.Error:
        raise Unverifiable("a public key must be base64") from None
    if len(raw) != 32:
        raise Unverifiable("a public key must be base64 of 32 raw bytes")
    return raw


def keys_from_file(path: Path, certificate: Any) -> dict[str, bytes]:
    """A keys document, or one bare base64 key, which then stands for the certificate's key id."""
    try:
        text = path.read_text()
    except OSError as error:
        raise Unverifiable(f"cannot read {path}: {error.strerror}") from None
    try:
        return keys_from_document(json.loads(text))
    except ValueError:
        signature = certificate.get("signature") if isinstance(certificate, dict) else None
        key_id = signature.get("key_id") if isinstance(signature, dict) else None
        return {str(key_id): _raw(text)}


def keys_from_url(url: str) -> dict[str, bytes]:
    try:
        response = httpx.get(url, timeout=10.0, follow_redirects=False)
        response.raise_for_status()
        return keys_from_document(response.json())
    except (httpx.HTTPError, ValueError) as error:
        raise Unverifiable(f"cannot read keys from {url}: {error}") from None


def read_certificate(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as error:
        raise Unverifiable(f"cannot read {path}: {error.strerror}") from None
    except ValueError:
        return None  # not JSON: verification refuses it with its own message
