"""How well does hmsengine rank, next to bm25s, tantivy-py, SQLite FTS5 and rank_bm25, and how
fast is its cosine kernel next to numpy and faiss, on this machine?

Two parts, measured side by side in one run:

(a) Retrieval quality on LoCoMo (the seven dev conversations, ``bench/locomo.py``): one index per
    conversation over its turns; each question with evidence is a query; recall@5, recall@10 and
    nDCG@10 of the evidence turns, averaged over all questions. Every peer is run twice: with its
    own default tokenization, and fed the exact tokens of hmsengine's "standard" analyzer
    (``get_analyzer("standard").tokenize``) for documents and queries, so the engines differ
    only in ranking. The acceptance check: hmsengine's recall@10 within 0.005 of bm25s's with
    the same tokens (bm25s set to hmsengine's BM25: Lucene idf, k1=1.2, b=0.75).
(b) Cosine top 10 over 100,000 x 384 float32 rows (seeded, normalised): hmsengine's
    ``cosine_topk`` kernel vs numpy (``M @ q`` + argpartition) vs faiss-cpu ``IndexFlatIP`` with
    1 thread and with its default threads.

Lexical query and index build speed next to tantivy-py, PISA and bm25s is ``bench/lexical.py``'s
question (same tokens, same BM25, 10k to 1M documents, right after ingest and settled).

Repeats are interleaved (every engine once, then again); tables show medians; ratios compare
medians from the same run. Run: ``python bench/search.py`` (about 3 minutes on a 2-core VM),
``--quick`` for a smoke run. Writes bench/results/search.json (``--quick``: search-quick.json).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import re
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo  # bench/locomo.py
from _common import (  # bench scripts run as files, not as a package
    METHOD_NOTE,
    RESULTS_DIR,
    _version,
    busy_warning,
    fmt_rate,
    fmt_ratio,
    load_average,
    machine_facts,
    median,
    now_iso,
    print_table,
    ratio,
    scratch_root,
    write_results,
)

import hmsengine
from hmsengine import Engine
from hmsengine.index.analyzer import get_analyzer
from hmsengine.kernels.cosine import cosine_topk, l2_normalise, l2_normalise_rows

QUESTION = ("Search quality (LoCoMo recall) of hmsengine next to bm25s, tantivy-py, SQLite FTS5 and "
            "rank_bm25, and cosine top-10 speed at 100k x 384 next to numpy and faiss")
SEED = 20240611
K = 10
ACCEPT_RECALL_DIFF = 0.005

DEFAULTS = {"rows": 100_000, "dim": 384, "vector_queries": 40, "repeats": 3}
QUICK = {"rows": 20_000, "vector_queries": 20, "repeats": 1}
BM25S_SAME = {"method": "lucene", "k1": 1.2, "b": 0.75}  # hmsengine's BM25 (kernels/bm25.py)
TANTIVY_HEAP = 256_000_000

AIMS = (
    ("cosine top-10 within 1.2x of faiss's flat index (queries/s >= 1/1.2 of the faster faiss "
     "setting)", "cosine_vs_faiss", 1 / 1.2),
)


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _pct(values: Sequence[float], q: float) -> float | None:
    return float(np.percentile(np.asarray(values), q)) if values else None


def _timed_loop(call: Callable[[Any], Any], queries: Sequence[Any]) -> dict[str, Any]:
    """One query at a time: per-query latencies, and queries/s over the whole loop."""
    lat = []
    clock = time.perf_counter
    start = clock()
    for q in queries:
        t = clock()
        call(q)
        lat.append(clock() - t)
    total = clock() - start
    return _latency_summary(lat, total)


def _latency_summary(lat: list[float], total: float) -> dict[str, Any]:
    return {"queries": len(lat), "seconds": total, "qps": len(lat) / total,
            "p50_us": _pct(lat, 50) * 1e6, "p99_us": _pct(lat, 99) * 1e6,
            "mean_us": sum(lat) / len(lat) * 1e6}


async def _settle(engine: Engine, *, consolidated: bool = False) -> None:
    """Wait until the tail is folded and no merge is pending; with ``consolidated``, also until
    the idle consolidation (which starts after half a second without commits) is done."""
    indexer = engine._indexer
    while indexer.snapshot.tail or indexer._pick() is not None or (
            consolidated and not indexer.settled):
        await trio.sleep(0.002)


# ==================================================================================================
# (a) LoCoMo retrieval quality
# ==================================================================================================

_WORD = re.compile(r"\w+")


def _fts_or(words: Sequence[str]) -> str:
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def _hms_locomo(convs: list[locomo.Conversation], semantic: str | None) -> list[list[str]]:
    async def main() -> list[list[str]]:
        out = []
        for conv in convs:
            async with Engine.open(None, analyzer="standard") as engine:
                await engine.put_documents([{"id": i, "text": t} for i, t in
                                            zip(conv.turn_ids, conv.turn_texts, strict=True)])
                await trio.sleep(0.3)
                await _settle(engine)
                for q in conv.questions:
                    hits = await engine.search_documents(q.text, k=K, semantic=semantic)
                    out.append([h.id for h in hits])
        return out
    return trio.run(main)


def _bm25s_locomo(convs: list[locomo.Conversation], tokens: str,
                  params: dict[str, Any] | None) -> tuple[list[list[str]], list[float]]:
    """Rankings (documents scoring 0, which match no query term, dropped) and tie-aware recall."""
    import bm25s
    import Stemmer

    analyzer = get_analyzer("standard")
    stemmer = Stemmer.Stemmer("english")
    out, tie_recall = [], []
    for conv in convs:
        retriever = bm25s.BM25(backend="numba", **(params or {}))
        if tokens == "hmsengine":
            corpus = [analyzer.tokenize(t) for t in conv.turn_texts]
            queries = [analyzer.tokenize(q.text) for q in conv.questions]
        else:  # bm25s's README setup: its tokenizer, English stop words, the Snowball stemmer
            corpus = bm25s.tokenize(conv.turn_texts, stopwords="en", stemmer=stemmer,
                                    return_ids=False, show_progress=False)
            queries = bm25s.tokenize([q.text for q in conv.questions], stopwords="en",
                                     stemmer=stemmer, return_ids=False, show_progress=False)
        retriever.index(corpus, show_progress=False)
        k = min(K, len(conv.turn_ids))
        docs, scores = retriever.retrieve(queries, k=k, n_threads=1, show_progress=False)
        for q, tok, row_d, row_s in zip(conv.questions, queries, docs, scores, strict=True):
            out.append([conv.turn_ids[d] for d, s in zip(row_d, row_s, strict=True) if s > 0])
            full = retriever.get_scores(tok) if tok else np.zeros(len(conv.turn_ids))
            tie_recall.append(locomo.tie_aware_recall(full.tolist(), conv.turn_ids, q.evidence, K))
    return out, tie_recall


def _tantivy_locomo(convs: list[locomo.Conversation], tokens: str) -> list[list[str]]:
    import tantivy

    analyzer = get_analyzer("standard")
    out = []
    for conv in convs:
        sb = tantivy.SchemaBuilder()
        sb.add_integer_field("n", stored=True)
        sb.add_text_field("text", stored=False,
                          tokenizer_name="whitespace" if tokens == "hmsengine" else "default")
        schema = sb.build()
        index = tantivy.Index(schema)
        writer = index.writer(TANTIVY_HEAP // 4, 1)
        for n, text in enumerate(conv.turn_texts):
            body = " ".join(analyzer.tokenize(text)) if tokens == "hmsengine" else text
            writer.add_document(tantivy.Document(n=n, text=body))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        searcher = index.searcher()
        for q in conv.questions:
            if tokens == "hmsengine":
                terms = analyzer.tokenize(q.text)
                query = tantivy.Query.boolean_query(
                    [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "text", t))
                     for t in terms]) if terms else None
            else:  # the query parser over the question's words (its syntax characters removed)
                words = _WORD.findall(q.text.lower())
                query = index.parse_query(" ".join(words), ["text"]) if words else None
            hits = searcher.search(query, K).hits if query is not None else []
            out.append([conv.turn_ids[searcher.doc(a)["n"][0]] for s, a in hits if s > 0])
    return out


def _fts5_locomo(convs: list[locomo.Conversation], tokens: str) -> list[list[str]]:
    analyzer = get_analyzer("standard")
    out = []
    for conv in convs:
        db = sqlite3.connect(":memory:")
        tok = "unicode61 remove_diacritics 0" if tokens == "hmsengine" else "unicode61"
        db.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, tokenize='{tok}')")
        body = ([" ".join(analyzer.tokenize(x)) for x in conv.turn_texts] if tokens == "hmsengine"
                else conv.turn_texts)
        db.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)",
                       [(n + 1, x) for n, x in enumerate(body)])
        for q in conv.questions:
            words = analyzer.tokenize(q.text) if tokens == "hmsengine" else _WORD.findall(q.text)
            rows = db.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?",
                              (_fts_or(words), K)).fetchall() if words else []
            out.append([conv.turn_ids[r - 1] for (r,) in rows])
        db.close()
    return out


def _rank_bm25_locomo(convs: list[locomo.Conversation], tokens: str) -> list[list[str]]:
    from rank_bm25 import BM25Okapi

    analyzer = get_analyzer("standard")
    split = analyzer.tokenize if tokens == "hmsengine" else (lambda s: s.lower().split())
    out = []
    for conv in convs:
        bm = BM25Okapi([split(t) for t in conv.turn_texts])
        for q in conv.questions:
            scores = bm.get_scores(split(q.text))
            order = sorted(range(len(scores)), key=lambda d: (-scores[d], d))[:K]
            out.append([conv.turn_ids[d] for d in order if scores[d] > 0])
    return out


LOCOMO_SYSTEMS: tuple[tuple[str, str, str], ...] = (
    # key, engine, tokenization
    ("hmsengine", "hmsengine BM25", "hmsengine standard analyzer"),
    ("hmsengine_ngram", "hmsengine BM25 + n-gram (RRF)", "hmsengine standard analyzer"),
    ("bm25s_same", "bm25s (Lucene idf, k1=1.2, b=0.75)", "hmsengine tokens"),
    ("bm25s_same_default_params", "bm25s (its defaults: k1=1.5, b=0.75)", "hmsengine tokens"),
    ("tantivy_same", "tantivy-py", "hmsengine tokens"),
    ("fts5_same", "SQLite FTS5 bm25()", "hmsengine tokens"),
    ("rank_bm25_same", "rank_bm25 BM25Okapi", "hmsengine tokens"),
    ("bm25s_own", "bm25s (defaults)", "own: bm25s.tokenize, stopwords='en', PyStemmer"),
    ("tantivy_own", "tantivy-py", "own: 'default' tokenizer"),
    ("fts5_own", "SQLite FTS5 bm25()", "own: unicode61"),
    ("rank_bm25_own", "rank_bm25 BM25Okapi", "own: lower().split()"),
)


def run_locomo() -> dict[str, Any]:
    convs = locomo.load()
    questions = [q for c in convs for q in c.questions]
    _log(f"(a) LoCoMo: {len(convs)} conversations, {sum(len(c.turn_ids) for c in convs)} turns, "
         f"{len(questions)} questions with evidence")
    rankings: dict[str, list[list[str]]] = {}
    extra: dict[str, Any] = {}
    started = time.perf_counter()
    rankings["hmsengine"] = _hms_locomo(convs, None)
    rankings["hmsengine_ngram"] = _hms_locomo(convs, "ngram")
    rankings["bm25s_same"], tie = _bm25s_locomo(convs, "hmsengine", BM25S_SAME)
    extra["bm25s_same_tie_aware_recall_at_10"] = sum(tie) / len(tie)
    rankings["bm25s_same_default_params"], tie_d = _bm25s_locomo(convs, "hmsengine", None)
    extra["bm25s_same_default_params_tie_aware_recall_at_10"] = sum(tie_d) / len(tie_d)
    rankings["tantivy_same"] = _tantivy_locomo(convs, "hmsengine")
    rankings["fts5_same"] = _fts5_locomo(convs, "hmsengine")
    rankings["rank_bm25_same"] = _rank_bm25_locomo(convs, "hmsengine")
    rankings["bm25s_own"], _ = _bm25s_locomo(convs, "own", None)
    rankings["tantivy_own"] = _tantivy_locomo(convs, "own")
    rankings["fts5_own"] = _fts5_locomo(convs, "own")
    rankings["rank_bm25_own"] = _rank_bm25_locomo(convs, "own")
    systems = []
    for key, engine, tokenization in LOCOMO_SYSTEMS:
        ranked = rankings[key]
        systems.append({
            "key": key, "engine": engine, "tokenization": tokenization,
            "recall_at_5": sum(locomo.recall_at(r, q.evidence, 5)
                               for r, q in zip(ranked, questions, strict=True)) / len(questions),
            "recall_at_10": sum(locomo.recall_at(r, q.evidence, 10)
                                for r, q in zip(ranked, questions, strict=True)) / len(questions),
            "ndcg_at_10": sum(locomo.ndcg_at(r, q.evidence, 10)
                              for r, q in zip(ranked, questions, strict=True)) / len(questions),
        })
    by = {s["key"]: s for s in systems}
    hms = by["hmsengine"]["recall_at_10"]
    ref = by["bm25s_same"]["recall_at_10"]
    acceptance = {
        "check": "hmsengine recall@10 within 0.005 of bm25s's with the same tokens "
                 "(bm25s: Lucene idf, k1=1.2, b=0.75, as hmsengine)",
        "hmsengine_recall_at_10": hms, "bm25s_recall_at_10": ref, "difference": hms - ref,
        "within": abs(hms - ref) <= ACCEPT_RECALL_DIFF,
        "bm25s_tie_aware_recall_at_10": extra["bm25s_same_tie_aware_recall_at_10"],
        "difference_to_tie_aware": hms - extra["bm25s_same_tie_aware_recall_at_10"],
        "bm25s_default_params_recall_at_10": by["bm25s_same_default_params"]["recall_at_10"],
        "difference_to_default_params": hms - by["bm25s_same_default_params"]["recall_at_10"],
    }
    dropped = [e for c in convs for e in c.dropped_evidence]
    return {
        "conversations": [c.sample_id for c in convs],
        "turns": sum(len(c.turn_ids) for c in convs),
        "questions": len(questions),
        "questions_without_valid_evidence": sum(c.dropped_questions for c in convs),
        "dropped_evidence_ids": dropped,
        "systems": systems, "acceptance": acceptance, **extra,
        "seconds": time.perf_counter() - started,
        "notes": [
            "One index per conversation; documents 'Speaker: text' (+ ' [image: caption]').",
            "Documents scoring 0 (matching no query term) are not counted as retrieved (bm25s "
            "and rank_bm25 otherwise fill the top k with arbitrary non-matching documents).",
            "bm25s breaks ties arbitrarily (hmsengine by document order): bm25s_same's "
            "tie-aware recall@10 is the expectation under uniformly random tie breaking.",
            "tantivy 'own': the question's words (lower-cased, syntax characters removed) "
            "through its query parser; FTS5: the question's words OR-ed as quoted strings.",
        ],
    }


def report_locomo(res: dict[str, Any]) -> None:
    print()
    print(f"(a) LoCoMo dev retrieval: {len(res['conversations'])} conversations, "
          f"{res['turns']} turns, {res['questions']} questions with evidence (per-conversation "
          "indexes).")
    hms = next(s for s in res["systems"] if s["key"] == "hmsengine")["recall_at_10"]
    rows = [[s["engine"], s["tokenization"], f"{s['recall_at_5']:.4f}", f"{s['recall_at_10']:.4f}",
             f"{s['ndcg_at_10']:.4f}", f"{hms - s['recall_at_10']:+.4f}"] for s in res["systems"]]
    print_table(["engine", "tokenization", "recall@5", "recall@10", "nDCG@10",
                 "hmsengine - this (R@10)"], rows)
    a = res["acceptance"]
    print(f"bm25s (same tokens) tie-aware recall@10: {a['bm25s_tie_aware_recall_at_10']:.4f} "
          "(bm25s breaks score ties arbitrarily; hmsengine by document order).")
    print(f"Acceptance: hmsengine recall@10 {a['hmsengine_recall_at_10']:.4f} vs bm25s "
          f"{a['bm25s_recall_at_10']:.4f} with the same tokens: difference "
          f"{a['difference']:+.4f}: {'WITHIN' if a['within'] else 'NOT within'} 0.005.")


# ==================================================================================================
# (b) cosine top-10
# ==================================================================================================


def run_cosine(params: dict[str, Any], repeats: int, seed: int) -> dict[str, Any]:
    import faiss

    started = time.perf_counter()
    n, d = params["rows"], params["dim"]
    rng = np.random.default_rng(seed + 1)
    matrix = l2_normalise_rows(rng.standard_normal((n, d), dtype=np.float32))
    queries = [l2_normalise(rng.standard_normal(d, dtype=np.float32))
               for _ in range(params["vector_queries"])]
    allowed = np.ones(n, dtype=np.uint8)
    index = faiss.IndexFlatIP(d)
    index.add(matrix)
    default_threads = faiss.omp_get_max_threads()
    _log(f"(b) cosine: {n:,} x {d} float32, {len(queries)} queries; faiss default threads "
         f"{default_threads}")

    def ours(q: np.ndarray) -> np.ndarray:
        return cosine_topk(matrix, q, allowed, K)[1]

    def numpy_(q: np.ndarray) -> np.ndarray:
        s = matrix @ q
        top = np.argpartition(-s, K)[:K]
        return top[np.argsort(-s[top], kind="stable")]

    def faiss_(q: np.ndarray) -> np.ndarray:
        return index.search(q[None, :], K)[1][0]

    methods = {"hmsengine_cosine_topk": (ours, None), "numpy_matmul_argpartition": (numpy_, None),
               "faiss_flat_ip_1_thread": (faiss_, 1),
               "faiss_flat_ip_default_threads": (faiss_, default_threads)}
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in methods}
    answers = {}
    for name, (fn, threads) in methods.items():  # warm-up (and the answers to compare)
        if threads is not None:
            faiss.omp_set_num_threads(threads)
        answers[name] = [fn(q).tolist() for q in queries]
    for _ in range(repeats):
        for name, (fn, threads) in methods.items():
            if threads is not None:
                faiss.omp_set_num_threads(threads)
            gc.collect()
            runs[name].append(_timed_loop(fn, queries))
    faiss.omp_set_num_threads(default_threads)
    med = {m: {"qps": median([r["qps"] for r in rs]), "p50_us": median([r["p50_us"] for r in rs]),
               "p99_us": median([r["p99_us"] for r in rs])} for m, rs in runs.items()}
    best_faiss = max(med["faiss_flat_ip_1_thread"]["qps"],
                     med["faiss_flat_ip_default_threads"]["qps"])
    ours_qps = med["hmsengine_cosine_topk"]["qps"]
    ratios = {m: {"qps_over_faiss_1_thread": ratio(v["qps"], med["faiss_flat_ip_1_thread"]["qps"]),
                  "qps_over_faiss_default": ratio(v["qps"],
                                                  med["faiss_flat_ip_default_threads"]["qps"]),
                  "qps_over_best_faiss": ratio(v["qps"], best_faiss)} for m, v in med.items()}
    same = {m: float(np.mean([len(set(a) & set(b)) / K for a, b in
                              zip(answers[m], answers["faiss_flat_ip_1_thread"], strict=True)]))
            for m in answers}
    return {"rows": n, "dim": d, "queries": len(queries), "faiss_default_threads": default_threads,
            "runs": runs, "medians": med, "ratios": ratios, "best_faiss_qps": best_faiss,
            "hmsengine_time_over_best_faiss": ratio(best_faiss, ours_qps),
            "top10_agreement_with_faiss": same, "seconds": time.perf_counter() - started,
            "notes": ["cosine_topk: the engine's numba kernel on one thread (fixed summation "
                      "order, ties by row), called directly, not through search_documents.",
                      "numpy: matrix @ q through its BLAS (default threads) + argpartition.",
                      "faiss-cpu IndexFlatIP.search with one query, 1 OpenMP thread and the "
                      "default thread count."]}


def report_cosine(res: dict[str, Any], repeats: int) -> None:
    print()
    print(f"(b) Cosine top 10 over {res['rows']:,} x {res['dim']} float32 (normalised rows), "
          f"{res['queries']} queries one at a time; medians of {repeats} "
          f"repeat{'s' if repeats > 1 else ''}.")
    names = {"hmsengine_cosine_topk": "hmsengine cosine_topk (1 thread)",
             "numpy_matmul_argpartition": "numpy M @ q + argpartition",
             "faiss_flat_ip_1_thread": "faiss IndexFlatIP, 1 thread",
             "faiss_flat_ip_default_threads":
                 f"faiss IndexFlatIP, {res['faiss_default_threads']} threads (default)"}
    rows = [[names[m], fmt_rate(v["qps"]), f"{v['p50_us'] / 1000:.2f}", f"{v['p99_us'] / 1000:.2f}",
             fmt_ratio(res["ratios"][m]["qps_over_faiss_1_thread"]),
             fmt_ratio(res["ratios"][m]["qps_over_faiss_default"])]
            for m, v in res["medians"].items()]
    print_table(["method", "queries/s", "p50 ms", "p99 ms", "q/s vs faiss 1t",
                 "q/s vs faiss default"], rows)


# ==================================================================================================
# the run
# ==================================================================================================


def _aims(cos: dict[str, Any] | None) -> list[dict[str, Any]]:
    measured: dict[str, float | None] = {}
    if cos is not None:
        measured["cosine_vs_faiss"] = cos["ratios"]["hmsengine_cosine_topk"]["qps_over_best_faiss"]
    out = []
    print()
    for text, key, threshold in AIMS:
        r = measured.get(key)
        met = None if r is None else r >= threshold
        out.append({"aim": text, "ratio": r, "threshold": threshold, "met": met})
        verdict = "not measured" if met is None else ("MET" if met else "MISSED")
        print(f"Aim: {text}: {verdict}" + ("" if r is None else f" (measured {r:.2f}x, "
                                                                 f"needs >= {threshold:.2f}x)"))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/search.py",
        description="Search quality on LoCoMo of hmsengine next to bm25s, tantivy-py, SQLite FTS5 "
                    "and rank_bm25, and cosine top-10 speed at 100k x 384 next to numpy and "
                    "faiss, in one run (lexical speed: bench/lexical.py). Prints tables of "
                    "medians and writes every raw measurement to bench/results/search.json.")
    parser.add_argument("--quick", action="store_true",
                        help=f"a smoke run: {QUICK['rows']:,} vectors, one repeat; results to "
                             "search-quick.json")
    parser.add_argument("--parts", default="locomo,cosine",
                        help="comma-separated parts to run (default %(default)s)")
    parser.add_argument("--rows", type=int, help=f"cosine rows (default {DEFAULTS['rows']:,})")
    parser.add_argument("--repeats", type=int,
                        help=f"repeats of every timing (default {DEFAULTS['repeats']}; "
                             "1 with --quick)")
    parser.add_argument("--seed", type=int, default=SEED, help="seed (default %(default)s)")
    parser.add_argument("--output", type=Path, default=None,
                        help="results JSON (default bench/results/search.json)")
    args = parser.parse_args(argv)
    params = dict(DEFAULTS)
    if args.quick:
        params.update(QUICK)
    for name in ("rows", "repeats"):
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    if parts - {"locomo", "cosine"}:
        parser.error("--parts: expected a subset of locomo,cosine (lexical speed moved to "
                     "bench/lexical.py)")
    if params["repeats"] < 1 or params["rows"] < K:
        parser.error("--repeats and --rows must be positive")
    repeats = params["repeats"]
    output = args.output or RESULTS_DIR / ("search-quick.json" if args.quick else "search.json")

    started = time.perf_counter()
    loc = cos = None
    with scratch_root() as root:
        facts = machine_facts(root)
        facts["source"]["package_path"] = str(Path(hmsengine.__file__).resolve().parent)
        facts["versions"].update({p: _version(p) for p in
                                  ("bm25s", "tantivy", "rank-bm25", "faiss-cpu", "PyStemmer")})
        warning = busy_warning()
        if warning:
            _log(warning)
        if "locomo" in parts:
            loc = run_locomo()
        if "cosine" in parts:
            cos = run_cosine(params, repeats, args.seed)
    if loc is not None:
        report_locomo(loc)
    if cos is not None:
        report_cosine(cos, repeats)
    print()
    print(METHOD_NOTE)
    aims = _aims(cos)
    elapsed = time.perf_counter() - started
    payload = {
        "benchmark": "search",
        "question": QUESTION,
        "date": now_iso(),
        "method": METHOD_NOTE + " Timings are medians of repeated runs (repeats interleaved: "
                  "every engine once, then again); ratios compare medians from this same run.",
        "machine": facts,
        "parameters": {**params, "quick": args.quick, "seed": args.seed, "k": K,
                       "parts": sorted(parts), "bm25s_same_tokens_params": BM25S_SAME},
        "locomo": loc, "cosine": cos, "aims": aims,
        "load_average_at_end": load_average(),
        "wall_seconds": round(elapsed, 1),
    }
    path = write_results(output, payload)
    print(f"\nWrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path} "
          f"({elapsed:.0f} s).")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
