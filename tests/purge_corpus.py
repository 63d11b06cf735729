"""What the purge tests write: survivors, and one victim of each record kind with what must be
gone after its purge (needles searched in the decoded scan, ids allowed only as tombstones).

Record kinds: a document (``delete_document(purge=True)``), a memory without an embedding
(``forget`` by subject), a memory with one (by ids), a file-backed memory and a loaded Markdown
document's episodes (both by ``ForgetScope.source``). Each victim has a marker, words only it
uses (their analyzed terms must vanish from the index), metadata values, names, vectors; the
survivors share other words with them ("lives", "garden"), which may stay.
"""

from __future__ import annotations

import base64
import hashlib
import os
from typing import Any

import attrs
import numpy as np

from hmsengine import Engine, ForgetScope, Memory
from hmsengine.kernels.cosine import l2_normalise_rows

# "bulk": a document put in a batch of plain documents (one values.PlainPuts, not a PutOp each).
KINDS = ("document", "bulk", "memory", "vector", "file", "episodes")
DOCUMENT_KINDS = ("document", "bulk")  # purged with delete_document(id, purge=True)
KEY = bytes(range(7, 39))  # a raw key: no key derivation to wait for
DOC_VECTOR = [0.1234567, -0.7654321, 0.3141592, 0.2718281]
MEM_VECTOR = [-0.5551234, 0.1112223, 0.9876543, -0.0123457]


@attrs.frozen(kw_only=True)
class Victim:
    kind: str
    needles: tuple[bytes, ...]  # must be in no decoded view after the purge
    # Needles that only files written by a close or a compaction hold (a vector's raw float32
    # bytes in the table snapshot, its normalised ones in index segments): their positive
    # control needs such files.
    late: tuple[bytes, ...] = ()
    ids: tuple[str, ...]  # may stay only as content-free tombstones
    words: tuple[str, ...]  # words only this victim uses (their terms must vanish)
    scope: Any  # a ForgetScope, or the document id for delete_document


def vector_forms(vector: list[float]) -> list[bytes]:
    """How a vector is stored: float32 bytes (table snapshot), their base64 (journal), the
    L2-normalised float32 bytes (index segments)."""
    raw = np.asarray(vector, dtype="<f4")
    unit = l2_normalise_rows(raw.reshape(1, -1).astype(np.float32))[0].astype("<f4")
    return [raw.tobytes(), base64.b64encode(raw.tobytes()), unit.tobytes()]


def _late(vector: list[float]) -> tuple[bytes, ...]:
    raw, _b64, unit = vector_forms(vector)
    return raw, unit


async def write_survivors(engine: Engine, folder: str) -> None:
    """Documents and memories that must survive every purge, with words shared with victims."""
    memory = Memory(engine)
    await engine.put_document("doc-keep-1", "the tea garden lives on the hill",
                              metadata={"k": "v1"}, embedding=[0.5, 0.5, 0.5, 0.5])
    await engine.put_document("doc-keep-2", "a quiet river lives near the garden")
    await memory.remember("Bob lives in Lisbon near the river", subject="bob/city",
                          entities=["bob"])
    await memory.remember("The garden has roses and tea", embedding=[0.1, 0.2, 0.3, 0.4])
    keep = os.path.join(folder, "keep-numbers.csv")
    with open(keep, "w") as f:
        f.write("month,amount\njan,3\n")
    await memory.remember_file(keep, summary="quarterly numbers of the tea garden")
    await memory.load("keepdoc", "# Keep\n\nThe garden notes say the river lives on.\n")


