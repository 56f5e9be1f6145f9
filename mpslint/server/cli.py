"""``mpslint server``: the click command (imported only when invoked)."""

from __future__ import annotations

import click


@click.command("server")
@click.option("--stdio", is_flag=True, help="Speak LSP over stdin/stdout (the default and only transport).")
def server_cmd(stdio):
    """Run the language server over stdio (see docs/editors.md)."""
    try:
        from .server import main
    except ImportError as e:
        raise click.UsageError(f"the language server needs pygls and lsprotocol: pip install 'mpslint[server]' ({e})") from e
    main()
