"""Start and stop the loopback Cosmos DB server (``launch.mjs``) from Python.

Used by the pytest session fixture (``tests/cosmos/conftest.py``) and by ``bench/cosmos_bench.py``.
The server is served with a certificate generated here for ``127.0.0.1`` and ``localhost``, so
clients run with TLS verification on and trust that certificate only (``ca_file``).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import os
import shutil
import socket
import ssl
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
LAUNCHER = HERE / "launch.mjs"

# The well-known emulator key: the local server accepts any key, and this one is public.
EMULATOR_KEY = (
    "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="
)


class ServerError(RuntimeError):
    """The loopback Cosmos DB server could not be installed or started."""


def ensure_node_modules() -> None:
    """Install the pinned npm packages when ``node_modules`` is missing."""
    if (HERE / "node_modules" / "@vercel" / "cosmosdb-server").is_dir():
        return
    npm = shutil.which("npm")
    if npm is None:
        raise ServerError("npm is not on PATH: install Node.js 18+ to run the Cosmos DB tests")
    command = [npm, "ci" if (HERE / "package-lock.json").exists() else "install"]
    proc = subprocess.run(
        [*command, "--no-audit", "--no-fund"],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        raise ServerError(f"{' '.join(command)} failed in {HERE}:\n{proc.stderr[-4000:]}")


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """Write a self-signed certificate for 127.0.0.1 and localhost; return (cert, key) paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "agentstate cosmos test server")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that was free on ``host`` a moment ago."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@dataclass
class CosmosTestServer:
    """One launcher process; ``start``/``stop`` may be repeated on the same port."""

    workdir: Path
    host: str = "127.0.0.1"
    port: int = 0
    key: str = EMULATOR_KEY
    log_path: Path = field(init=False)
    ca_file: Path = field(init=False)
    _key_file: Path = field(init=False)
    _proc: subprocess.Popen[bytes] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.ca_file, self._key_file = make_certificate(self.workdir)
        self.log_path = self.workdir / "server.log"
        if not self.port:
            self.port = free_port(self.host)

    @property
    def endpoint(self) -> str:
        """The account endpoint, e.g. ``https://127.0.0.1:8081/``."""
        return f"https://{self.host}:{self.port}/"

    def start(self, timeout: float = 30.0) -> None:
        """Start the launcher and wait until it answers over TLS."""
        if self._proc is not None and self._proc.poll() is None:
            return
        ensure_node_modules()
        node = shutil.which("node")
        if node is None:
            raise ServerError("node is not on PATH: install Node.js 18+ to run the Cosmos DB tests")
        log = self.log_path.open("ab")
        self._proc = subprocess.Popen(
            [
                node,
                str(LAUNCHER),
                "--host",
                self.host,
                "--port",
                str(self.port),
                "--cert",
                str(self.ca_file),
                "--key",
                str(self._key_file),
            ],
            cwd=HERE,
            stdout=log,
            stderr=log,
        )
        log.close()
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise ServerError(
                    f"the Cosmos DB test server exited with {self._proc.returncode}; "
                    f"log {self.log_path}:\n{self.log_path.read_text(errors='replace')[-4000:]}"
                )
            try:
                self.control("GET", "/_agentstate/stats")
                return
            except OSError as exc:
                last = exc
                time.sleep(0.05)
        self.stop()
        raise ServerError(f"the Cosmos DB test server did not answer within {timeout}s: {last}")

    def stop(self) -> None:
        """Stop the launcher (connections drop at once, like a crashed server)."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.kill()
        proc.wait(timeout=10)

    @property
    def running(self) -> bool:
        """Whether the launcher process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def control(self, method: str, path: str, body: object | None = None) -> object:
        """Call one of the launcher's test-only ``/_agentstate/`` endpoints."""
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.endpoint.rstrip("/") + path, data=data, method=method)
        with urllib.request.urlopen(req, context=ctx, timeout=5) as resp:
            return json.loads(resp.read() or b"null")

    def throttle(self, count: int, retry_after_ms: int = 10) -> None:
        """Make the next ``count`` data-plane requests answer 429 TooManyRequests."""
        self.control(
            "POST", "/_agentstate/throttle", {"count": count, "retryAfterMs": retry_after_ms}
        )

    def outage(self, ms: int) -> None:
        """Close the listener and drop every connection for ``ms`` milliseconds (data kept)."""
        self.control("POST", "/_agentstate/outage", {"ms": ms})

    def wait_until_up(self, timeout: float = 30.0) -> None:
        """Block until the server answers again (after an outage)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.control("GET", "/_agentstate/stats")
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def fail(self, after: int, count: int = 1_000_000) -> None:
        """After ``after`` more data-plane requests, answer the next ``count`` with 503 (nothing
        applied): a client or network dying in the middle of a multi-request operation."""
        self.control("POST", "/_agentstate/fail", {"after": after, "count": count})

    def heal(self) -> None:
        """Stop injecting failures."""
        self.control("POST", "/_agentstate/fail", {"after": -1, "count": 0})

    def limit_batches(self, batch_bytes: int = 2 * 1024 * 1024) -> None:
        """Refuse transactional batches larger than ``batch_bytes`` with 413 (default: the
        service's 2 MB)."""
        self.control("POST", "/_agentstate/limits", {"batchBytes": batch_bytes})

    def advance_clock(self, seconds: float) -> None:
        """Move the server's time-to-live clock forward (items expire as if time had passed)."""
        self.control("POST", "/_agentstate/clock", {"advance": seconds})

    def stats(self) -> dict[str, float]:
        """Since the last reset: requests by kind (read, query, upsert, batch, ...), ``total``,
        ``bytes_in`` / ``bytes_out`` (data-plane bytes received and sent, counted by the server)
        and ``ru_estimate`` (estimated request units, see launch.mjs)."""
        result = self.control("GET", "/_agentstate/stats")
        assert isinstance(result, dict)
        return {str(k): float(v) for k, v in result.items()}

    def reset_stats(self) -> None:
        """Zero the request counters."""
        self.control("POST", "/_agentstate/stats/reset", {})


def env_for(server: CosmosTestServer) -> dict[str, str]:
    """Environment variables that point SDK clients (requests and aiohttp) at the server."""
    env = dict(os.environ)
    env.update(
        COSMOSDB_ENDPOINT=server.endpoint,
        COSMOSDB_KEY=server.key,
        REQUESTS_CA_BUNDLE=str(server.ca_file),
        SSL_CERT_FILE=str(server.ca_file),
    )
    return env
