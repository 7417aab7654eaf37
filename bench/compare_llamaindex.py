"""docshelf's ingest against LlamaIndex's ``VectorStoreIndex.from_documents``: the same
folder, the same model weights (the packaged all-MiniLM-L6-v2), the same process.

Prints, for each: ingest wall time (model loaded beforehand, so load time is not
counted), and the retrieval quality on the folder — for every BEIR query whose
relevant passages are in it, whether the right file is among the top 10
(recall@10 of files) and the reciprocal rank of the first right file (MRR@10) —
so "faster" is read at equal quality. docshelf runs with the configured
embedding backend (``DOCSHELF_EMBED_BACKEND``), LlamaIndex with its
HuggingFace embedding (PyTorch), both at batch size 16.

Needs the ``compare`` extra (not installed by ``make``):

    .venv/bin/pip install -e '.[compare]'
    .venv/bin/python bench/compare_llamaindex.py [--files N] [--data DIR]

The folder is built from ``../shared/data/dbpedia-5k``: passages grouped into
multi-section Markdown files (docshelf's long-document evaluation layout).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "dbpedia-5k"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("DOCSHELF_ENRICH", "off")  # ingest only: LlamaIndex does no enrichment


def quality(ranked: dict[str, list[str]], relevant: dict[str, set[str]]) -> tuple[float, float]:
    """(recall@10, MRR@10) over files: ``ranked[q]`` is the files retrieved, best first."""
    recalls, rrs = [], []
    for qid, want in relevant.items():
        got = ranked.get(qid, [])[:10]
        recalls.append(len(want & set(got)) / len(want))
        rrs.append(next((1 / (i + 1) for i, f in enumerate(got) if f in want), 0.0))
    return statistics.fmean(recalls), statistics.fmean(rrs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=150, help="multi-section files to ingest")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--li-chunk", type=int, default=200, help="LlamaIndex chunk size (tokens)")
    args = ap.parse_args()
    try:
        from llama_index.core import Settings, SimpleDirectoryReader, VectorStoreIndex
        from llama_index.core.node_parser import SentenceSplitter
        from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    except ImportError:
        sys.exit("LlamaIndex is not installed: .venv/bin/pip install -e '.[compare]'")

    from docshelf.embed import make_embedder
    from docshelf.embed.local import _model_dir
    from docshelf.evaluate.beir import load_beir
    from docshelf.evaluate.long import long_corpus
    from docshelf.shelf import Shelf

    ds = load_beir(args.data)
    corpus = long_corpus(ds)
    files = corpus.files[: args.files]
    names = {f.name for f in files}
    relevant: dict[str, set[str]] = {}
    for qid, grades in ds.qrels.items():
        # The relevant passages that are in the folder, by the file holding them.
        want = {corpus.section_of[c][0] for c in grades if c in corpus.section_of} & names
        if want:
            relevant[qid] = want
    passages = sum(len(f.headings) for f in files)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "library"
        folder.mkdir()
        for f in files:
            (folder / f.name).write_text(f.text, encoding="utf-8")

        # -- docshelf ------------------------------------------------------------------------
        embedder = make_embedder("local", home=Path(tmp) / "home")
        assert embedder is not None
        embedder.embed(["warm up"])  # load (and, for ONNX, export) before the clock starts
        with Shelf(Path(tmp) / "home", embedder=embedder) as shelf:
            t = time.perf_counter()
            report = shelf.add(folder)
            ds_s = time.perf_counter() - t
            assert report.failed == 0, report.failures[:3]
            by_doc = {d.id: Path(d.path).name for d in shelf.documents()}
            snippets = shelf.status().snippets
            ranked = {
                qid: [
                    by_doc[h.document.id]
                    for h in shelf.search(ds.queries[qid], limit=10, group="document").hits
                ]
                for qid in relevant
            }
        ds_recall, ds_mrr = quality(ranked, relevant)

        # -- LlamaIndex ----------------------------------------------------------------------
        Settings.llm = cast(Any, None)  # no LLM: indexing only
        Settings.embed_model = HuggingFaceEmbedding(
            model_name=str(_model_dir()), device="cpu", embed_batch_size=16
        )
        Settings.embed_model.get_text_embedding("warm up")
        # Its default 1,024-token chunks are cut to the model's 256-token window when
        # embedded (most of each chunk is never seen): chunk to the window instead, as
        # docshelf does, so the two are compared at their best quality.
        Settings.node_parser = SentenceSplitter(chunk_size=args.li_chunk, chunk_overlap=20)
        documents = SimpleDirectoryReader(str(folder)).load_data()
        t = time.perf_counter()
        index = VectorStoreIndex.from_documents(documents)
        li_s = time.perf_counter() - t
        nodes = len(index.docstore.docs)
        retriever = index.as_retriever(similarity_top_k=30)
        ranked = {}
        for qid in relevant:
            seen: list[str] = []
            for node in retriever.retrieve(ds.queries[qid]):
                name = str(node.metadata.get("file_name"))
                if name not in seen:
                    seen.append(name)
            ranked[qid] = seen
        li_recall, li_mrr = quality(ranked, relevant)

    backend = getattr(embedder, "model_id", "?")
    print(f"folder: {len(files)} files, {passages} passages; {len(relevant)} queries judged")
    print(f"embedding: docshelf {type(embedder).__name__} ({backend}); LlamaIndex HuggingFace")
    print(f"LlamaIndex chunks: SentenceSplitter({args.li_chunk} tokens, overlap 20)")
    print(f"docshelf add:               {ds_s:7.2f} s  ({snippets} snippets)")
    print(f"LlamaIndex from_documents:  {li_s:7.2f} s  ({nodes} nodes)")
    print(f"speed-up (LlamaIndex / docshelf): {li_s / ds_s:.2f}x")
    print(f"file recall@10  docshelf {ds_recall:.3f}  LlamaIndex {li_recall:.3f}")
    print(f"file MRR@10     docshelf {ds_mrr:.3f}  LlamaIndex {li_mrr:.3f}")


if __name__ == "__main__":
    main()
