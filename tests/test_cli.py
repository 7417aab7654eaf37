"""The CLI: the JSON envelope of every command, errors, and a light --help."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from docshelf.cli import app, options
from tests.screen import plain

runner = CliRunner()


def run(*args: str) -> tuple[int, dict[str, Any]]:
    # DOCSHELF_EMBEDDER=none keeps these tests free of the model; the envelope
    # is the same whatever the embedder.
    result = runner.invoke(app, ["--json", *args], env={"DOCSHELF_EMBEDDER": "none"})
    lines = [ln for ln in result.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stdout
    return result.exit_code, json.loads(lines[0])


def check_envelope(env: dict[str, Any], command: str, ok: bool = True) -> None:
    assert set(env) == {"ok", "command", "result", "next_actions", "error"}
    assert env["command"] == command
    assert env["ok"] is ok
    for action in env["next_actions"]:
        assert set(action) == {"command", "description"}
        assert action["command"].startswith("docshelf")
    if ok:
        assert env["error"] is None and env["next_actions"]
    else:
        assert set(env["error"]) == {"code", "message"} and env["result"] is None


def test_every_command_speaks_the_envelope(notes: Path, tmp_path: Path) -> None:
    code, env = run("add", str(notes))
    check_envelope(env, "add")
    assert code == 0
    assert set(env["result"]) == {"source_id", "counts", "failures"}
    assert set(env["result"]["counts"]) >= {"added", "updated", "unchanged", "removed", "failed"}
    assert env["result"]["counts"]["added"] == 3

    code, env = run("sync")
    check_envelope(env, "sync")
    assert env["result"]["counts"]["unchanged"] == 3

    code, env = run("search", "leader election", "--limit", "3")
    check_envelope(env, "search")
    r = env["result"]
    assert r["mode"] == "lexical" and r["query"] == "leader election"
    hit = r["hits"][0]
    # (and the rules that rank it above hits of higher score, if any: `placed_by`)
    assert set(hit) - {"placed_by"} == {
        "chunk_id",
        "document_id",
        "score",
        "scores",
        "text",
        "citation",
        "display_text",  # the text as a person reads it (issue 42)
        "weak",
    }
    assert set(hit["scores"]) == {"lexical", "vector", "fused"}
    assert set(hit["citation"]) == {
        "label",
        "path",
        "title",
        "heading_path",
        "chunk_index",
        "page_start",
        "page_end",
        "anchor",
    }
    assert "context" in env["next_actions"][0]["command"]

    code, env = run("context", hit["chunk_id"], "--mode", "parent-section")
    check_envelope(env, "context")
    assert set(env["result"]) == {"chunk_id", "mode", "text", "chunks", "citation"} | {
        "hit",  # where the hit's text is, the text as a person reads it (issue 42)
        "display",
        "cut",
    }

    code, env = run("list")
    check_envelope(env, "list")
    doc_id = env["result"]["documents"][0]["id"]

    code, env = run("show", doc_id)
    check_envelope(env, "show")
    for key in (
        "id",
        "title",
        "path",
        "source_id",
        "source_host",
        "file_type",
        "tags",
        "size_bytes",
        "sha256",
        "added_at",
        "updated_at",
        "status",
        "chunk_counts",
        "embedding_model",
        "concept_ids",
        "page_count",
        "pages_without_text",
    ):
        assert key in env["result"]

    code, env = run("status", "--check")
    check_envelope(env, "status")
    assert env["result"]["documents"] == 3 and env["result"]["problems"] == []
    assert "embedding_coverage" in env["result"] and "failed" in env["result"]

    code, env = run("remove", str(notes))
    check_envelope(env, "remove")
    assert env["result"]["counts"]["removed"] == 3


def test_eval_envelope(tmp_path: Path) -> None:
    ds = tmp_path / "tiny"
    (ds / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": "d1", "title": "Raft", "text": "Raft elects a leader with heartbeats."},
        {"_id": "d2", "title": "Bread", "text": "Sourdough needs a starter and flour."},
        {"_id": "d3", "title": "Paxos", "text": "Paxos reaches consensus among acceptors."},
    ]
    (ds / "corpus.jsonl").write_text("\n".join(json.dumps(c) for c in corpus))
    (ds / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "leader heartbeats"})
        + "\n"
        + json.dumps({"_id": "q2", "text": "sourdough starter"})
    )
    (ds / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq2\td2\t1\n")
    code, env = run("eval", str(ds), "--mode", "lexical")
    check_envelope(env, "eval")
    assert code == 0
    r = env["result"]
    assert set(r) >= {  # SPEC §9, plus the candidate recall and stage latencies
        "dataset",
        "queries",
        "ndcg@10",
        "recall@10",
        "mrr@10",
        "p50_ms",
        "p95_ms",
        "mode",
    }
    assert r["queries"] == 2 and r["ndcg@10"] == 1.0 and r["mode"] == "lexical"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("show", "doc_nope"), "not_found"),
        (("context", "chunk_nope_1"), "not_found"),
        (("remove", "src_nope"), "not_found"),
        (("search", "x", "--filter", "colour=red"), "invalid_input"),
        (("search", "x", "--mode", "psychic"), "invalid_input"),
        (("search", "  "), "invalid_input"),
        (("add", "/definitely/not/here"), "not_found"),
        (("eval", "/definitely/not/here"), "invalid_input"),
        (("sync", "src_nope"), "not_found"),
    ],
)
def test_errors_are_envelopes(args: tuple[str, ...], code: str) -> None:
    exit_code, env = run(*args)
    check_envelope(env, args[0], ok=False)
    assert env["error"]["code"] == code
    assert exit_code == 1


def test_home_option_overrides_env(tmp_path: Path, notes: Path) -> None:
    other = tmp_path / "other-home"
    run("--home", str(other), "add", str(notes / "todo.txt"))
    assert (other / "docshelf.db").exists()
    _, env = run("--home", str(other), "status")
    assert env["result"]["documents"] == 1
    _, env = run("status")
    assert env["result"]["documents"] == 0


def test_help_is_fast_and_imports_no_model_stack(tmp_path: Path) -> None:
    code = (
        "import sys; from docshelf.cli import app; "
        "heavy = [m for m in ('torch', 'sentence_transformers', 'transformers', 'numpy') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    help_out = subprocess.run(
        [sys.executable, "-m", "docshelf.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "DOCSHELF_HOME": str(tmp_path)},
    )
    for command in ("add", "sync", "list", "show", "status", "search", "context", "remove", "eval"):
        assert command in help_out.stdout


def test_status_imports_no_model_stack(tmp_path: Path, notes: Path) -> None:
    code = (
        "import sys; from docshelf.cli import main, quick\n"
        "sys.argv = ['docshelf', '--json', 'status']\n"
        "quick.exit_now = lambda: None  # (so the lines after main() run)\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print([m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "DOCSHELF_HOME": str(tmp_path)},
    )
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_users_and_retry_envelopes(isolated_home: Path) -> None:
    code, env = run("users", "create", "alice")
    assert code == 0
    check_envelope(env, "users create")
    assert set(env["result"]) == {"user_id", "token"} and env["result"]["token"].startswith("dsk_")
    _, env = run("users", "create", "alice")
    check_envelope(env, "users create", ok=False)
    assert env["error"]["code"] == "conflict"
    _, env = run("users", "create", "../bad name")
    assert env["error"]["code"] == "invalid_input"
    _, env = run("users", "list")
    check_envelope(env, "users list")
    assert [u["name"] for u in env["result"]["users"]] == ["alice"]
    assert "token" not in json.dumps(env["result"])
    _, env = run("users", "revoke", "alice")
    check_envelope(env, "users revoke")
    assert env["result"]["revoked"] is True

    from docshelf.ingest.worker import Worker
    from docshelf.shelf import Shelf

    with Shelf(isolated_home, embedder=None) as shelf:
        user = shelf.create_user("bob")[0].id
        bad = shelf.upload(user, "bad.md", b"\xff\xfe broken")
        Worker(shelf).run_once()
        assert shelf.job(bad.document_id).status == "failed"
    code, env = run("retry", bad.document_id)
    assert code == 0
    check_envelope(env, "retry")
    assert env["result"]["status"] == "queued"
    _, env = run("retry", bad.document_id)
    assert env["error"]["code"] == "conflict"
    _, env = run("retry", "doc_nope")
    assert env["error"]["code"] == "not_found"


HEAVY = ("torch", "transformers", "tokenizers", "onnxruntime", "numpy", "markdown_it", "yaml")
ONLY_WHEN_USED = ("pathspec", "prometheus_client", "asyncio")
# what a sync or a status with nothing to do never needs: the typer app (the quick path
# reads the line), the search side, uploads, accounts, parsing and chunking, the
# services a library may be configured with, and the modules they pull in
NOT_AT_START = (
    "typer",
    "click",
    "pydantic",
    "uuid",
    "socket",
    "secrets",
    "docshelf.search.retriever",
    "docshelf.search.order",
    "docshelf.search.cache",
    "docshelf.catalogue",
    "docshelf.ingest.prepare",
    "docshelf.ingest.uploads",
    "docshelf.accounts.users",
    "docshelf.chunk",
    "docshelf.knowledge.taxonomy",
    "docshelf.llm",
    "docshelf.rerank",
    "docshelf.transport",
    "docshelf.blobs",
    "docshelf.shared.caches",
    "rich.progress",  # a terminal's bars come up only for work that lasts (LateBars)
)
# a person's terminal: rich draws, on a stdout that says it is a terminal
AT_A_TERMINAL = "\n".join(
    [
        "import io",
        "out = io.StringIO()",
        "out.isatty = lambda: True",
        "err = io.StringIO()",
        "err.isatty = lambda: True",
        "real, sys.stdout, sys.stderr = sys.stdout, out, err",
        # the bars appear once a command has run for 0.3 s, by design, which a loaded
        # machine reaches with nothing wrong: the imports checked are those of the start
        "import docshelf.cli.progress",
        "docshelf.cli.progress.SHOW_AFTER = 3600.0\n",
    ]
)


def _modules_after(
    argv: list[str], home: Path, embedder: str, *, terminal: bool = False
) -> list[str]:
    """The heavy modules a new ``docshelf`` process imported to run ``argv`` (as JSON,
    or on a terminal)."""
    names = HEAVY + ONLY_WHEN_USED + NOT_AT_START
    code = (
        "import sys\nfrom docshelf.cli import main, quick\n"
        "quick.exit_now = lambda: None  # (so the lines after main() run)\n"
        f"sys.argv = ['docshelf', *{(argv if terminal else ['--json', *argv])!r}]\n"
        + (AT_A_TERMINAL if terminal else "")
        + "try:\n    main()\nexcept SystemExit:\n    pass\n"
        + ("real.write(out.getvalue())\nsys.stdout = real\n" if terminal else "")
        + f"print([m for m in {names!r} if m in sys.modules])"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCSHELF_")}
    env.update(DOCSHELF_HOME=str(home), DOCSHELF_EMBEDDER=embedder, DOCSHELF_ENRICH="off")
    env.update(DOCSHELF_SEARCH_HELPER="off")  # a search answers in this process
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert ("Synced" if terminal else '"ok": true') in out.stdout, out.stdout + out.stderr
    return list(json.loads(out.stdout.strip().splitlines()[-1].replace("'", '"')))


def test_an_unchanged_sync_imports_no_parser_no_numpy_and_loads_no_model(
    tmp_path: Path, notes: Path
) -> None:
    from docshelf.embed import local_available
    from docshelf.embed.local import MODEL_ID
    from docshelf.shelf import Shelf
    from tests.fakes import HashEmbedder

    lexical = tmp_path / "lexical"
    with Shelf(lexical, embedder=None) as shelf:
        shelf.add(notes)
    assert _modules_after(["sync"], lexical, "none") == []
    # a person's `docshelf sync`: the same, with rich to draw it (and no typer)
    assert _modules_after(["sync"], lexical, "none", terminal=True) == []
    if not local_available():
        return
    # a library bound to the packaged model: sync binds the embedder, never loads it
    bound = tmp_path / "bound"
    with Shelf(bound, embedder=HashEmbedder(MODEL_ID, dim=384)) as shelf:
        shelf.add(notes)
    assert _modules_after(["sync"], bound, "local") == []
    # the check sees imports: a changed folder is parsed (lexical: still no numpy)
    (notes / "new.md").write_text("# New\n\nA note that appeared since.\n")
    assert "markdown_it" in _modules_after(["sync"], lexical, "none")


def test_a_lexical_search_imports_no_model_runtime_even_on_a_library_bound_to_the_model(
    tmp_path: Path, notes: Path
) -> None:
    """`--mode lexical` embeds no query: the query model is bound (its id checked against
    the library's) but neither ONNX Runtime, nor tokenizers, nor numpy is imported."""
    from docshelf.embed import local_available
    from docshelf.embed.local import MODEL_ID
    from docshelf.shelf import Shelf
    from tests.fakes import HashEmbedder

    if not local_available():
        pytest.skip("the packaged model is not installed (docshelf[local])")
    bound = tmp_path / "bound"
    with Shelf(bound, embedder=HashEmbedder(MODEL_ID, dim=384)) as shelf:
        shelf.add(notes)
    argv = ["search", "leader election", "--mode", "lexical"]
    imported = _modules_after(argv, bound, "local")
    assert not {"numpy", "onnxruntime", "tokenizers", "torch"} & set(imported), imported


# -- the quick path (cli/quick.py) reads an argument line as the typer app does ---------


def _typer_reads(argv: list[str]) -> tuple[Any, ...] | None:
    """What the typer app's parser makes of ``argv`` for sync, status or search: the
    command, home, --json, --progress and the command's values; None for anything it
    refuses (or helps with)."""
    import typer.main

    group: Any = typer.main.get_command(app)
    try:
        with group.make_context("docshelf", list(argv)) as ctx:
            protected = getattr(ctx, "_protected_args", None)  # click 8.2; 8.1: public
            rest = [*(ctx.protected_args if protected is None else protected), *ctx.args]
            name, sub, rest = group.resolve_command(ctx, rest)
            assert sub is not None and name is not None
            if name not in options.COMMANDS:
                return None
            with sub.make_context(name, rest, parent=ctx) as sub_ctx:
                values = dict(sub_ctx.params)
    except Exception:  # a usage error, or --help's exit (typer's click raises both)
        return None
    json_out = values.pop("json_out") or ctx.params["json_out"]
    progress = values.pop("progress_out", False)
    if "filter_" in values:
        values["filter_"] = list(values["filter_"]) if values["filter_"] else None
    return (name, ctx.params["home"], json_out, progress, values)


# what people and agents type: the quick path's own (no typer at start-up)
PLAIN = [
    ["sync"],
    ["sync", "src_1"],
    ["--home", "h", "--json", "sync", "src_1", "--json"],
    ["--home=h", "sync", "--progress", "--json"],
    ["--json", "--home", "h", "sync"],
    ["status"],
    ["status", "--check", "--check"],
    ["search", "q"],
    ["--json", "search", "q", "-n", "3"],
    ["search", "--limit=4", "q", "--json"],
    ["search", "q", "--mode", "lexical", "--filter", "tag=a", "--filter=type=md"],
    ["search", "q", "--group", "document", "--expand", "parent-section"],
    ["search", "q", "--limit", "2", "--limit", "3"],
]
LINES = [
    *PLAIN,
    ["sync", "a", "b"],
    ["sync", "--help"],
    ["sync", "--home", "h"],
    ["sync", "--", "--odd-name"],
    ["syn"],
    ["--", "sync"],
    ["--json", "--", "search", "q"],
    ["sync", "--json", "--", "src_1"],
    ["sync", "--", "--json"],
    ["status", "x"],
    ["status", "--chec"],
    ["search", "q", "--limit", "x"],
    ["search", "q", "--limit", "-1"],
    ["search", "q", "--limit", "٣"],
    ["search", "q", "--limit", " 3 "],
    ["search", "q", "--limit", "+3"],
    ["search", "q", "--limit", "0x10"],
    ["search", "q", "--limit", "1_000"],
    ["search", "q", "-n3"],
    ["search", "q", "-n=3"],
    ["search", "q", "--lim", "3"],
    ["search", "q", "--mode"],
    ["search", "q", "--mode", "--json"],
    ["search", "q", "--mode", "-x"],
    ["search", "q", "--unknown"],
    ["search", "--", "-q"],
    ["search", "-q"],
    ["search", "-1"],
    ["search", "-1.5"],
    ["sync", "-5"],
    ["search", "q", "-n", "-2"],
    ["search", "q", "--filter", "-x"],
    ["search"],
    ["search", "a", "b"],
    ["search", "q", "--filter="],
    ["--home", "search", "q"],
    ["--home=", "search", "q"],
    ["--verbose", "search", "q"],
    ["search", "q\udcff"],
    ["--help"],
    [],
    ["list"],
]


@pytest.mark.parametrize("argv", LINES)
def test_the_quick_path_reads_a_line_as_typer_does_or_leaves_it_to_typer(argv: list[str]) -> None:
    from docshelf.cli import quick

    mine = quick.parse(argv)
    if mine is None:
        return  # the typer app parses it, errors and all
    theirs = _typer_reads(argv)
    assert theirs is not None, f"quick reads {argv} but typer refuses it"
    assert tuple(mine) == theirs


def test_the_quick_path_reads_the_plain_lines_itself() -> None:
    """The lines people and agents type are the quick path's (no typer at start-up)."""
    from docshelf.cli import quick

    for argv in PLAIN:
        assert quick.parse(argv) is not None, argv


def test_every_option_of_the_typer_commands_is_the_quick_paths() -> None:
    """The typer commands sync, status and search take exactly the parameters of
    cli/options.py, with the same flags, so the quick path's argparse reads them all."""
    import typer.main

    group: Any = typer.main.get_command(app)
    for name, (params, with_progress) in options.COMMANDS.items():
        command = group.commands[name]
        declared = {
            p.name: (tuple(sorted(p.opts)), p.multiple, getattr(p, "is_flag", False))
            for p in command.params
        }
        wanted = {
            p.name: (tuple(sorted(p.flags)) or (p.name,), p.many, p.type is bool)
            for p in (*params, options.JSON, *((options.PROGRESS,) if with_progress else ()))
        }
        assert declared == wanted, name
    root = {p.name: tuple(p.opts) for p in group.params}
    assert root == {"home": options.HOME.flags, "json_out": options.JSON.flags}


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "q", "--bogus"],
        ["sync", "--bogus"],
        ["status", "--check=yes"],
        ["search", "q", "--limit", "many"],
        ["search"],
        ["sync", "a", "b"],
    ],
)
def test_a_bad_line_gets_typers_error_and_exit_status(argv: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "DOCSHELF_HOME": str(tmp_path), "DOCSHELF_EMBEDDER": "none"}
    seen = []
    for face, code in (
        ("quick", "from docshelf.cli import main; main()"),  # the command as installed
        ("typer", "from docshelf.cli.typer_app import app; app()"),  # typer alone
    ):
        script = tmp_path / face / "docshelf"  # the program's name in the usage line
        script.parent.mkdir()
        script.write_text(code + "\n")
        done = subprocess.run(
            [sys.executable, str(script), *argv], capture_output=True, text=True, env=env
        )
        seen.append((done.returncode, done.stdout, done.stderr))
    assert seen[0] == seen[1]
    assert seen[0][0] == 2 and "Error" in seen[0][2] and not seen[0][1]


