"""How well and how fast does hmsengine search, next to bm25s, tantivy-py, SQLite FTS5, rank_bm25
and (for vectors) numpy and faiss, on this machine?

Three parts, measured side by side in one run:

(a) Retrieval quality on LoCoMo (the seven dev conversations, ``bench/locomo.py``): one index per
    conversation over its turns; each question with evidence is a query; recall@5, recall@10 and
    nDCG@10 of the evidence turns, averaged over all questions. Every peer is run twice: with its
    own default tokenization, and fed the exact tokens of hmsengine's "standard" analyzer
    (``get_analyzer("standard").tokenize``) for documents and queries, so the engines differ
    only in ranking. The acceptance check: hmsengine's recall@10 within 0.005 of bm25s's with
    the same tokens (bm25s set to hmsengine's BM25: Lucene idf, k1=1.2, b=0.75).
(b) Lexical speed on a seeded Zipf corpus (default 200,000 documents of 10-60 words over a
    50,000-word vocabulary, Zipf exponent 1.1; queries of 2-5 words from the same distribution):
    index build documents/s (from raw text, tokenizing included) and queries/s one query at a
    time with p50/p99 latency, top 10. hmsengine is timed through the real async call
    ``await engine.search_documents(q, k=10)`` in a loop inside ``trio.run``. Its build ends
    when every document is searchable and no merge is pending; its queries run once the
    index-builder is idle, after the consolidation it starts when commits have stopped for half
    a second (engine/indexer.py; the JSON records how long that took and the segments queried).
(c) Cosine top 10 over 100,000 x 384 float32 rows (seeded, normalised): hmsengine's
    ``cosine_topk`` kernel vs numpy (``M @ q`` + argpartition) vs faiss-cpu ``IndexFlatIP`` with
    1 thread and with its default threads.

Repeats are interleaved (every engine once, then again); tables show medians; ratios compare
medians from the same run. Run: ``python bench/search.py`` (about 10 minutes on a 2-core VM),
``--quick`` for a smoke run (about a minute). Writes bench/results/search.json
(``--quick``: search-quick.json).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import random
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
    fresh_dir,
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

QUESTION = ("Search quality (LoCoMo recall) and speed (lexical queries/s and build docs/s at 200k "
            "documents, cosine top-10 at 100k x 384) of hmsengine next to bm25s, tantivy-py, "
            "SQLite FTS5, rank_bm25, numpy and faiss")
SEED = 20240611
K = 10
CHUNK = 10_000  # documents per put_documents call (the engine's limit per transaction)
ACCEPT_RECALL_DIFF = 0.005

DEFAULTS = {
    "docs": 200_000, "vocab": 50_000, "zipf": 1.1, "min_len": 10, "max_len": 60,
    "queries": 300, "fts5_queries": 100, "rank_bm25_queries": 20,
    "rows": 100_000, "dim": 384, "vector_queries": 40, "repeats": 3,
}
QUICK = {"docs": 20_000, "queries": 100, "fts5_queries": 100, "rank_bm25_queries": 20,
         "rows": 20_000, "vector_queries": 20, "repeats": 1}
LEX_ENGINES = ("hmsengine", "bm25s", "tantivy", "sqlite_fts5", "rank_bm25")
LEX_NAMES = {"hmsengine": "hmsengine (in memory)", "bm25s": "bm25s (numba)",
             "tantivy": "tantivy-py", "sqlite_fts5": "SQLite FTS5", "rank_bm25": "rank_bm25"}
BM25S_SAME = {"method": "lucene", "k1": 1.2, "b": 0.75}  # hmsengine's BM25 (kernels/bm25.py)
TANTIVY_HEAP = 256_000_000
WARMUP_QUERIES = 20

AIMS = (
    ("lexical queries/s at 200k >= bm25s's", "lex_qps_vs_bm25s", 1.0),
    ("lexical queries/s at 200k >= 0.7x tantivy-py's", "lex_qps_vs_tantivy", 0.7),
    ("cosine top-10 within 1.2x of faiss's flat index (queries/s >= 1/1.2 of the faster faiss "
     "setting)", "cosine_vs_faiss", 1 / 1.2),
    ("index build docs/s >= bm25s's", "build_vs_bm25s", 1.0),
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
# (b) lexical speed on a Zipf corpus
# ==================================================================================================


def make_vocabulary(size: int, seed: int) -> list[str]:
    """``size`` distinct pseudo-words that every engine tokenizes to themselves: lower-case ASCII
    letters, 5-9 characters, not a stop word, unchanged by hmsengine's stemmer."""
    analyzer = get_analyzer("standard")
    rng = random.Random(seed)
    consonants, vowels, finals = "bcdfghjklmnprstvwz", "aeiou", "kmntpx"
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        w = "".join(rng.choice(consonants) + rng.choice(vowels)
                    for _ in range(rng.randint(2, 4))) + rng.choice(finals)
        if w not in seen:
            seen.add(w)
            if analyzer.tokenize(w) == [w]:
                words.append(w)
    return words


