"""The ``agentstate-reducer`` command (also ``python -m agentstate_reducer``).

Subcommands:

* ``demo`` (the default when none is given): a LangGraph tool-calling agent stored with a
  bare checkpoint saver and with ``ReducingCheckpointSaver``, side by side. See
  :mod:`agentstate_reducer.demo`. Options given without a subcommand are the demo's
  (``agentstate-reducer --turns 50`` is ``agentstate-reducer demo --turns 50``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import __version__

__all__ = ["build_parser", "main"]

_OWN_OPTIONS = ("-h", "--help", "--version")
"""The options of the command itself; any other leading option is the demo's."""

_DEMO_HELP = "run a tool-calling LangGraph agent bare and bounded, and compare what is stored"

_DEMO_EPILOG = """\
The agent is driven by a scripted chat model: no network, no API key. Each run uses a new
thread; with PostgreSQL or Cosmos DB the demo creates LangGraph's tables (or the database
and container) when missing and deletes its two threads at the end.

examples:
  agentstate-reducer demo
  agentstate-reducer demo --turns 500 --max-tokens 2000
  agentstate-reducer demo --saver postgresql://postgres@localhost:5432/postgres
"""


def build_parser() -> argparse.ArgumentParser:
    """The command's argument parser, with its ``demo`` subcommand.

    The parsed namespace carries ``subcommands`` (name -> parser), so an unknown option
    is reported with the usage of the subcommand it was given to.
    """
    from .demo import add_arguments

    parser = argparse.ArgumentParser(
        prog="agentstate-reducer",
        description="agentstate-reducer: keep LLM agent message histories bounded.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help=_DEMO_HELP,
        description=_DEMO_HELP[0].upper() + _DEMO_HELP[1:] + ".",
        epilog=_DEMO_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(demo)
    parser.set_defaults(subcommands={"demo": demo})
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status.

    Args:
        argv: The arguments after the program name; ``sys.argv[1:]`` when None. No
            subcommand runs ``demo``: with its defaults, or with the options given (any
            but the command's own ``-h``/``--help`` and ``--version``).

    Returns:
        0 on success, 1 when the demo hits a problem the user can fix (its message is on
        stderr), 2 for bad options (argparse's usage error), 130 when interrupted.
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or (args_list[0].startswith("-") and args_list[0] not in _OWN_OPTIONS):
        # demo is the default subcommand, so its options work without naming it
        args_list = ["demo", *args_list]
    parser = build_parser()
    try:
        args, unknown = parser.parse_known_args(args_list)
        if unknown:
            target = args.subcommands.get(args.command, parser)
            target.error(f"unrecognized arguments: {' '.join(unknown)}")
    except SystemExit as exc:  # argparse: --help, --version or a usage error
        return exc.code if isinstance(exc.code, int) else 2
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    from .demo import run_from_args

    return run_from_args(args)


if __name__ == "__main__":
    sys.exit(main())