async def write_victims(engine: Engine, folder: str, tag: str,
                        kinds: tuple[str, ...] = KINDS) -> list[Victim]:
    """One victim per kind; ``tag`` (letters and digits) makes every marker and name unique."""
    memory = Memory(engine)
    out = []
    if "document" in kinds:
        doc_id = f"doc-victim-{tag}"
        await engine.put_document(doc_id, f"ZQXDOC{tag} quokka waterfall lives in the garden",
                                  metadata={"secret": f"METAQK{tag}"}, embedding=DOC_VECTOR)
        out.append(Victim(kind="document", ids=(doc_id,), scope=doc_id,
                          words=("quokka", "waterfall", f"ZQXDOC{tag}"),
                          needles=(f"ZQXDOC{tag}".encode(), f"METAQK{tag}".encode(),
                                   *vector_forms(DOC_VECTOR)),
                          late=_late(DOC_VECTOR)))
    if "bulk" in kinds:
        bulk_id = f"bulk-victim-{tag}"
        neighbours = [{"id": f"bulk-{tag}-{i}", "text": f"bulk neighbour {i} beside the hill"}
                      for i in range(20)]
        await engine.put_documents([*neighbours[:10],
                                    {"id": bulk_id, "text": f"ZQXBLK{tag} pangolin lives in the garden"},
                                    *neighbours[10:]])
        out.append(Victim(kind="bulk", ids=(bulk_id,), scope=bulk_id,
                          words=("pangolin", f"ZQXBLK{tag}"), needles=(f"ZQXBLK{tag}".encode(),)))
    if "memory" in kinds:
        result = await memory.remember(
            f"alice lives in berlin ZQXMEM{tag}", subject=f"alicezq{tag}/city",
            entities=[f"entzq{tag}"], namespace=f"nszq{tag}", metadata={"note": f"METAMEM{tag}"})
        out.append(Victim(kind="memory", ids=(result.id,),
                          scope=ForgetScope.subject(f"alicezq{tag}/city"),
                          words=("alice", "berlin", f"ZQXMEM{tag}"),
                          needles=(f"ZQXMEM{tag}".encode(), f"alicezq{tag}".encode(),
                                   f"entzq{tag}".encode(), f"nszq{tag}".encode(),
                                   f"METAMEM{tag}".encode())))
    if "vector" in kinds:
        vid = f"vec-victim-{tag}"
        await memory.remember(f"ZQXVEC{tag} narwhal lives in the garden", id=vid,
                              embedding=MEM_VECTOR, metadata={"v": f"METAVEC{tag}"})
        out.append(Victim(kind="vector", ids=(vid,), scope=ForgetScope.ids([vid]),
                          words=("narwhal", f"ZQXVEC{tag}"),
                          needles=(f"ZQXVEC{tag}".encode(), f"METAVEC{tag}".encode(),
                                   *vector_forms(MEM_VECTOR)),
                          late=_late(MEM_VECTOR)))
    if "file" in kinds:
        path = os.path.join(folder, f"secretzq{tag}.csv")
        content = f"name,value\nzqrow{tag},42\n".encode()
        with open(path, "wb") as f:
            f.write(content)
        result = await memory.remember_file(path, summary=f"ZQXFILE{tag} axolotl ledger",
                                            format="csv")
        out.append(Victim(kind="file", ids=(result.id,), scope=ForgetScope.source(path),
                          words=("axolotl", "ledger", f"ZQXFILE{tag}"),
                          needles=(f"ZQXFILE{tag}".encode(), f"secretzq{tag}.csv".encode(),
                                   hashlib.sha256(content).hexdigest().encode())))
    if "episodes" in kinds:
        name = f"zqdoc{tag}"
        text = (f"# Platypus notes {tag}\n\nZQXEPI{tag} the platypus swims. "
                + "Paragraph about the platypus burrow. " * 60
                + f"\n\n## Second part\n\nZQXEPI{tag} more platypus facts here.\n")
        result = await memory.load(name, text)
        assert len(result.episodes) >= 2
        out.append(Victim(kind="episodes", ids=result.episodes, scope=ForgetScope.source(name),
                          words=("platypus", "burrow", f"ZQXEPI{tag}"),
                          needles=(f"ZQXEPI{tag}".encode(),)))
    return out


def unique_terms(engine: Engine, victim: Victim, survivors_text: str) -> list[bytes]:
    """The analyzed terms of the victim's own words that no survivor has (e.g. "alic"); each is
    a substring of its text once case is folded (search them with ``fold=True``)."""
    shared = set(engine.analyze(survivors_text))
    terms = {t for w in victim.words for t in engine.analyze(w)} - shared
    assert terms and all(len(t) >= 5 or t in ("alic",) for t in terms), terms
    return sorted(t.encode() for t in terms)


def scope_for(kind: str, tag: str, folder: str) -> Any:
    """The purge scope of the victim of ``kind`` that ``write_victims`` wrote with ``tag`` (what
    a process that did not write it needs to purge it)."""
    return {"document": f"doc-victim-{tag}",
            "bulk": f"bulk-victim-{tag}",
            "memory": ForgetScope.subject(f"alicezq{tag}/city"),
            "vector": ForgetScope.ids([f"vec-victim-{tag}"]),
            "file": ForgetScope.source(os.path.join(folder, f"secretzq{tag}.csv")),
            "episodes": ForgetScope.source(f"zqdoc{tag}")}[kind]


async def purge(engine: Engine, victim: Victim) -> None:
    """The purge a user would run for this kind of record."""
    if victim.kind in DOCUMENT_KINDS:
        assert await engine.delete_document(victim.scope, purge=True) in (True, False)
    else:
        await Memory(engine).forget(victim.scope, purge=True)


async def survivor_text(engine: Engine, victims: list[Victim]) -> str:
    """The live text of everything but the victims, to tell shared terms from a victim's own."""
    skip = set(engine.tombstones()) | {i for v in victims for i in v.ids}
    ids = [i for i, _ in engine.scan_metadata() if i not in skip]
    docs = await engine.get_documents(ids)
    return " ".join(d.text for d in docs if d is not None)


async def scores_as_fresh(engine: Engine) -> None:
    """Search scores equal (as floats) those of a fresh store built from the survivors only."""
    tombstones = engine.tombstones()
    order = [i for i, _ in engine.scan_metadata(commit_order=True) if i not in tombstones]
    docs = [d for d in await engine.get_documents(order) if d is not None]
    queries: list[tuple[str, Any]] = [("lives garden", None), ("tea river hill", None),
                                      ("Bob Lisbon roses", None), ("garden", [0.5, 0.4, 0.3, 0.2]),
                                      ("garden lives", "ngram")]
    async with Engine.open(None) as fresh:
        # One transaction: the documents keep their relative (commit) order, which is how
        # search breaks ties.
        await fresh.put_documents([
            {"id": doc.id, "text": doc.text, "metadata": doc.metadata,
             "embedding": list(doc.embedding) if doc.embedding else None} for doc in docs])
        for query, extra in queries:
            # "ngram": the hashed n-gram channel, which index segments then persist too.
            options: dict[str, Any] = {"semantic": "ngram"} if extra == "ngram" else \
                {"embedding": extra}
            ours = [(h.id, h.score) for h in await engine.search_documents(query, k=50, **options)]
            theirs = [(h.id, h.score) for h in await fresh.search_documents(query, k=50,
                                                                             **options)]
            assert ours == theirs, (query, ours, theirs)
