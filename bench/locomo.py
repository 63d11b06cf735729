"""LoCoMo as a retrieval task, for benchmarks: load the dev conversations, score rankings.

The setup of ``shared/data/locomo/README.md``: each conversation is its own corpus; its documents
are the turns, ``"Speaker: text"`` plus ``" [image: caption]"`` when the turn has a
``blip_caption``; its queries are the questions that have evidence; a hit is a retrieved turn
whose ``dia_id`` is one of the question's evidence ids.

Evidence ids are taken as written, with two repairs that only touch malformed entries of the
published file: an entry holding several ids separated by ``;`` (``"D8:6; D9:17"``) counts as
those ids, and ids that name no turn of the conversation (``"D"``, ``"D:11:26"``, a turn number
past the end of a session) are dropped. A question left without a valid id is not a query.

Metrics, per question, then averaged over all questions of all conversations (micro average):
``recall@k`` = evidence ids among the top ``k`` / evidence ids; ``nDCG@k`` with binary gains,
ideal DCG over ``min(k, evidence ids)`` relevant results.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

_REL = Path("shared") / "data" / "locomo" / "locomo_dev.json"
_REPO = Path(__file__).resolve().parents[1]


def default_path() -> Path:
    """``$HMS_LOCOMO`` if set, else ``shared/data/locomo/locomo_dev.json`` in the checkout or in
    the directory above it (the workspace layout)."""
    env = os.environ.get("HMS_LOCOMO")
    if env:
        return Path(env)
    for base in (_REPO, _REPO.parent):
        if (base / _REL).is_file():
            return base / _REL
    return _REPO.parent / _REL


@dataclass(frozen=True)
class Question:
    text: str
    evidence: frozenset[str]
    category: int


@dataclass
class Conversation:
    sample_id: str
    turn_ids: list[str] = field(default_factory=list)
    turn_texts: list[str] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    dropped_evidence: list[str] = field(default_factory=list)
    dropped_questions: int = 0


def turn_text(turn: dict) -> str:
    """``"Speaker: text"`` plus ``" [image: caption]"`` when the turn carries a caption."""
    text = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    if caption:
        text += f" [image: {caption}]"
    return text


def _sessions(conversation: dict) -> list[list[dict]]:
    numbered = []
    for key, value in conversation.items():
        if key.startswith("session_") and isinstance(value, list):
            numbered.append((int(key.split("_")[1]), value))
    return [turns for _, turns in sorted(numbered)]


def load(path: str | os.PathLike[str] | None = None) -> list[Conversation]:
    """Every conversation of the file (the dev file: seven), turns in order, valid questions."""
    data = json.loads(Path(path or default_path()).read_text(encoding="utf-8"))
    out = []
    for sample in data:
        conv = Conversation(sample_id=sample["sample_id"])
        for turns in _sessions(sample["conversation"]):
            for turn in turns:
                conv.turn_ids.append(turn["dia_id"])
                conv.turn_texts.append(turn_text(turn))
        if len(set(conv.turn_ids)) != len(conv.turn_ids):
            raise ValueError(f"{conv.sample_id}: repeated dia_id among the turns")
        known = set(conv.turn_ids)
        for qa in sample.get("qa", []):
            raw = qa.get("evidence") or []
            if not raw:
                continue
            ids = [part.strip() for entry in raw for part in str(entry).split(";") if part.strip()]
            good = frozenset(i for i in ids if i in known)
            conv.dropped_evidence.extend(i for i in ids if i not in known)
            if not good:
                conv.dropped_questions += 1
                continue
            conv.questions.append(Question(text=qa["question"], evidence=good,
                                           category=int(qa.get("category", 0))))
        out.append(conv)
    return out


def recall_at(ranked: Sequence[str], evidence: frozenset[str], k: int) -> float:
    return len(evidence.intersection(ranked[:k])) / len(evidence)


def ndcg_at(ranked: Sequence[str], evidence: frozenset[str], k: int) -> float:
    dcg = sum(1.0 / math.log2(r + 2) for r, d in enumerate(ranked[:k]) if d in evidence)
    ideal = sum(1.0 / math.log2(r + 2) for r in range(min(k, len(evidence))))
    return dcg / ideal


def tie_aware_recall(scores: Sequence[float], ids: Sequence[str], evidence: frozenset[str],
                     k: int) -> float:
    """Expected ``recall@k`` when ties at the k-th score are broken uniformly at random.

    ``scores`` are one query's scores of every document (``ids`` in the same order); documents
    scoring <= 0 match no query term and are never retrieved. Documents above the k-th score
    count fully; the ``t`` documents tied at it share the ``r`` remaining slots (each ``r / t``).
    """
    pairs = sorted(((s, d) for s, d in zip(scores, ids, strict=True) if s > 0), reverse=True)
    if not pairs:
        return 0.0
    if len(pairs) <= k:
        return len(evidence.intersection(d for _, d in pairs)) / len(evidence)
    bar = pairs[k - 1][0]
    above = [d for s, d in pairs if s > bar]
    tied = [d for s, d in pairs if s == bar]
    slots = k - len(above)
    found = len(evidence.intersection(above)) + len(evidence.intersection(tied)) * slots / len(tied)
    return found / len(evidence)
