"""Query vectors for a process that only searches: ONNX Runtime and ``tokenizers``
alone, so a new ``docshelf search`` answers without importing torch or transformers.

It runs the fp32 export that ``embed/onnx.py`` caches in the data dir (exporting it
once, in a child process, when missing), so its vectors are the ingest model's and
its ``model_id`` is the same: a library made by PyTorch or by fp32 ONNX is searched
as it is. What it saves on every start (docs/benchmarks/search-new-process.md, "A search as
a new process: the lean query embedder"):

- hashing the 90 MB weights to name the export: a small key file beside the export
  records the weights' size and modification time and the query model's file name,
  and is trusted while those match (a changed package re-hashes, once);
- parsing and copying the weights: a copy of the export keeps them in a file of
  their own (``*-lean.onnx.data``, written once, in a child process), which ONNX
  Runtime maps into memory; a query touches a few rows of the token table, so most
  of it is never read;
- graph optimisation, weight pre-packing and a thread pool at session creation: one
  short query runs on one thread.

The tokenisation is the shared ``PackagedModel``'s: truncation at the model's window,
special tokens and the attention mask exactly as the other runtimes feed them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from docshelf.durable import create_private, make_private, private_dir
from docshelf.embed.onnx import EXPORT_VERSION, OnnxEmbedder, export_lock
from docshelf.errors import Unavailable

KEY_FILE = "lean-key.json"  # beside the exports: which file the current weights map to


def _weights_stamp(model_dir: Path) -> dict[str, Any]:
    """What identifies the installed weights cheaply: their path, size and mtime."""
    weights = model_dir / "model.safetensors"
    st = weights.stat()
    return {
        "weights": str(weights),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "export_version": EXPORT_VERSION,
    }


def split_weights(source: Path, out: Path) -> None:
    """Write ``source``'s graph to ``out`` with its weights beside it in ``out.data``, a
    plain file ONNX Runtime maps into memory instead of parsing and copying: a session
    then starts in tens of milliseconds, and the pages are the page cache's, shared by
    every process that searches (docs/benchmarks/search-new-process.md, "A search as a new
    process: the lean query embedder").
    Both files appear at once, weights first, by renames from a folder beside them."""
    import onnxruntime as ort

    work = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    private_dir(work)
    try:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.optimized_model_filepath = str(work / out.name)  # the graph as it is
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", f"{out.name}.data"
        )
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
        )
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        for made in work.iterdir():
            make_private(made)  # (onnxruntime follows the umask)
        os.replace(work / f"{out.name}.data", out.with_name(f"{out.name}.data"))
        os.replace(work / out.name, out)
    finally:
        for leftover in work.iterdir():
            leftover.unlink()
        work.rmdir()


class LeanEmbedder(OnnxEmbedder):
    """The ``Embedder`` port for query vectors: the fp32 ONNX export with its weights
    mapped from a file beside it, found through a key file instead of a hash, run by a
    session built for one short text at a time."""

    def __init__(
        self, cache_dir: Path, batch_size: int = 16, *, threads: int = 1, optimise: bool = False
    ) -> None:
        super().__init__(cache_dir, batch_size, int8=False, threads=threads)
        self.optimise = optimise

    def for_many_queries(self) -> LeanEmbedder:
        """The same model for a process that embeds many queries (a server): the graph
        optimised and a thread per core — slower to start, ~2.5 times faster a query."""
        return LeanEmbedder(self._cache_dir, self.batch_size, threads=0, optimise=True)

    def ready(self) -> bool:
        """Whether the query model is made for the installed weights (no export needed)."""
        return self._known(_weights_stamp(self._dir)) is not None

    def _known(self, stamp: dict[str, Any]) -> Path | None:
        """The query model the key file names, while the weights it was made from
        (``stamp``) are still the installed ones."""
        try:
            known = json.loads((self._cache_dir / KEY_FILE).read_text())
            if {k: known.get(k) for k in stamp} == stamp:
                path = self._cache_dir / str(known["file"])
                if path.name == known["file"] and _complete(path):
                    return path
        except (OSError, ValueError, KeyError, TypeError):
            pass  # no key yet, or an unreadable one
        return None

    def model_path(self) -> Path:
        """The query model named by the key file (``_known``); otherwise made (from the
        hashed export, exported when missing) and recorded for the next start."""
        stamp = _weights_stamp(self._dir)
        known = self._known(stamp)
        if known is not None:
            return known
        key = self._cache_dir / KEY_FILE
        export = super().model_path()  # hashes the weights; exports when missing
        path = export.with_name(f"{export.stem}-lean.onnx")
        if not _complete(path):
            with export_lock(self._cache_dir):  # one writer; the others wait, then reuse
                if not _complete(path):
                    # In a child: the whole graph is parsed once there, not in this process.
                    args = [sys.executable, "-m", "docshelf.embed.lean", str(export), str(path)]
                    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
                    if done.returncode != 0 or not _complete(path):
                        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                        raise Unavailable(f"Preparing the query model failed: {' '.join(tail)}")
                # The export it was made from (87 MB, the same weights once more) is
                # left to the runtime that reads it (DOCSHELF_EMBED_BACKEND=onnx), which
                # exports again if it is ever asked for.
                export.unlink(missing_ok=True)
        tmp = key.with_name(f"{key.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.unlink(missing_ok=True)  # (a dead process's of the same ids)
        with create_private(tmp) as fh:
            fh.write(json.dumps({**stamp, "file": path.name}).encode())
        os.replace(tmp, key)  # atomic: a concurrent reader sees the old key or the new
        return path

    def _load(self) -> Any:
        with self._lock:
            if self._session is None:
                import onnxruntime as ort

                options = ort.SessionOptions()
                if not self.optimise:
                    # Optimising the graph and pre-packing the weights cost more at start-up
                    # than they save on one query; the vectors are the same (test_lean.py).
                    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
                    options.add_session_config_entry("session.disable_prepacking", "1")
                if self._threads:
                    options.intra_op_num_threads = self._threads
                else:
                    # its threads sleep once a query is embedded, not spin: the search
                    # that follows needs the cores (docs/benchmarks/search-latency.md,
                    # "Queries on ONNX Runtime in a server")
                    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                options.inter_op_num_threads = 1
                self._session = ort.InferenceSession(
                    str(self.model_path()), options, providers=["CPUExecutionProvider"]
                )
            return self._session


def _complete(path: Path) -> bool:
    return path.exists() and path.with_name(f"{path.name}.data").exists()


if __name__ == "__main__":  # the weights split out, in a process of its own
    split_weights(Path(sys.argv[1]), Path(sys.argv[2]))
