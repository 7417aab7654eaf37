"""llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server``) with its weights
in plain CPU buffers: ``docshelf llm-serve`` runs this module rather than the server's own.

llama.cpp moves a quantised model's weights into "extra" buffer types for speed (repacked
layouts; Intel AMX tiles where the CPU reports them). On a virtual machine whose CPU reports
AMX, the first prompt crashed the server with a segmentation fault (llama-cpp-python 0.3.36
built for that CPU, seen here on 2026-12-06); with the extra buffer types off it answers.
The server has no switch for it, so the model's default parameters are wrapped before it
starts: everything else is the server's, arguments included.
"""

from __future__ import annotations

from typing import Any


def _plain_buffers() -> None:
    """Every model the server loads without llama.cpp's extra buffer types."""
    import llama_cpp.llama_cpp as native

    defaults = native.llama_model_default_params

    def plain() -> Any:
        params = defaults()
        params.use_extra_bufts = False
        return params

    setattr(native, "llama_model_default_params", plain)  # noqa: B010 (a wrapped C function)


def main() -> None:
    _plain_buffers()
    from llama_cpp.server.__main__ import main as serve

    serve()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