def make_zipf(params: dict[str, Any], seed: int) -> dict[str, Any]:
    """Documents and queries; word of rank r drawn with probability ~ r^-s."""
    vocab = make_vocabulary(params["vocab"], seed)
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, len(vocab) + 1, dtype=np.float64)
    p = ranks ** -params["zipf"]
    cdf = np.cumsum(p / p.sum())
    cdf[-1] = 1.0
    n = params["docs"]
    lens = rng.integers(params["min_len"], params["max_len"] + 1, n)
    words = np.searchsorted(cdf, rng.random(int(lens.sum())), side="right").astype(np.int32)
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=starts[1:])
    arr = np.asarray(vocab, dtype=object)
    texts = [" ".join(arr[words[starts[i]:starts[i + 1]]]) for i in range(n)]
    qlens = rng.integers(2, 6, params["queries"])
    qwords = [np.searchsorted(cdf, rng.random(int(m)), side="right") for m in qlens]
    queries = [" ".join(arr[w]) for w in qwords]
    # Document frequencies: the postings a term-at-a-time engine walks for each query.
    doc_of = np.repeat(np.arange(n, dtype=np.int64), lens)
    pairs = np.unique(doc_of * len(vocab) + words)
    df = np.bincount((pairs % len(vocab)).astype(np.int64), minlength=len(vocab))
    postings = [int(df[np.unique(w)].sum()) for w in qwords]
    top = [int(df[np.unique(w)].max()) for w in qwords]
    return {
        "texts": texts, "queries": queries, "ids": [f"d{i:07d}" for i in range(n)],
        "facts": {
            "documents": n, "vocabulary": len(vocab), "zipf_exponent": params["zipf"],
            "doc_len_words": [params["min_len"], params["max_len"]],
            "mean_doc_len_words": float(lens.mean()),
            "queries": len(queries), "query_terms": [2, 5],
            "df_of_rank_1_word": int(df[0]), "df_of_rank_10_word": int(df[9]),
            "query_postings_median": float(np.median(postings)),
            "query_postings_p90": float(np.percentile(postings, 90)),
            "queries_with_a_term_in_over_half_the_documents":
                float(np.mean(np.asarray(top) > n / 2)),
        },
    }


# -- the engines: each returns {"build": {...}, "query": {...}, "top": [...]} ---------------------


def lex_hmsengine(data: dict[str, Any], queries: list[str], path: Path | None) -> dict[str, Any]:
    ids, texts = data["ids"], data["texts"]
    chunks = [[{"id": ids[i], "text": texts[i]} for i in range(j, min(j + CHUNK, len(ids)))]
              for j in range(0, len(ids), CHUNK)]
    out: dict[str, Any] = {}

    async def main() -> None:
        gc.collect()
        clock = time.perf_counter
        start = clock()
        async with Engine.open(path, analyzer="standard") as engine:
            opened = clock()
            for items in chunks:
                await engine.put_documents(items)
            written = clock()
            await _settle(engine)
            done = clock()
            snap = engine._indexer.snapshot
            out["build"] = {
                "seconds": done - start, "docs_per_s": len(ids) / (done - start),
                "open_seconds": opened - start, "put_seconds": written - opened,
                "fold_wait_seconds": done - written,
                "segments": [v.segment.n_docs for v in snap.segments], "durable": path is not None,
            }
            closing = clock()
            if queries:
                await _settle(engine, consolidated=True)
                out["build"]["consolidate_seconds"] = clock() - closing
                out["build"]["segments_queried"] = [
                    v.segment.n_docs for v in engine._indexer.snapshot.segments]
                assert len(engine._indexer.snapshot.tail) == 0
                search = engine.search_documents
                for q in queries[:WARMUP_QUERIES]:
                    await search(q, k=K)
                lat = []
                answers = []
                t0 = clock()
                for q in queries:
                    t = clock()
                    answers.append(await search(q, k=K))
                    lat.append(clock() - t)
                out["query"] = _latency_summary(lat, clock() - t0)
                out["top"] = [[int(h.id[1:]) for h in hits] for hits in answers]
                closing = clock()
        out["build"]["close_seconds"] = time.perf_counter() - closing

    trio.run(main)
    return out


