"""The ``tollway`` command. Scripts depend on its output: commands that create
something print the new id or key alone on stdout, list commands one line per item (a
JSON array with ``--json``); messages go to stderr.

A command that cannot do its work prints one line, ``tollway: <why>``, on stderr and
exits 2 when it was refused (arguments, configuration, a rule about accounts or keys)
or 1 when it could not be carried out (database unreachable, port in use, anything
unexpected); ``--traceback`` shows where instead. A closed standard output (``tollway
openapi | head``) ends it silently with 141, Ctrl-C with 130, as a shell reports them.
"""

from tollway.cli.command import build_parser, main
from tollway.cli.running import run_with_gateway
from tollway.cli.serving import bootstrap_demo

__all__ = ["bootstrap_demo", "build_parser", "main", "run_with_gateway"]
