"""The ``tollway`` command. Scripts depend on its output: commands that create
something print the new id or key alone on stdout, list commands one line per item (a
JSON array with ``--json``); messages go to stderr.

A command that cannot do its work prints one line, ``tollway: <why>``, on stderr and
exits 2 when it was refused (arguments, configuration, a rule about accounts or keys)
or 1 when it could not be carried out (database unreachable, port in use, anything
unexpected); ``--traceback`` shows where instead. A closed standard output (``tollway
openapi | head``) ends it silently with 141, Ctrl-C with 130, as a shell reports them.

Plugins add click groups named after their products (``tollway chat ...``) through
``tollway_register_commands``; what their commands need is exported here.
"""

from tollway.cli.command import build_cli, main
from tollway.cli.running import (
    Choice,
    configured_settings,
    json_option,
    plugins_option,
    run_with_gateway,
)
from tollway.cli.serving import bootstrap_demo
from tollway.hookspecs import CommandRegistrar

__all__ = [
    "Choice",
    "CommandRegistrar",
    "bootstrap_demo",
    "build_cli",
    "configured_settings",
    "json_option",
    "main",
    "plugins_option",
    "run_with_gateway",
]
