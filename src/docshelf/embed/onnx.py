"""The packaged all-MiniLM-L6-v2 through ONNX Runtime: the same answers as the
PyTorch path (mean pooling and normalisation are part of the exported graph),
without importing torch in the process that embeds.

The ONNX file is exported locally from the packaged weights the first time it is
needed — in a child process, so torch never enters this one — and cached in the
data dir under a name that carries the weights' hash; writers take a file lock
and publish with an atomic rename, so concurrent first uses export once.
``python -m docshelf.embed.onnx OUT [--int8]`` runs the export by hand.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docshelf.durable import make_private, private_dir, private_file
from docshelf.embed.local import MODEL_ID, PackagedModel, _model_dir, sentence_module
from docshelf.errors import Unavailable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

OPSET = 17
EXPORT_VERSION = "1"  # bump when the exported graph changes


def _weights_key(model_dir: Path, int8: bool) -> str:
    h = hashlib.sha256()
    with open(model_dir / "model.safetensors", "rb") as fh:
        while block := fh.read(2**20):
            h.update(block)
    return f"{MODEL_ID}-{h.hexdigest()[:12]}-v{EXPORT_VERSION}{'-int8' if int8 else ''}"


@contextmanager
def export_lock(cache_dir: Path) -> Iterator[None]:
    """Held while an export is written to ``cache_dir`` (made private: 0700)."""
    private_dir(cache_dir)
    lock = cache_dir / ".export.lock"
    private_file(lock)
    with open(lock, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        yield


def export(out: Path, *, int8: bool = False) -> None:
    """Write the sentence-embedding graph (encoder, mean pooling, L2 norm) to ``out``."""
    import torch

    module = sentence_module(_model_dir())
    sample = torch.ones((2, 8), dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    dynamic = {n: {0: "batch", 1: "tokens"} for n in names}
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")  # (an exporter whose parent died
    # no longer holds the lock: another may be writing beside it)
    with torch.no_grad():
        torch.onnx.export(
            module,
            (sample, sample, torch.zeros_like(sample)),
            str(tmp),
            input_names=names,
            output_names=["embedding"],
            dynamic_axes={**dynamic, "embedding": {0: "batch"}},
            opset_version=OPSET,
            dynamo=False,
        )
    if int8:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        fp32 = tmp.with_name(tmp.name + ".fp32")
        tmp.rename(fp32)
        quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8)
        fp32.unlink()
    make_private(tmp)  # (torch and onnxruntime follow the umask; the folder is private)
    os.replace(tmp, out)


class OnnxEmbedder(PackagedModel):
    """The ``Embedder`` port on ONNX Runtime (CPU)."""

    def __init__(
        self, cache_dir: Path, batch_size: int = 16, *, int8: bool = False, threads: int = 0
    ) -> None:
        super().__init__(batch_size)
        self.int8 = int8
        # fp32 gives the PyTorch path's vectors (cosine > 0.9999): the same model for
        # the library. int8 vectors differ a little, so they are a model of their own.
        self.model_id = f"{MODEL_ID}-int8" if int8 else MODEL_ID
        self._cache_dir = cache_dir
        self._threads = threads
        self._session: Any = None

    def model_path(self) -> Path:
        """The cached ONNX file, exported first if it is not there yet."""
        path = self._cache_dir / f"{_weights_key(self._dir, self.int8)}.onnx"
        if path.exists():
            return path
        with export_lock(self._cache_dir):  # one exporter; the others wait, then reuse
            if not path.exists():
                args = [sys.executable, "-m", "docshelf.embed.onnx", str(path)]
                done = subprocess.run(
                    [*args, *(["--int8"] if self.int8 else [])],
                    capture_output=True,
                    text=True,
                    timeout=900,
                )
                if done.returncode != 0 or not path.exists():
                    tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                    raise Unavailable(f"Exporting the ONNX model failed: {' '.join(tail)}")
        return path

    def _load(self) -> Any:
        with self._lock:
            if self._session is None:
                import onnxruntime as ort

                options = ort.SessionOptions()
                if self._threads:
                    options.intra_op_num_threads = self._threads
                self._session = ort.InferenceSession(
                    str(self.model_path()), options, providers=["CPUExecutionProvider"]
                )
            return self._session

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        import numpy as np  # (here: a process that never embeds, a lexical search, skips it)

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        session = self._load()
        # As in the PyTorch path: similar lengths together, one small batch at a time.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            out[rows] = session.run(None, self._encode_batch([texts[i] for i in rows]))[0]
        if len(order) > self.batch_size:
            self._trim()
        return out


if __name__ == "__main__":  # the export, in a process of its own
    export(Path(sys.argv[1]), int8="--int8" in sys.argv[2:])
