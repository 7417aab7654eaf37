"""Query vectors for a process that only searches: ONNX Runtime and ``tokenizers``
alone, so a new ``docshelf search`` answers without importing torch or transformers.

It runs the fp32 export that ``embed/onnx.py`` caches in the data dir (exporting it
once, in a child process, when missing), so its vectors are the ingest model's and
its ``model_id`` is the same: a library made by PyTorch or by fp32 ONNX is searched
as it is. What it saves on every start:

- hashing the 90 MB weights to name the export: a small key file beside the export
  records the weights' size and modification time and the export's file name, and
  is trusted while those match (a changed package re-hashes, once);
- ONNX Runtime's graph optimisation at session creation, and a thread pool: one
  short query runs on one thread (BENCHMARKS.md, "A search as a new process").

The tokenisation is the shared ``PackagedModel``'s: truncation at the model's window,
special tokens and the attention mask exactly as the other runtimes feed them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from docshelf.embed.onnx import EXPORT_VERSION, OnnxEmbedder

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


class LeanEmbedder(OnnxEmbedder):
    """The ``Embedder`` port for query vectors: the fp32 ONNX export, found through a
    key file instead of a hash, run by a session built for one short text at a time."""

    def __init__(self, cache_dir: Path, batch_size: int = 16, *, threads: int = 1) -> None:
        super().__init__(cache_dir, batch_size, int8=False, threads=threads)

    def model_path(self) -> Path:
        """The cached export named by the key file, while the weights it was written for
        are still the installed ones; otherwise the hashed name (exported when missing),
        recorded for the next start."""
        stamp = _weights_stamp(self._dir)
        key = self._cache_dir / KEY_FILE
        try:
            known = json.loads(key.read_text())
            if {k: known.get(k) for k in stamp} == stamp:
                path = self._cache_dir / str(known["file"])
                if path.name == known["file"] and path.exists():
                    return path
        except (OSError, ValueError, KeyError, TypeError):
            pass  # no key yet, or an unreadable one: fall back to the hash
        path = super().model_path()  # hashes the weights, exports when missing
        tmp = key.with_name(f"{key.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({**stamp, "file": path.name}))
        os.replace(tmp, key)  # atomic: a concurrent reader sees the old key or the new
        return path

    def _load(self) -> Any:
        with self._lock:
            if self._session is None:
                import onnxruntime as ort

                options = ort.SessionOptions()
                # Optimising the graph cost more at start-up than it saved on one query;
                # the vectors are the same (tests/test_lean.py).
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
                options.intra_op_num_threads = self._threads
                options.inter_op_num_threads = 1
                self._session = ort.InferenceSession(
                    str(self.model_path()), options, providers=["CPUExecutionProvider"]
                )
            return self._session
