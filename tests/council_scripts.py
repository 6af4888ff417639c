"""Scripted council members and chair for the loopback LLM peer, shared by the council's tests and bench.

Each member answers with a marked answer (`ANSWER_TEXT`); a ranking call ranks the answers it is shown by
`PREFERENCE` (the member whose answer is best liked first), reading which letter holds which answer from
its own ballot, so the aggregate is known whatever letters the shuffle drew. The chair answers SYNTHESIS.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord

MODELS = ("openai:alpha-7", "openai:beta-9", "openai:gamma-3")
CHAIR = "openai:omega-1"
TOPIC = "Which queue should the ingest service use?"
SYNTHESIS = "Use the managed queue for a quarter, then measure the on-call load."
PREFERENCE = ("B", "C", "A", "E", "D")  # members by seat label, best-liked answer first


def answer_text(label: str) -> str:
    return f"ANS-{label}: the measured throughput favours option {label}, per the 2024 load test."


_BALLOT_LINE = re.compile(r'<answer letter="([A-E])">\n\| ANS-([A-E]):')


def is_answer(record: RequestRecord) -> bool:
    return "Write your answer." in record.last_user


def is_ranking(record: RequestRecord) -> bool:
    return "best first" in record.last_user and "ballot" in record.last_user


def is_synthesis(record: RequestRecord) -> bool:
    return "Write the council's final answer." in record.last_user


def ranking_reply(body: dict[str, Any]) -> str:
    """A ranking of the ballot in `body`'s prompt, by PREFERENCE, with a reason naming each answer's letter."""
    prompt = body["messages"][-1]["content"]
    letters = {member: letter for letter, member in _BALLOT_LINE.findall(prompt)}
    ranked = [{"answer": letters[m], "reason": f"Answer {letters[m]} cites a load test."}
              for m in PREFERENCE if m in letters]
    return "```json\n" + json.dumps({"ranking": ranked}) + "\n```"


def script_council(srv: FakeLLMServer, models: tuple[str, ...] = MODELS, *, latency_s: float = 0.1,
                   synthesis: str = SYNTHESIS) -> None:
    """Every member answers (after `latency_s`) and ranks; the chair writes `synthesis`."""
    srv.add_rule(Reply(text=synthesis), match=is_synthesis)
    srv.add_rule(Reply(text=ranking_reply), match=is_ranking)
    for label, model in zip("ABCDE", models, strict=False):
        name = model.split(":", 1)[1]
        srv.add_rule(Reply(text=answer_text(label), latency_s=latency_s),
                     match=lambda r, n=name: r.model == n and is_answer(r))
