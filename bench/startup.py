"""Start-up of the ``docshelf`` command as a whole new process, per code tree.

What a person or an agent pays before any work: the interpreter, the imports, opening
the library. One library of ``--files`` small Markdown files (lexical only,
``DOCSHELF_EMBEDDER=none``), built once per tree in ``--dir``; then, round-robin
(so a noisy moment hits every variant alike), after one warm-up each:

- ``sync``     ``docshelf sync`` with nothing changed: must parse and embed nothing
- ``search``   ``docshelf search "…" --mode lexical``, in-process
               (``DOCSHELF_SEARCH_HELPER=off``)
- ``search-auto``  the same search as by default: answered by the library's resident
               helper once the first search started it (a tree without one: in-process)
- ``help``     ``docshelf --help``
- ``status``   ``docshelf status``
- ``sync-tty``, ``status-tty``  the same as a person types them: stdout and stderr a
               terminal (a pseudo-terminal), so the human output and progress bars

``--tree NAME=SRC`` adds a code tree to compare (its ``src`` folder put first on
``PYTHONPATH``, run by this interpreter): e.g. a copy of the code before a change
(``git archive COMMIT | tar -x -C DIR``). The tree of this checkout is ``current``.
Then ``python -X importtime`` of one unchanged sync per tree, its ten slowest
imports (cumulative, microseconds).

    flock /tmp/docshelf-bench.lock .venv/bin/python bench/startup.py \\
        [--files 1000] [--runs 20] [--tree before=/path/to/old/src]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent / "src"
COMMANDS: dict[str, list[str]] = {
    "sync": ["sync"],
    "search": ["search", "retrieval of notes", "--mode", "lexical"],
    "help": ["--help"],
    "status": ["status"],
}
# The same commands on a pseudo-terminal: what a person at a terminal runs.
TTY = {"sync-tty": ["sync"], "status-tty": ["status"]}
# A search with DOCSHELF_SEARCH_HELPER=auto (the default): the first starts the
# library's helper, the next are answered by it (cli/resident.py); "search" is in-process.
HELPED = "search-auto"
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "notes",
    "retrieval",
    "search",
    "index",
    "vector",
    "lexical",
    "shelf",
    "folder",
    "document",
    "snippet",
    "section",
    "heading",
    "summary",
    "concept",
    "library",
    "query",
    "answer",
    "cite",
]


def make_folder(root: Path, files: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for n in range(files):
        sub = root / f"part{n % 20:02d}"
        sub.mkdir(exist_ok=True)
        words = " ".join(WORDS[(n * 7 + i) % len(WORDS)] for i in range(120))
        (sub / f"note{n:04d}.md").write_text(f"# Note {n}\n\n{words}\n\n## More\n\n{words}\n")


def env_for(src: Path, home: Path, helper: str = "off") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCSHELF_")}
    # as installed: modules compiled once to .pyc (without it every run recompiles them)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(
        PYTHONPATH=str(src),
        DOCSHELF_HOME=str(home),
        DOCSHELF_EMBEDDER="none",
        DOCSHELF_ENRICH="off",
        DOCSHELF_SEARCH_HELPER=helper,
    )
    return env


CPU: dict[tuple[str, str], list[float]] = {}  # (command, tree): user + system seconds


def docshelf(
    src: Path, home: Path, args: list[str], helper: str = "off", tty: bool = False
) -> float:
    """One command as a new process: its wall time (its CPU time into ``LAST_CPU``);
    with ``tty``, on a pseudo-terminal (read to the end, as a terminal would)."""
    started = time.perf_counter()
    argv = [sys.executable, "-m", "docshelf.cli", *args]
    if tty:
        import pty

        pid, fd = pty.fork()
        if pid == 0:  # the child: stdin, stdout and stderr are the terminal
            os.execve(argv[0], argv, env_for(src, home, helper))
        while True:
            try:
                if not os.read(fd, 65536):
                    break
            except OSError:  # the terminal closed with the child
                break
        _, status, usage = os.wait4(pid, 0)
        os.close(fd)
    else:
        proc = subprocess.Popen(
            argv,
            env=env_for(src, home, helper),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"docshelf {' '.join(args)} failed ({code})")
    LAST_CPU[0] = usage.ru_utime + usage.ru_stime
    return took


LAST_CPU = [0.0]
LOAD_AT_START = 0.0


def importtime_top(src: Path, home: Path, top: int = 10, runs: int = 5) -> list[tuple[int, str]]:
    """The ``top`` slowest imports of an unchanged sync (cumulative microseconds), each
    module's least of ``runs`` runs (one run on a shared machine is mostly noise); first
    the total, the sum of each module's least own time."""
    cumulative: dict[str, int] = {}
    own: dict[str, int] = {}
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "docshelf.cli", "sync"],
            env=env_for(src, home),
            check=True,
            capture_output=True,
            text=True,
        )
        for line in done.stderr.splitlines():
            if not line.startswith("import time:") or "cumulative" in line:
                continue
            self_us, cumulative_us, name = line[len("import time:") :].split("|")
            module = name.strip()
            for table, took in ((own, int(self_us)), (cumulative, int(cumulative_us))):
                table[module] = min(table.get(module, took), took)
    rows = sorted(((took, module) for module, took in cumulative.items()), reverse=True)
    return [(sum(own.values()), "(all imports: each module's own time)"), *rows[:top]]