@pytest.mark.parametrize("busy", [False, True])
def test_a_one_shot_command_ends_at_once_and_loses_no_output(busy: bool, tmp_path: Path) -> None:
    """The installed command skips the interpreter's finalisation once a quick command
    has answered (an atexit hook never runs), unless a thread is still at work, which
    then finishes; the JSON is whole either way. (The thread works until the command
    has answered, however long that takes on a busy machine.)"""
    finalised, worked = tmp_path / "finalised", tmp_path / "worked"
    script = tmp_path / "docshelf"
    script.write_text(
        "import atexit, sys, threading\n"
        f"atexit.register(lambda: open({str(finalised)!r}, 'w').close())\n"
        "answered = threading.Event()\n"
        f"def work():\n    answered.wait(600)\n    open({str(worked)!r}, 'w').close()\n"
        f"if {busy}:\n    threading.Thread(target=work).start()\n"
        "from docshelf.cli import main\nmain()\nanswered.set()\n"
    )
    env = {**os.environ, "DOCSHELF_HOME": str(tmp_path / "home"), "DOCSHELF_EMBEDDER": "none"}
    done = subprocess.run(
        [sys.executable, str(script), "--json", "status"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True
    assert worked.exists() is busy
    assert finalised.exists() is busy  # finalised only when a thread held the exit


def test_the_bars_come_up_only_for_work_that_lasts() -> None:
    import io
    import time

    from rich.console import Console

    from docshelf.cli.progress import LateBars
    from docshelf.progress import ProgressEvent

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    brief = LateBars("Syncing", lambda: console, after=60)
    brief(ProgressEvent("scan", 10, 10, "files", "a.md"))
    brief.close()
    assert not brief.shown and out.getvalue() == ""  # done before the bars were due

    lasting = LateBars("Syncing", lambda: console, after=0.05)
    lasting(ProgressEvent("scan", 3, None, "files", "a.md"))  # before the bars are up
    deadline = time.monotonic() + 10
    while not lasting.shown and time.monotonic() < deadline:
        time.sleep(0.02)
    assert lasting.shown  # up on time, though no event came since
    lasting(ProgressEvent("parse", 5, 10, "files", "b.md"))
    assert "parse" in lasting.board.line("work") and "5/10" in lasting.board.line("work")
    lasting.close()
    assert "Syncing" in out.getvalue()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_person_at_a_terminal_sees_the_same_from_both_paths(
    tmp_path: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the quick path draws on a terminal is what the typer app draws, errors too
    (each on a library of its own, of the same folder). The progress bars, which
    appear after a moment of work, are held back: a busy host reaches that moment."""
    from docshelf.cli import quick
    from docshelf.cli.typer_app import app as typer_app
    from docshelf.shelf import Shelf

    homes = {"quick": tmp_path / "a", "typer": tmp_path / "b"}
    for home in homes.values():
        with Shelf(home, embedder=None) as shelf:
            shelf.add(notes)
    (notes / "new.md").write_text("# New\n\nA note that appeared since.\n")
    lines = [
        ["sync"],  # one new file
        ["sync"],  # nothing to do
        ["status", "--check"],
        ["search", "flour", "--mode", "lexical", "-n", "2"],
        ["search", "zebra"],
        ["sync", "src_nope"],  # an error: a red line on stderr, exit 1
        ["search", "flour", "--mode", "psychic"],
    ]
    for argv in lines:
        seen = []
        for face, home in homes.items():
            out, err = _Terminal(), _Terminal()
            with monkeypatch.context() as m:
                m.setenv("DOCSHELF_EMBEDDER", "none")
                m.setenv("DOCSHELF_SEARCH_HELPER", "off")
                m.setattr("docshelf.cli.progress.SHOW_AFTER", 3600.0)
                m.setattr(sys, "stdout", out)
                m.setattr(sys, "stderr", err)
                code = 0
                try:
                    if face == "quick":
                        assert quick.main(["--home", str(home), *argv])
                    else:
                        typer_app(["--home", str(home), *argv], standalone_mode=False)
                except SystemExit as exc:
                    code = int(exc.code or 0)
            shown = (out.getvalue() + "\0" + err.getvalue()).replace(str(home), "HOME")
            seen.append((code, shown))
        assert seen[0] == seen[1], argv
        assert seen[0][1].strip("\0")  # something was shown


_TOKENS = [
    "sync", "status", "search", "list", "q", "a b", "src_1", "-", "--", "-1", "3", "٣",
    "--home", "--home=h", "h", "--json", "--progress", "--check", "--check=1", "--limit",
    "--limit=2", "-n", "-n3", "-n=3", "--mode", "lexical", "--mode=vector", "--filter",
    "tag=a", "--filter=type=md", "--group", "document", "--expand", "parent-section",
    "--help", "-h", "--unknown", "-x", "--lim", "=",
]  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_TOKENS), max_size=7))
def test_any_line_is_read_as_typer_reads_it_or_left_to_typer(argv: list[str]) -> None:
    from docshelf.cli import quick

    mine = quick.parse(argv)
    if mine is not None:
        assert tuple(mine) == _typer_reads(argv), argv


def test_add_at_a_terminal_prepares_search_only_for_a_library_with_a_model(
    tmp_path: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A library with a model makes its query model beside the indexing; when that is
    still at work once the files are indexed, the command says so while it waits. A
    lexical library makes none."""
    import threading

    from rich.console import Console  # cli/library.py's err_console is one

    from docshelf.cli.typer_app import app as typer_app
    from docshelf.runtime import Runtime

    asked: list[str] = []
    real_status = Console.status
    shown = threading.Event()
    prepared: list[bool] = []

    def status(self: Console, text: str, *args: object, **kwargs: object) -> object:
        asked.append(text)
        shown.set()
        return real_status(self, text)

    def prepare(self: Runtime) -> bool:
        prepared.append(shown.wait(10))  # still at work until the command says so
        return True

    for embedder, home in (("none", tmp_path / "lexical"), ("hash", tmp_path / "model")):
        with monkeypatch.context() as m:
            m.setenv("DOCSHELF_EMBEDDER", "none")
            m.setattr(sys, "stdout", _Terminal())
            m.setattr(sys, "stderr", _Terminal())
            m.setattr(Console, "status", status)
            m.setattr(Runtime, "prepare_query_model", prepare)
            if embedder == "hash":
                from tests.fakes import HashEmbedder

                m.setattr(
                    "docshelf.runtime.Runtime._bind_embedder",
                    lambda self, given, check: HashEmbedder("hash-model", dim=8),
                )
            typer_app(["--home", str(home), "add", str(notes)], standalone_mode=False)
        assert asked == ([] if embedder == "none" else ["Preparing search…"]), embedder
        assert prepared == ([] if embedder == "none" else [True]), embedder
        asked.clear()


def test_a_hit_is_shown_on_a_terminal_as_text_without_its_markup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from docshelf.cli import quick
    from docshelf.shelf import Shelf

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "raft.md").write_text(
        "# Raft\n\n## Leader election\n\nA **follower** that hears no heartbeat becomes a "
        "[candidate](https://raft.github.io) and asks [[Votes|for votes]].\n"
    )
    with Shelf(tmp_path / "home", embedder=None) as shelf:
        shelf.add(folder)
    out = _Terminal()
    with monkeypatch.context() as m:
        m.setenv("DOCSHELF_EMBEDDER", "none")
        m.setenv("DOCSHELF_SEARCH_HELPER", "off")
        m.setenv("COLUMNS", "200")
        m.setattr(sys, "stdout", out)
        m.setattr(sys, "stderr", _Terminal())
        assert quick.main(["--home", str(tmp_path / "home"), "search", "heartbeat"])
    shown = " ".join(plain(out.getvalue()).split())
    assert "A follower that hears no heartbeat becomes a candidate and asks for votes." in shown
    assert "**" not in shown and "](" not in shown and "[[" not in shown and "## " not in shown
    # the place under the title: its headings once, the title (which heads the file) once
    assert "§ Leader election chunk_" in shown and shown.count("Raft") == 1, shown


@pytest.mark.parametrize("set_before", [None, "2"])
def test_a_one_shot_command_keeps_numpys_blas_to_one_thread_unless_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, set_before: str | None
) -> None:
    """OpenBLAS reads its thread count when numpy is first imported, which a search
    does after the quick path has set it; a person's own setting is kept."""
    from docshelf.cli import quick

    with monkeypatch.context() as m:
        m.setenv("OPENBLAS_NUM_THREADS", set_before or "")  # (restored whatever happens)
        if set_before is None:
            m.delenv("OPENBLAS_NUM_THREADS")
        m.setenv("DOCSHELF_EMBEDDER", "none")
        m.setattr(sys, "stdout", io.StringIO())
        assert quick.main(["--home", str(tmp_path / "home"), "--json", "status"])
        assert os.environ["OPENBLAS_NUM_THREADS"] == (set_before or "1")