def lex_bm25s(data: dict[str, Any], queries: list[str]) -> dict[str, Any]:
    import bm25s

    gc.collect()
    start = time.perf_counter()
    tokens = bm25s.tokenize(data["texts"], stopwords=None, show_progress=False)
    tokenized = time.perf_counter()
    retriever = bm25s.BM25(backend="numba", **BM25S_SAME)
    retriever.index(tokens, show_progress=False)
    done = time.perf_counter()
    build = {"seconds": done - start, "docs_per_s": len(data["texts"]) / (done - start),
             "tokenize_seconds": tokenized - start, "index_seconds": done - tokenized}
    del tokens
    retrieve = retriever.retrieve

    def one(q: str) -> Any:
        return retrieve([q.split()], k=K, n_threads=1, show_progress=False)

    for q in queries[:WARMUP_QUERIES]:
        one(q)
    query = _timed_loop(one, queries)
    top = []
    for q in queries:
        d, s = one(q)
        top.append([int(x) for x, y in zip(d[0], s[0], strict=True) if y > 0])
    return {"build": build, "query": query, "top": top}


def lex_tantivy(data: dict[str, Any], queries: list[str]) -> dict[str, Any]:
    import tantivy

    gc.collect()
    start = time.perf_counter()
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("id", stored=True, tokenizer_name="raw")
    sb.add_text_field("text", stored=True, tokenizer_name="default")
    index = tantivy.Index(sb.build())
    writer = index.writer(TANTIVY_HEAP, 1)
    document = tantivy.Document
    add = writer.add_document
    for i, t in zip(data["ids"], data["texts"], strict=True):
        add(document(id=i, text=t))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    done = time.perf_counter()
    searcher = index.searcher()
    build = {"seconds": done - start, "docs_per_s": len(data["ids"]) / (done - start),
             "segments": searcher.num_segments, "writer_threads": 1}
    parse, search = index.parse_query, searcher.search

    def one(q: str) -> Any:
        return search(parse(q, ["text"]), K).hits

    for q in queries[:WARMUP_QUERIES]:
        one(q)
    return {"build": build, "query": _timed_loop(one, queries)}


def lex_fts5(data: dict[str, Any], queries: list[str]) -> dict[str, Any]:
    gc.collect()
    start = time.perf_counter()
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(text)")
    with db:
        db.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)",
                       ((n, t) for n, t in enumerate(data["texts"])))
    done = time.perf_counter()
    build = {"seconds": done - start, "docs_per_s": len(data["texts"]) / (done - start)}
    sql = "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10"
    execute = db.execute

    def one(q: str) -> Any:
        return execute(sql, (_fts_or(q.split()),)).fetchall()

    for q in queries[:5]:
        one(q)
    query = _timed_loop(one, queries)
    top = [[r for (r,) in one(q)] for q in queries[:50]]
    db.close()
    return {"build": build, "query": query, "top": top}


def lex_rank_bm25(data: dict[str, Any], queries: list[str]) -> dict[str, Any]:
    from rank_bm25 import BM25Okapi

    gc.collect()
    start = time.perf_counter()
    bm = BM25Okapi([t.split() for t in data["texts"]])
    done = time.perf_counter()
    build = {"seconds": done - start, "docs_per_s": len(data["texts"]) / (done - start)}

    def one(q: str) -> Any:
        scores = bm.get_scores(q.split())
        top = np.argpartition(-scores, K)[:K]
        return top[np.argsort(-scores[top], kind="stable")]

    one(queries[0])
    return {"build": build, "query": _timed_loop(one, queries)}


