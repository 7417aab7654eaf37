"""Memory of `serve`: the API process's resident set on a large library, idle and
after searches over HTTP.

The library is one built by bench/ann.py (``--home DIR --no-search``: synthetic
snippets with their sidecar indexes, and its queries). The server runs in a
child process as `docshelf serve` runs it (``create_app`` with one in-process
ingest worker, uvicorn), with the packaged local model embedding each query
(its vectors answered from the precomputed ones, as bench/ann.py does, so the
synthetic library stays searchable). This process sends 200 searches over
loopback and reads the child's VmRSS and VmHWM from /proc.

    flock /tmp/docshelf-bench.lock .venv/bin/python bench/serve_memory.py --home DIR
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx
import numpy as np
import numpy.typing as npt

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.search import FixedQueries


def status_mb(pid: int) -> dict[str, float]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key = line.split(":")[0]
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(line.split()[1]) / 1024
    return out


def serve(home: Path, port: int) -> None:
    """In the child: the API on ``home``, as `docshelf serve` runs it."""
    import uvicorn

    from docshelf.accounts import users as users_mod
    from docshelf.api import create_app
    from docshelf.embed.local import LocalEmbedder
    from docshelf.shelf import Shelf

    texts = json.loads((home / "queries.json").read_text())
    fixed = FixedQueries(dict(zip(texts, np.load(home / "queries.npy"), strict=True)))
    model = LocalEmbedder()
    model.embed(["warm up"])  # loaded at start, as a served library's model is on first use
    precomputed = fixed.embed

    def embed(batch: Sequence[str]) -> npt.NDArray[np.float32]:
        model.embed(batch)  # the model's work and memory, as for a real query
        return precomputed(batch)

    fixed.embed = embed  # type: ignore[method-assign,assignment]
    shelf = Shelf(home, embedder=fixed)
    token = users_mod.issue_token(shelf.store, users_mod.ensure_local_admin(shelf.store))
    print(json.dumps({"token": token}), flush=True)
    uvicorn.run(create_app(shelf, workers=1), host="127.0.0.1", port=port, log_level="warning")


def grant_all(home: Path) -> None:
    """Give the local admin every document, as `add` does for its own sources (the
    synthetic library is written straight into the store, owned by nobody, and a
    search over HTTP shows only the caller's documents)."""
    from docshelf.accounts import users as users_mod
    from docshelf.shelf import Shelf

    with Shelf(home, embedder=FixedQueries({})) as shelf:
        admin = users_mod.ensure_local_admin(shelf.store)
        page = 5_000
        for offset in range(0, shelf.store.stats().documents, page):
            docs = shelf.store.list_documents(limit=page, offset=offset)
            with shelf.store.transaction():
                for doc in docs:
                    shelf.store.grant(admin.id, doc.id)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", type=Path, required=True, help="a library built by bench/ann.py")
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.home, args.serve)
        return
    grant_all(args.home)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Searches only: no enrichment by the idle worker, no answers from the retrieval cache.
    env = dict(os.environ, DOCSHELF_RETRIEVAL_CACHE_SECONDS="0", DOCSHELF_ENRICH="off")
    child = subprocess.Popen(
        [sys.executable, __file__, "--home", str(args.home), "--serve", str(port)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert child.stdout is not None
        token = json.loads(child.stdout.readline())["token"]
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and child.poll() is None, "server did not start"
            time.sleep(0.2)
        idle = status_mb(child.pid)
        texts = json.loads((args.home / "queries.json").read_text())
        headers = {"Authorization": f"Bearer {token}"}
        empty = 0
        with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
            for q in texts:
                reply = client.post("/v1/search", json={"query": q, "limit": 10})
                reply.raise_for_status()
                empty += not reply.json()["hits"]
        assert empty == 0, f"{empty} searches found nothing: the admin should see every document"
        busy = status_mb(child.pid)
        size = sum(p.stat().st_size for p in args.home.glob("docshelf.db*")) / 1e6
        print(f"library: {args.home.name} (database {size:.0f} MB)")
        print(f"serve, idle after start: RSS {idle['VmRSS']:.0f} MB")
        print(
            f"serve, after {len(texts)} searches: RSS {busy['VmRSS']:.0f} MB, "
            f"peak {busy['VmHWM']:.0f} MB"
        )
    finally:
        child.terminate()
        child.wait(30)


if __name__ == "__main__":
    main()
