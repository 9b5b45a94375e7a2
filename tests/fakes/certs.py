"""Throwaway certificate authorities and a server certificate for 127.0.0.1, made with the
openssl command line (no Python crypto package needed)."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest


def _run(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def make_ca(directory: Path, name: str) -> Path:
    """A self-signed CA (``name``.key, ``name``.pem); returns the certificate."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make test certificates")
    key, pem = directory / f"{name}.key", directory / f"{name}.pem"
    _run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
         f"/CN={name}", "-keyout", str(key), "-out", str(pem),
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=keyCertSign")
    return pem


def server_context(directory: Path, ca: Path) -> ssl.SSLContext:
    """A TLS server context for 127.0.0.1 with a certificate signed by ``ca``."""
    key, csr, pem = directory / "server.key", directory / "server.csr", directory / "server.pem"
    ext = directory / "server.ext"
    ext.write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    _run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", str(key),
         "-out", str(csr))
    _run("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca.with_suffix(".key")),
         "-CAcreateserial", "-days", "2", "-extfile", str(ext), "-out", str(pem))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pem, key)
    return context
