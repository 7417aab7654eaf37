"""The long-running commands: worker, serve, mcp. They print no envelope: they run until
stopped and say so on stderr (stdout is the MCP protocol's)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.text import Text

from docshelf.cli.command import err_console, open_shelf_or_exit, plain_command, state

if TYPE_CHECKING:
    import threading

    from docshelf.ingest.worker import Worker
    from docshelf.ingest.worker_probe import WorkerProbe


Host = Annotated[str, typer.Option(help="Interface to listen on.")]
Port = Annotated[int, typer.Option(help="TCP port.")]


@plain_command()
def worker(
    ctx: typer.Context,
    count: Annotated[int, typer.Option("--count", "-c", help="Worker threads.", min=1)] = 1,
    lease: Annotated[float, typer.Option(help="Job lease in seconds.", min=1)] = 30.0,
    probe_port: Annotated[
        int | None,
        typer.Option(
            help="Serve /metrics and /healthz (live while every worker shows a sign of "
            "life within 5 minutes, or two leases if longer) on this port.",
            min=0,
            max=65535,
        ),
    ] = None,
    probe_host: Annotated[
        str, typer.Option(help="Interface for --probe-port (0.0.0.0 in a container).")
    ] = "127.0.0.1",
    nice: Annotated[
        int,
        typer.Option(help="Lower this process's CPU priority by this much (0-19).", min=0, max=19),
    ] = 0,
    lifeline: Annotated[
        bool, typer.Option("--lifeline", hidden=True, help="Run as `serve`'s worker process.")
    ] = False,
) -> None:
    """Run ingest workers against the store until interrupted (Ctrl-C or SIGTERM)."""
    import threading

    from docshelf.ingest.worker import Worker, WorkerSettings
    from docshelf.shutdown import run_workers
    from docshelf.telemetry import configure_tracing

    if nice:
        import os

        os.nice(nice)
    shelf = open_shelf_or_exit(state(ctx))
    configure_tracing()
    stop = threading.Event()
    if lifeline:  # serve's child: stdin wakes it and ends it (ingest/worker_process.py)
        shelf.service.follow_lifeline(stop)
    workers = [Worker(shelf, WorkerSettings(lease_seconds=lease)) for _ in range(count)]
    probes: list[WorkerProbe] = []

    def open_probe(threads: Sequence[threading.Thread]) -> None:
        probe = _worker_probe(
            workers,
            threads,
            probe_host,
            probe_port,
            max(300, 2 * lease),
            shelf.settings.metrics_token,
        )
        if probe is False:
            raise typer.Exit(1)
        if probe:
            probes.append(probe)

    try:
        code = run_workers(  # the one worker pool: threads, signals, drain (shutdown.py)
            workers,
            shelf.settings.drain_seconds,
            lambda: err_console.print(f"{count} worker(s) on {shelf.database}; Ctrl-C to stop"),
            prepare=open_probe,
            stop=stop,
        )
    finally:
        for probe in probes:
            probe.close()
        shelf.close()
    if code:
        raise typer.Exit(code)


def _worker_probe(
    workers: list[Worker],
    threads: Sequence[threading.Thread],
    host: str,
    port: int | None,
    stale: float,
    token: str | None,
) -> WorkerProbe | Literal[False] | None:
    """``docshelf worker``'s /metrics and /healthz when asked for; False when the port
    cannot be had (the error is printed)."""
    if port is None:
        return None
    from docshelf.ingest.worker_probe import WorkerProbe

    try:
        probe = WorkerProbe(workers, threads, host=host, port=port, stale_after=stale, token=token)
    except OSError as exc:
        err_console.print(Text(f"Cannot serve the probe on {host}:{port}: {exc}", style="red"))
        return False
    err_console.print(f"metrics and health on http://{host}:{probe.port}/")
    return probe


def _missing_extra(what: str, extra: str, exc: ImportError) -> typer.Exit:
    err_console.print(
        Text(f"{what} needs the `{extra}` extra: pip install 'docshelf[{extra}]' ({exc})")
    )
    return typer.Exit(1)


@plain_command()
def serve(
    ctx: typer.Context,
    host: Host = "127.0.0.1",
    port: Port = 8750,
    workers: Annotated[
        int | None,
        typer.Option(help="Ingest workers (default DOCSHELF_WORKERS or 1; 0 = none)."),
    ] = None,
    worker_process: Annotated[
        bool,
        typer.Option(
            "--worker-process/--in-process-workers",
            help="Run the workers in a process of their own, started and stopped with the "
            "server (ingest never holds the server's GIL; serve's /metrics then lacks the "
            "workers' series), or as threads of the server (the default).",
        ),
    ] = False,
    worker_nice: Annotated[
        int,
        typer.Option(
            help="With --worker-process: its CPU priority below the server's (0-19); on a "
            "busy machine requests come first.",
            min=0,
            max=19,
        ),
    ] = 10,
    watch_sources: Annotated[
        bool, typer.Option("--watch", help="Also follow the registered sources live.")
    ] = False,
) -> None:
    """Serve the HTTP API (and the web page) with background ingest workers.

    With --worker-process they run in a child process, started and stopped with the
    server."""
    from docshelf.telemetry import configure_tracing

    try:
        import uvicorn  # noqa: F401  (the server extra)

        from docshelf.api import create_app
        from docshelf.shutdown import serve as serve_until_stopped
    except ImportError as exc:
        raise _missing_extra("The server", "server", exc) from None
    shelf = open_shelf_or_exit(state(ctx))
    configure_tracing()
    token = shelf.local_admin_token()
    if token:
        err_console.print(Text("Admin token for this library (shown once, keep it):", style="bold"))
        err_console.print(Text(token, style="bold green"))
    n = shelf.settings.workers if workers is None else workers
    if watch_sources:
        from docshelf.ingest.watch import watch_in_background

        watch_in_background(shelf, lambda report: None)
    err_console.print(f"docshelf on http://{host}:{port}/  (API docs at /docs, {n} worker(s))")
    drain = shelf.settings.drain_seconds
    app = create_app(shelf, workers=n, worker_process=worker_process, worker_nice=worker_nice)
    code = serve_until_stopped(app, host, port, drain)  # shutdown.py
    shelf.close()
    if code:
        raise typer.Exit(code)


@plain_command()
def mcp(ctx: typer.Context) -> None:
    """Serve the library to AI agents over MCP on stdin/stdout.

    Tools: search_documents, get_context, list_sources, get_document. Acts as the
    local admin, like the other commands; `serve` also offers MCP over HTTP at /mcp,
    scoped to each token's user. Messages go to stderr: stdout carries the protocol.
    """
    try:
        from docshelf.integrations.mcp_server import run_stdio
    except ImportError as exc:
        raise _missing_extra("The MCP server", "mcp", exc) from None
    shelf = open_shelf_or_exit(state(ctx))
    try:
        run_stdio(shelf)
    finally:
        shelf.close()


@plain_command("llm-serve")
def llm_serve(
    ctx: typer.Context,
    host: Host = "127.0.0.1",
    port: Port = 8751,
    model: Annotated[
        Path | None,
        typer.Option(help="A GGUF file of your own instead of the packaged Gemma 3 270M."),
    ] = None,
    threads: Annotated[int, typer.Option(help="CPU threads for the model.", min=1)] = 2,
) -> None:
    """Serve a local model (the packaged Gemma 3 270M, GGUF) over an OpenAI-compatible API
    with llama.cpp, for `ask` and the other LLM features: then set DOCSHELF_LLM_URL and
    DOCSHELF_LLM_MODEL as it says. Needs the `local-llm` extra."""
    import os

    from docshelf.config import Settings
    from docshelf.errors import Unavailable
    from docshelf.llm import local

    try:
        home = Settings.from_env(state(ctx).home).home
        gguf = model or local.packaged_model(home / "models")
        name = local.MODEL if model is None else gguf.stem
        command = local.server_command(gguf, host=host, port=port, threads=threads, alias=name)
    except Unavailable as exc:
        err_console.print(Text(exc.message, style="red"))
        raise typer.Exit(1) from None
    err_console.print(
        f"{gguf.name} on http://{host}:{port}/v1 — for docshelf: "
        f"DOCSHELF_LLM_URL=http://{host}:{port}/v1 DOCSHELF_LLM_MODEL={name}"
    )
    os.execv(command[0], command)  # the server is this process from here: Ctrl-C stops it