def _agreement(a: list[list[int]], b: list[list[int]]) -> float | None:
    """Mean overlap of two engines' top-10 sets over the queries both answered."""
    pairs = [(x, y) for x, y in zip(a, b, strict=False) if x or y]
    if not pairs:
        return None
    return sum(len(set(x) & set(y)) / max(len(x), len(y)) for x, y in pairs) / len(pairs)


def run_lexical(params: dict[str, Any], repeats: int, seed: int, root: Path,
                durable_repeats: int) -> dict[str, Any]:
    started = time.perf_counter()
    data = make_zipf(params, seed)
    _log(f"(b) Zipf corpus: {params['docs']:,} documents, {len(data['queries'])} queries "
         f"(generated in {time.perf_counter() - started:.1f} s)")
    queries = data["queries"]
    slow_queries = queries[:params["rank_bm25_queries"]]
    fts5_queries = queries[:params["fts5_queries"]]
    runs: dict[str, list[dict[str, Any]]] = {e: [] for e in LEX_ENGINES}
    runs["hmsengine_durable"] = []
    agreement: dict[str, list[float | None]] = {"bm25s": [], "sqlite_fts5_first_50": []}
    # Warm-up, not recorded: imports, numba caches, first open.
    small = {"ids": data["ids"][:2000], "texts": data["texts"][:2000]}
    lex_hmsengine(small, queries[:30], None)
    lex_bm25s(small, queries[:30])
    lex_tantivy(small, queries[:30])
    for rep in range(repeats):
        _log(f"  repeat {rep + 1}/{repeats}")
        for engine in LEX_ENGINES:
            if engine == "hmsengine":
                r = lex_hmsengine(data, queries, None)
            elif engine == "bm25s":
                r = lex_bm25s(data, queries)
            elif engine == "tantivy":
                r = lex_tantivy(data, queries)
            elif engine == "sqlite_fts5":
                r = lex_fts5(data, fts5_queries)
            else:
                r = lex_rank_bm25(data, slow_queries)
            top = r.pop("top", None)
            if engine == "hmsengine":
                hms_top = top
            elif engine == "bm25s" and top is not None:
                agreement["bm25s"].append(_agreement(hms_top, top))
            elif engine == "sqlite_fts5" and top is not None:
                agreement["sqlite_fts5_first_50"].append(_agreement(hms_top[:len(top)], top))
            runs[engine].append(r)
            _log(f"    {engine:<12} build {fmt_rate(r['build']['docs_per_s']):>9} docs/s "
                 f"({r['build']['seconds']:.1f} s) | {fmt_rate(r['query']['qps']):>7} q/s, "
                 f"p50 {r['query']['p50_us']:,.0f} us, p99 {r['query']['p99_us']:,.0f} us")
        if rep < durable_repeats:
            with fresh_dir(root, "hms-durable") as path:
                r = lex_hmsengine(data, [], path / "store")
            runs["hmsengine_durable"].append(r)
            _log(f"    hmsengine on disk: build {fmt_rate(r['build']['docs_per_s'])} docs/s "
                 f"({r['build']['seconds']:.1f} s, close {r['build']['close_seconds']:.1f} s)")
    summary: dict[str, Any] = {}
    for engine, rs in runs.items():
        if not rs:
            continue
        s: dict[str, Any] = {"build_docs_per_s": median([r["build"]["docs_per_s"] for r in rs]),
                             "build_seconds": median([r["build"]["seconds"] for r in rs])}
        if "query" in rs[0]:
            s.update(qps=median([r["query"]["qps"] for r in rs]),
                     p50_us=median([r["query"]["p50_us"] for r in rs]),
                     p99_us=median([r["query"]["p99_us"] for r in rs]),
                     queries_per_run=rs[0]["query"]["queries"])
        summary[engine] = s
    hms = summary["hmsengine"]
    ratios = {}
    for engine in LEX_ENGINES[1:]:
        ratios[engine] = {"qps_hmsengine_over_peer": ratio(hms["qps"], summary[engine]["qps"]),
                          "build_hmsengine_over_peer": ratio(hms["build_docs_per_s"],
                                                             summary[engine]["build_docs_per_s"])}
    return {"corpus": data["facts"], "runs": runs, "medians": summary, "ratios": ratios,
            "top10_agreement_with_hmsengine": {k: median([x for x in v if x is not None])
                                               for k, v in agreement.items()},
            "seconds": time.perf_counter() - started,
            "notes": [
                "hmsengine: Engine.open(None) + put_documents in chunks of 10,000 + waiting until "
                "the tail is folded and no merge is pending; queries through "
                "'await engine.search_documents(q, k=10)' one at a time inside trio.run. The "
                "on-disk build (Engine.open(dir) on the repository's disk, fsynced journal) is "
                "for information; its close time is reported apart.",
                "bm25s: bm25s.tokenize (its regex, no stop words) + BM25(backend='numba', "
                "method='lucene', k1=1.2, b=0.75).index; query: retrieve([q.split()], k=10, "
                "n_threads=1). Queries are pre-split (no bm25s.tokenize per query).",
                "tantivy-py: in-RAM index, 'default' tokenizer, id and text stored, 1 writer "
                "thread, commit + wait_merging_threads; query: parse_query + search(k=10) "
                "returning scores and doc addresses (no stored-field fetch).",
                "SQLite FTS5: in-memory database, unicode61, executemany in one transaction; "
                "query: MATCH of the words OR-ed, ORDER BY bm25(t) LIMIT 10; it walks every "
                f"matching row, so only the first {params['fts5_queries']} queries are timed.",
                f"rank_bm25: BM25Okapi over split texts; it scores every document in Python per "
                f"query term, so only the first {params['rank_bm25_queries']} queries are timed.",
                "Top-10 agreement: mean overlap of hmsengine's top-10 set with the peer's (bm25s "
                "with hmsengine's BM25 formula; bm25s breaks ties arbitrarily).",
            ]}


