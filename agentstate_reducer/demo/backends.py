"""Where the demo stores checkpoints, and how it asks each database what a thread takes.

Backends (``--saver``): ``sqlite`` (the default; files in a temporary directory, deleted at
exit; ``SqliteSaver`` is given the ``prune`` it lacks, for ``keep_checkpoints``), a
PostgreSQL connection string (``PostgresSaver``; tables created by its ``setup()``, the
demo's threads deleted at the end), or ``cosmosdb`` (``agentstate_cosmosdb.CosmosDBSaver``,
endpoint and key from ``COSMOSDB_ENDPOINT`` and ``COSMOSDB_KEY``; the demo's threads deleted
at the end).

Each driver is imported only when its backend is opened: the core package never imports
``agentstate_cosmosdb``, and a missing driver is a one-line :class:`DemoError` naming the
package to install.

PostgreSQL connection strings are parsed with ``psycopg.conninfo`` before anything is
printed, so a password is hidden wherever it was given (in the URL's userinfo, as a
``?password=`` or ``?sslpassword=`` parameter, or as ``password=``/``sslpassword=`` in a
key=value string). SQLAlchemy-style URLs (``postgresql+psycopg://``) are read as the
``postgresql://`` URL they name. The connection is opened with ``connect_timeout``
(:data:`CONNECT_TIMEOUT` seconds) unless the string or ``PGCONNECT_TIMEOUT`` sets one, so a
server that accepts the connection and never answers cannot hang the demo; and the session
runs with ``lock_timeout`` and ``statement_timeout`` (:data:`LOCK_TIMEOUT`,
:data:`STATEMENT_TIMEOUT`) unless the string's ``options`` (or ``PGOPTIONS``) set them, so
a table locked by another session ends the demo with one line instead of hanging it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import DemoError, require

__all__ = [
    "CONNECT_TIMEOUT",
    "COSMOS_ENV",
    "LOCK_TIMEOUT",
    "STATEMENT_TIMEOUT",
    "Backend",
    "SaverSpec",
    "connect_kwargs",
    "open_backend",
    "parse_saver",
    "redact",
]

COSMOS_ENV = ("COSMOSDB_ENDPOINT", "COSMOSDB_KEY")
"""The environment variables ``--saver cosmosdb`` needs."""

CONNECT_TIMEOUT = 10
"""Seconds the demo waits for PostgreSQL to answer, unless the connection string says."""

LOCK_TIMEOUT = 10
"""Seconds a statement waits for a lock another session holds, unless the string says."""

STATEMENT_TIMEOUT = 60
"""Seconds one statement may run, unless the string says (the demo's take milliseconds)."""

REDACTED = "***"

_SECRET_PARAMETERS = ("password", "sslpassword")
"""libpq parameters whose values are secrets: never printed."""

_POSTGRES_SCHEME = re.compile(r"^(postgres(?:ql)?)(?:\+[A-Za-z0-9_]+)?://", re.IGNORECASE)
"""``postgresql://``, ``postgres://``, in any case, with an SQLAlchemy ``+driver`` or not."""
_BARE_WORD = re.compile(r"^[A-Za-z0-9_.-]{1,32}$")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")

_POSTGRES_INSTALL = 'pip install langgraph-checkpoint-postgres "psycopg[binary]"'
_COSMOS_INSTALL = "pip install agentstate-cosmosdb"


@dataclass
class Backend:
    """A checkpoint saver and a way to ask its database how big a thread is.

    Attributes:
        saver: The LangGraph checkpoint saver (bare).
        measure: ``(thread_id) -> bytes`` read from the database itself.
        cleanup: Called with the thread ids when the run is over.
    """

    saver: Any
    measure: Callable[[str], int]
    cleanup: Callable[[Sequence[str]], None] = lambda _threads: None


@dataclass(frozen=True)
class SaverSpec:
    """What ``--saver`` asked for.

    Attributes:
        kind: ``"sqlite"``, ``"postgres"`` or ``"cosmosdb"``.
        url: The PostgreSQL connection string as given, an SQLAlchemy-style scheme
            (``postgresql+psycopg://``) read as ``postgresql://`` (``kind == "postgres"``
            only); print :func:`redact` of it, never the string itself.
    """

    kind: str
    url: str = ""

    def __repr__(self) -> str:
        # The connection string may hold a password: never show it, not even in a repr.
        shown = f", url={redact(self.url)!r}" if self.url else ""
        return f"SaverSpec(kind={self.kind!r}{shown})"

    @property
    def title(self) -> str:
        """A short name for headers and file names."""
        return {"sqlite": "SQLite", "postgres": "PostgreSQL", "cosmosdb": "Cosmos DB"}[self.kind]

    @property
    def measured(self) -> str:
        """How ``stored`` is measured, for the table header."""
        return {
            "sqlite": "sum of the lengths of the thread's rows in the checkpoints and writes "
            "tables",
            "postgres": "sum of pg_column_size of the thread's rows in checkpoints, "
            "checkpoint_blobs and checkpoint_writes",
            "cosmosdb": "sum of the JSON sizes of the thread's documents",
        }[self.kind]


def parse_saver(text: str) -> SaverSpec:
    """Read ``--saver``: ``sqlite``, ``cosmosdb``, a ``postgresql://`` (or ``postgres://``)
    URL, an SQLAlchemy-style ``postgresql+psycopg://`` URL (read as the ``postgresql://``
    URL it names: the demo always connects with psycopg), or a libpq key=value string
    (``"host=... dbname=..."``).

    Raises:
        ValueError: ``text`` is none of these. The message repeats ``text`` only when it
            is a bare word (a mistyped ``sqlite``, say); a URL is shown by its scheme
            alone, anything else not at all, since it may hold a password.
    """
    stripped = text.strip()
    lowered = stripped.lower()
    if lowered == "sqlite":
        return SaverSpec("sqlite")
    if lowered in ("cosmosdb", "cosmos"):
        return SaverSpec("cosmosdb")
    # libpq reads only a lower-case scheme without a driver: postgresql:// or postgres://
    stripped = _POSTGRES_SCHEME.sub(lambda m: f"{m.group(1).lower()}://", stripped, count=1)
    if stripped.startswith(("postgresql://", "postgres://")):
        return SaverSpec("postgres", stripped)
    if "=" in stripped and "://" not in stripped:
        return SaverSpec("postgres", stripped)
    if _BARE_WORD.match(stripped):
        got = repr(stripped)
    elif scheme := _SCHEME.match(stripped):
        got = f"a {scheme.group(1).lower()}:// URL (not shown: it may hold a password)"
    else:
        got = "something else (not shown: it may hold a password)"
    raise ValueError(
        "expected 'sqlite', 'cosmosdb', a postgresql://user@host:port/db URL or a "
        f"'host=... dbname=...' string, got {got}"
    )


def _conninfo(url: str) -> dict[str, Any]:
    """The connection string's parameters, parsed by libpq (through psycopg).

    Raises:
        DemoError: psycopg is not installed, or libpq cannot parse the string (its message
            is not repeated: it may quote the password).
    """
    require((("psycopg", "psycopg"),), _POSTGRES_INSTALL)
    from psycopg import conninfo

    try:
        return dict(conninfo.conninfo_to_dict(url))
    except Exception:  # psycopg.ProgrammingError, whose text may quote the password
        raise DemoError(
            "--saver: not a valid PostgreSQL connection string (libpq cannot parse it); "
            "expected postgresql://user:password@host:port/dbname or 'host=... dbname=...'"
        ) from None


def redact(url: str) -> str:
    """The connection string ``url`` fit to print: parsed, with any password as ``***``.

    The result is a libpq key=value string built by ``psycopg.conninfo.make_conninfo``
    from the parsed parameters, so a password (or an ``sslpassword``, the client key's)
    given in the URL's userinfo, as a ``?password=`` parameter or as ``password=`` is
    hidden alike; a string that does not parse (or psycopg missing) prints as a
    placeholder rather than as given.
    """
    try:
        params = _conninfo(url)
    except DemoError:
        return "<a PostgreSQL connection string>"
    from psycopg import conninfo

    for name in _SECRET_PARAMETERS:
        if params.get(name) is not None:
            params[name] = REDACTED
    return conninfo.make_conninfo(**params)


def _secrets(params: dict[str, Any]) -> list[str]:
    return [str(params[name]) for name in _SECRET_PARAMETERS if params.get(name)]


def _first_line(exc: BaseException, secrets: Sequence[str]) -> str:
    """The first line of a driver error (or its type), with every secret scrubbed."""
    text = str(exc).strip()
    return _scrub(text.splitlines()[0] if text else type(exc).__name__, secrets)


def _scrub(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every secret replaced, for driver messages that might quote one."""
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def connect_kwargs(url: str) -> dict[str, Any]:
    """Extra ``psycopg.connect`` arguments: the timeouts nothing else sets.

    * ``connect_timeout``: :data:`CONNECT_TIMEOUT` seconds, unless the string
      (``connect_timeout=``) or ``PGCONNECT_TIMEOUT`` sets one.
    * ``options``: ``-c lock_timeout=...`` and ``-c statement_timeout=...``
      (:data:`LOCK_TIMEOUT`, :data:`STATEMENT_TIMEOUT` seconds), each unless the string's
      ``options`` (or, without them, ``PGOPTIONS``) set it. Options already given are kept
      in front: the argument replaces the string's ``options`` and libpq's reading of
      ``PGOPTIONS``, so both are carried over.
    """
    params = _conninfo(url)
    extra: dict[str, Any] = {}
    if "connect_timeout" not in params and not os.environ.get("PGCONNECT_TIMEOUT"):
        extra["connect_timeout"] = CONNECT_TIMEOUT
    given = str(params["options"]) if params.get("options") else os.environ.get("PGOPTIONS", "")
    timeouts = (("lock_timeout", LOCK_TIMEOUT), ("statement_timeout", STATEMENT_TIMEOUT))
    added = [f"-c {name}={seconds * 1000}" for name, seconds in timeouts if name not in given]
    if added:
        extra["options"] = " ".join([given.strip(), *added]).strip()
    return extra


@contextlib.contextmanager
def open_backend(spec: SaverSpec, name: str, workdir: Path) -> Iterator[Backend]:
    """Open the saver ``spec`` names, ready to use, and close it on exit.

    Args:
        spec: The parsed ``--saver``.
        name: A label for this run's storage (``"bare"``, ``"bounded"``); SQLite uses it
            as the file name.
        workdir: Where SQLite files go.

    Yields:
        The backend.

    Raises:
        DemoError: The database cannot be reached or set up, or a driver is missing.
    """
    if spec.kind == "sqlite":
        with _sqlite_backend(workdir / f"{name}.sqlite") as backend:
            yield backend
    elif spec.kind == "postgres":
        with _postgres_backend(spec.url) as backend:
            yield backend
    else:
        with _cosmos_backend() as backend:
            yield backend


def _sqlite_thread_bytes(conn: sqlite3.Connection) -> str:
    """The query summing the lengths of every column of a thread's rows in SqliteSaver's two
    tables, built from the columns the installed langgraph-checkpoint-sqlite created (they
    differ between releases: ``writes.task_path`` came in 3.x)."""
    parts = []
    for table in ("checkpoints", "writes"):
        columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
        total = " + ".join(f"COALESCE(length({name}), 0)" for name in columns)
        parts.append(f"(SELECT COALESCE(SUM({total}), 0) FROM {table} WHERE thread_id = :t)")
    return "SELECT " + " + ".join(parts)


_POSTGRES_THREAD_BYTES = """
SELECT
  (SELECT COALESCE(SUM(pg_column_size(t.*)), 0) FROM checkpoints t WHERE thread_id = %(t)s)
  + (SELECT COALESCE(SUM(pg_column_size(t.*)), 0) FROM checkpoint_blobs t WHERE thread_id = %(t)s)
  + (SELECT COALESCE(SUM(pg_column_size(t.*)), 0) FROM checkpoint_writes t
     WHERE thread_id = %(t)s)
"""


#: keep_latest for SqliteSaver's two tables: each namespace's newest checkpoint stays (its
#: id is the largest: LangGraph's checkpoint ids grow with time), and the writes of the
#: checkpoints that go, go with them.
_SQLITE_PRUNE = (
    """DELETE FROM checkpoints WHERE thread_id = :t AND checkpoint_id < (
         SELECT MAX(newest.checkpoint_id) FROM checkpoints AS newest
         WHERE newest.thread_id = :t AND newest.checkpoint_ns = checkpoints.checkpoint_ns)""",
    """DELETE FROM writes WHERE thread_id = :t AND NOT EXISTS (
         SELECT 1 FROM checkpoints AS kept WHERE kept.thread_id = :t
         AND kept.checkpoint_ns = writes.checkpoint_ns
         AND kept.checkpoint_id = writes.checkpoint_id)""",
)


def _pruning_sqlite_saver(conn: sqlite3.Connection) -> Any:
    """A ``SqliteSaver`` with the ``prune(strategy="keep_latest")`` that
    langgraph-checkpoint-sqlite does not have, so ``keep_checkpoints`` runs on the demo's
    default backend too (the demo's graph holds no ``DeltaChannel``, whose history a
    prune could cut)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    class PruningSqliteSaver(SqliteSaver):
        def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
            if strategy != "keep_latest":
                raise NotImplementedError(
                    f"the demo's SQLite saver prunes keep_latest only, not {strategy!r}"
                )
            with self.cursor() as cur:
                for thread_id in thread_ids:
                    for statement in _SQLITE_PRUNE:
                        cur.execute(statement, {"t": str(thread_id)})

    return PruningSqliteSaver(conn)


@contextlib.contextmanager
def _sqlite_backend(path: Path) -> Iterator[Backend]:
    require((("langgraph.checkpoint.sqlite", "langgraph-checkpoint-sqlite"),))

    try:
        conn = sqlite3.connect(str(path), check_same_thread=False)
        # WAL with synchronous=NORMAL, the usual setting for an application database: without
        # it every put waits for an fsync, and the timings measure the disk, not the saver.
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        saver = _pruning_sqlite_saver(conn)
        saver.setup()
    except sqlite3.Error as exc:
        raise DemoError(f"cannot create the SQLite database {str(path)!r}: {exc}") from exc

    query = _sqlite_thread_bytes(conn)

    def measure(thread_id: str) -> int:
        row = conn.execute(query, {"t": thread_id}).fetchone()
        return int(row[0])

    try:
        yield Backend(saver, measure)
    finally:
        conn.close()


@contextlib.contextmanager
def _postgres_backend(url: str) -> Iterator[Backend]:
    needed = (
        ("psycopg", "psycopg"),
        ("langgraph.checkpoint.postgres", "langgraph-checkpoint-postgres"),
    )
    require(needed, _POSTGRES_INSTALL)
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    params = _conninfo(url)
    secrets = _secrets(params)
    where = redact(url)
    try:
        conn = psycopg.connect(
            url,
            autocommit=True,
            prepare_threshold=0,
            row_factory=dict_row,
            **connect_kwargs(url),
        )
    except psycopg.Error as exc:
        reason = _first_line(exc, secrets)
        raise DemoError(
            f"cannot connect to PostgreSQL at {where}: {reason}; check that the server is "
            "running and that the host, port, user, password and database are right"
        ) from exc
    try:
        saver = PostgresSaver(conn)
        try:
            saver.setup()
        except psycopg.Error as exc:
            reason = _scrub(" ".join(str(exc).split()), secrets)
            raise DemoError(
                f"cannot create LangGraph's checkpoint tables in {where}: {reason}; check "
                "that the user may create tables in the database"
            ) from exc

        def measure(thread_id: str) -> int:
            row = conn.execute(_POSTGRES_THREAD_BYTES, {"t": thread_id}).fetchone()
            return int(next(iter(row.values()))) if row else 0

        def cleanup(threads: Sequence[str]) -> None:
            for thread in threads:
                saver.delete_thread(thread)

        try:
            yield Backend(saver, measure, cleanup)
        except psycopg.Error as exc:
            # During the run: a lock another session holds (lock_timeout), a statement cut
            # off (statement_timeout), the server gone. One line, the password scrubbed.
            reason = _first_line(exc, secrets)
            raise DemoError(
                f"PostgreSQL at {where} stopped the demo: {reason}; if another session "
                "holds a lock on LangGraph's checkpoint tables, end it and run again"
            ) from exc
    finally:
        conn.close()


@contextlib.contextmanager
def _cosmos_backend() -> Iterator[Backend]:
    missing = [name for name in COSMOS_ENV if not os.environ.get(name)]
    if missing:
        raise DemoError(
            f"--saver cosmosdb reads the account from the environment: set {' and '.join(missing)}"
            " (COSMOSDB_CA_FILE optionally names a CA bundle, e.g. for a local emulator)"
        )
    # Imported here and only here: the core never imports the Cosmos DB package.
    require((("agentstate_cosmosdb", "agentstate-cosmosdb"),), _COSMOS_INSTALL)
    from agentstate_cosmosdb import CosmosDBSaver
    from agentstate_cosmosdb.errors import CosmosSaverError

    endpoint = os.environ["COSMOSDB_ENDPOINT"]
    database = os.environ.get("COSMOSDB_DATABASE", "agentstate-demo")
    container_name = os.environ.get("COSMOSDB_CONTAINER", "demo-checkpoints")
    verify: bool | str = os.environ.get("COSMOSDB_CA_FILE") or True
    try:
        saver = CosmosDBSaver(
            database,
            container_name,
            connection_verify=verify,
            retry_total=1,
            connection_timeout=5,
        )
        saver.setup()
    except CosmosSaverError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DemoError(
            f"cannot use Cosmos DB at {endpoint} (database {database!r}, container "
            f"{container_name!r}): {first}; check COSMOSDB_ENDPOINT, COSMOSDB_KEY and "
            "COSMOSDB_CA_FILE"
        ) from exc

    def measure(thread_id: str) -> int:
        docs = saver.thread_documents(thread_id)
        return sum(len(json.dumps(doc, separators=(",", ":")).encode()) for doc in docs)

    def cleanup(threads: Sequence[str]) -> None:
        for thread in threads:
            saver.delete_thread(thread)

    try:
        yield Backend(saver, measure, cleanup)
    finally:
        saver.close()
