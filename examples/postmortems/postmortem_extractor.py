"""A deterministic, rule-based extractor for the post-mortems of this example.

``extract(chunk, current_facts)`` is an extractor for ``Memory.load``: it reads one chunk (with
its heading prefix) and returns the facts to remember. The post-mortems follow one template:

    # <date>: <title>
    - Component: ...            - Failure class: ...         - Specific cause: ...
    ## Remediation
    - <one action per bullet>

From the chunk that holds the bullets it writes one fact naming the incident (date and title),
its failure class and its specific cause: the class is what lets a later incident of the same
class find it, the cause what tells the two apart. From a chunk that holds remediation bullets it
writes one procedure per bullet, naming the incident and its class. A remediation section can
land in a later chunk than the bullets; its class then comes from the incident's fact among the
current facts, which the loader wrote with the earlier chunk.
"""

from __future__ import annotations

import re

from hmsengine import Fact, RememberInput

_TITLE = re.compile(r"^# (\d{4}-\d{2}-\d{2}): (.+)$")
_FIELD = re.compile(r"^- (Component|Failure class|Specific cause): (.+)$", re.MULTILINE)


def _class_name(failure_class: str) -> str:
    """The class without its explanation: 'node group cannot grow, so ...' -> 'node group
    cannot grow'."""
    return failure_class.split(",")[0].strip().rstrip(".")


def _remediation(chunk: str) -> list[str]:
    """The bullets of the chunk's remediation section, if the chunk holds one."""
    bullets: list[str] = []
    inside = False
    for line in chunk.split("\n")[1:]:  # the first line is the prefix
        if line.startswith("#"):
            inside = line.strip() == "## Remediation"
        elif inside and line.startswith("- "):
            bullets.append(line[2:].strip())
    return bullets


def extract(chunk: str, current_facts: list[Fact]) -> list[RememberInput]:
    """The facts of one chunk of a post-mortem (see the module docstring)."""
    found = _TITLE.match(chunk.split("\n", 1)[0].split(" > ")[0])
    if found is None:
        return []
    date, title = found.groups()
    fields = dict(_FIELD.findall(chunk))
    facts: list[RememberInput] = []
    if "Failure class" in fields:
        component = fields.get("Component", "unknown")
        failure_class = _class_name(fields["Failure class"])
        cause = fields.get("Specific cause", "not recorded")
        facts.append(RememberInput(
            text=(f'Incident {date} "{title}" on {component}: failure class: '
                  f"{fields['Failure class']}. Specific cause: {cause}."),
            subject=component, entities=(failure_class,), kind="fact",
            metadata={"incident": date, "title": title, "class": failure_class,
                      "component": component},
        ))
    else:
        known = next((f for f in current_facts
                      if f.metadata is not None and f.metadata.get("incident") == date), None)
        if known is None or known.metadata is None:
            return facts
        component, failure_class = known.metadata["component"], known.metadata["class"]
    for action in _remediation(chunk):
        facts.append(RememberInput(
            text=f"After incident {date} ({failure_class}) on {component}: {action}",
            subject=component, entities=(failure_class,), kind="procedure",
            metadata={"incident": date, "title": title, "class": failure_class,
                      "component": component},
        ))
    return facts