def report_lexical(res: dict[str, Any], repeats: int) -> None:
    c = res["corpus"]
    m, rt = res["medians"], res["ratios"]
    print()
    print(f"(b) Lexical search, Zipf corpus: {c['documents']:,} documents "
          f"({c['vocabulary']:,} words, s={c['zipf_exponent']}, "
          f"{c['doc_len_words'][0]}-{c['doc_len_words'][1]} words), "
          f"{c['queries']} queries of 2-5 words, top 10, one query at a time; medians of "
          f"{repeats} repeat{'s' if repeats > 1 else ''}.")
    rows = []
    for engine in (*LEX_ENGINES, "hmsengine_durable"):
        s = m.get(engine)
        if s is None:
            continue
        r = rt.get(engine, {})
        name = LEX_NAMES.get(engine, "hmsengine (on disk, build only)")
        if engine in ("rank_bm25", "sqlite_fts5") and s["queries_per_run"] < c["queries"]:
            name += f" (first {s['queries_per_run']} queries)"
        rows.append([name, fmt_rate(s["build_docs_per_s"]), fmt_rate(s.get("qps")),
                     "-" if s.get("p50_us") is None else f"{s['p50_us']:,.0f}",
                     "-" if s.get("p99_us") is None else f"{s['p99_us']:,.0f}",
                     fmt_ratio(r.get("qps_hmsengine_over_peer")),
                     fmt_ratio(r.get("build_hmsengine_over_peer"))])
    print_table(["engine", "build docs/s", "queries/s", "p50 us", "p99 us", "hms/peer q/s",
                 "hms/peer build"], rows)
    ag = res["top10_agreement_with_hmsengine"]
    print(f"Median postings walked per query (summed df): {c['query_postings_median']:,.0f} "
          f"(p90 {c['query_postings_p90']:,.0f}); queries with a term in over half the documents: "
          f"{c['queries_with_a_term_in_over_half_the_documents']:.0%}. Top-10 agreement with "
          f"hmsengine: bm25s {ag['bm25s'] or 0:.3f}, FTS5 {ag['sqlite_fts5_first_50'] or 0:.3f}.")


