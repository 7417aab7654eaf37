"""Notebooks in an export archive: ``notebooks.jsonl``, one ``model.Notebook`` a line.

An archive made before notebooks has no such member and imports as before. A notebook
names users, sources and documents: each must be in the archive or already in the
target, and one whose id the target holds is left as it is there."""

from __future__ import annotations

import json
import zipfile
from collections import Counter
from dataclasses import asdict
from typing import TYPE_CHECKING

from docshelf.errors import InvalidInput
from docshelf.model import Notebook
from docshelf.portable.lines import build, lines

if TYPE_CHECKING:
    from docshelf.portable.snapshot import Reader
    from docshelf.store import Store

NOTEBOOKS = "notebooks.jsonl"


def write_notebooks(zf: zipfile.ZipFile, reader: Reader) -> int:
    """Every notebook of the library into ``zf``; how many."""
    found = reader.notebooks()
    with zf.open(NOTEBOOKS, "w", force_zip64=True) as out:
        for notebook in found:
            out.write(json.dumps(asdict(notebook), ensure_ascii=False).encode() + b"\n")
    return len(found)


def read_notebooks(
    zf: zipfile.ZipFile, store: Store, users: set[str], sources: set[str], documents: set[str]
) -> list[Notebook]:
    """The archive's notebooks, each checked against what the archive and ``store``
    hold; InvalidInput naming the first that names something neither has."""
    if NOTEBOOKS not in zf.namelist():
        return []
    found: list[Notebook] = []
    for obj, where in lines(zf, NOTEBOOKS):
        nb = build(Notebook, obj, where)
        nb = Notebook(
            **{
                **asdict(nb),
                **{k: tuple(getattr(nb, k)) for k in ("sources", "documents", "shared_with")},
                "filters": tuple((str(k), str(v)) for k, v in nb.filters),
            }
        )
        for uid in (nb.user_id, *nb.shared_with):
            if uid not in users and store.get_user(uid) is None:
                raise InvalidInput(f"{where}: user {uid!r} is neither in the archive nor here")
        for sid in nb.sources:
            if sid not in sources and store.get_source(sid) is None:
                raise InvalidInput(f"{where}: source {sid!r} is neither in the archive nor here")
        for did in nb.documents:
            if did not in documents and store.get_document(did) is None:
                raise InvalidInput(f"{where}: document {did!r} is neither in the archive nor here")
        found.append(nb)
    return found


def import_notebooks(
    store: Store, notebooks: list[Notebook], added: Counter[str], skipped: Counter[str]
) -> None:
    for nb in notebooks:
        if store.get_notebook(nb.id) is not None:
            skipped["notebooks"] += 1
            continue
        store.put_notebook(nb)
        added["notebooks"] += 1