def stop_helper(home: Path) -> None:
    """End the resident helper a search started for ``home``, if one runs."""
    import signal

    try:
        pid = int((home / "search.lock").read_text().strip())
        if b"docshelf.cli.resident" in Path(f"/proc/{pid}/cmdline").read_bytes():
            os.kill(pid, signal.SIGTERM)  # the helper, not a process that reused its pid
    except (OSError, ValueError):
        pass


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--tree", action="append", default=[], help="NAME=SRC to compare")
    parser.add_argument("--imports-only", action="store_true", help="only the import-time tables")
    args = parser.parse_args()
    trees = {"current": HERE}
    for spec in args.tree:
        name, _, src = spec.partition("=")
        trees[name] = Path(src).resolve()
    work = args.dir or Path(tempfile.mkdtemp(prefix="docshelf-startup-"))
    folder = work / "notes"
    if not folder.exists():
        make_folder(folder, args.files)
    homes = {}
    for name, src in trees.items():
        homes[name] = work / f"home-{name}"
        if not homes[name].exists():
            docshelf(src, homes[name], ["add", str(folder)])
    if args.imports_only:
        print_imports(trees, homes)
        return
    times: dict[tuple[str, str], list[float]] = {}
    global LOAD_AT_START
    LOAD_AT_START = os.getloadavg()[0]
    for name, src in trees.items():  # warm-up: the page cache, .pyc files
        for argv in COMMANDS.values():
            docshelf(src, homes[name], argv)
        for argv in TTY.values():
            docshelf(src, homes[name], argv, tty=True)
        docshelf(src, homes[name], COMMANDS["search"], helper="auto")  # starts the helper
        time.sleep(5)  # let it load
    try:
        for _ in range(args.runs):
            for name, src in trees.items():
                for command, argv in COMMANDS.items():
                    took = docshelf(src, homes[name], argv)
                    times.setdefault((command, name), []).append(took)
                    CPU.setdefault((command, name), []).append(LAST_CPU[0])
                took = docshelf(src, homes[name], COMMANDS["search"], helper="auto")
                times.setdefault((HELPED, name), []).append(took)
                CPU.setdefault((HELPED, name), []).append(LAST_CPU[0])
                for command, argv in TTY.items():
                    took = docshelf(src, homes[name], argv, tty=True)
                    times.setdefault((command, name), []).append(took)
                    CPU.setdefault((command, name), []).append(LAST_CPU[0])
    finally:
        for home in homes.values():
            stop_helper(home)
    print(f"{args.files} files, {args.runs} runs each, new process per run (seconds)")
    print("CPU: the child's user + system time\n")
    print("| command | tree | p50 | p95 | CPU p50 |")
    print("|---|---|---|---|---|")
    for (command, name), values in sorted(times.items()):
        cpu = statistics.median(CPU[(command, name)])
        print(
            f"| {command} | {name} | {statistics.median(values):.3f} | "
            f"{pct(values, 0.95):.3f} | {cpu:.3f} |"
        )
    print(f"\nload average {LOAD_AT_START:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    print_imports(trees, homes)


def print_imports(trees: dict[str, Path], homes: dict[str, Path]) -> None:
    for name, src in trees.items():
        print(
            f"\nimport time of `docshelf sync`, {name} "
            "(cumulative µs, ten slowest, each module's least of 5 runs):"
        )
        for cumulative, module in importtime_top(src, homes[name]):
            print(f"  {cumulative:>9}  {module.strip()}")


if __name__ == "__main__":
    main()