# ==================================================================================================
# (c) cosine top-10
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
    _log(f"(c) cosine: {n:,} x {d} float32, {len(queries)} queries; faiss default threads "
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
    print(f"(c) Cosine top 10 over {res['rows']:,} x {res['dim']} float32 (normalised rows), "
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


def _aims(lex: dict[str, Any] | None, cos: dict[str, Any] | None) -> list[dict[str, Any]]:
    measured: dict[str, float | None] = {}
    if lex is not None:
        measured["lex_qps_vs_bm25s"] = lex["ratios"]["bm25s"]["qps_hmsengine_over_peer"]
        measured["lex_qps_vs_tantivy"] = lex["ratios"]["tantivy"]["qps_hmsengine_over_peer"]
        measured["build_vs_bm25s"] = lex["ratios"]["bm25s"]["build_hmsengine_over_peer"]
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
        description="Search quality on LoCoMo and speed (lexical at 200k documents, cosine at "
                    "100k x 384) of hmsengine next to bm25s, tantivy-py, SQLite FTS5, rank_bm25, "
                    "numpy and faiss, in one run. Prints tables of medians and writes every raw "
                    "measurement to bench/results/search.json.")
    parser.add_argument("--quick", action="store_true",
                        help=f"a smoke run: {QUICK['docs']:,} documents, {QUICK['rows']:,} "
                             "vectors, one repeat; results to search-quick.json")
    parser.add_argument("--parts", default="locomo,lexical,cosine",
                        help="comma-separated parts to run (default %(default)s)")
    parser.add_argument("--docs", type=int, help=f"Zipf documents (default {DEFAULTS['docs']:,})")
    parser.add_argument("--queries", type=int,
                        help=f"Zipf queries (default {DEFAULTS['queries']})")
    parser.add_argument("--rows", type=int, help=f"cosine rows (default {DEFAULTS['rows']:,})")
    parser.add_argument("--repeats", type=int,
                        help=f"repeats of every timing (default {DEFAULTS['repeats']}; "
                             "1 with --quick)")
    parser.add_argument("--durable-repeats", type=int, default=1,
                        help="on-disk hmsengine builds, for information (default %(default)s)")
    parser.add_argument("--seed", type=int, default=SEED, help="seed (default %(default)s)")
    parser.add_argument("--output", type=Path, default=None,
                        help="results JSON (default bench/results/search.json)")
    args = parser.parse_args(argv)
    params = dict(DEFAULTS)
    if args.quick:
        params.update(QUICK)
    for name in ("docs", "queries", "rows", "repeats"):
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    if parts - {"locomo", "lexical", "cosine"}:
        parser.error("--parts: expected a subset of locomo,lexical,cosine")
    if params["repeats"] < 1 or params["docs"] < 100 or params["queries"] < 1 or params["rows"] < K:
        parser.error("--repeats, --docs, --queries and --rows must be positive (docs >= 100)")
    repeats = params["repeats"]
    output = args.output or RESULTS_DIR / ("search-quick.json" if args.quick else "search.json")

    started = time.perf_counter()
    loc = lex = cos = None
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
        if "lexical" in parts:
            lex = run_lexical(params, repeats, args.seed, root, args.durable_repeats)
        if "cosine" in parts:
            cos = run_cosine(params, repeats, args.seed)
    if loc is not None:
        report_locomo(loc)
    if lex is not None:
        report_lexical(lex, repeats)
    if cos is not None:
        report_cosine(cos, repeats)
    print()
    print(METHOD_NOTE)
    aims = _aims(lex, cos)
    elapsed = time.perf_counter() - started
    payload = {
        "benchmark": "search",
        "question": QUESTION,
        "date": now_iso(),
        "method": METHOD_NOTE + " Timings are medians of repeated runs (repeats interleaved: "
                  "every engine once, then again); ratios compare medians from this same run.",
        "machine": facts,
        "parameters": {**params, "quick": args.quick, "seed": args.seed, "k": K,
                       "parts": sorted(parts), "put_documents_chunk": CHUNK,
                       "durable_repeats": args.durable_repeats,
                       "bm25s_same_tokens_params": BM25S_SAME},
        "locomo": loc, "lexical": lex, "cosine": cos, "aims": aims,
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
