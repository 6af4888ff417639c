"""The kill harness's scripted LLM peer: short, valid replies for every call of the three formats, each
carrying a marker the harness can count at the platform peers.

A marker is `kh<debate tag>m<hash>`: the hash is of the call's model, system prompt and last user message,
so a call re-run after a resume gets the same marker (its text is the same), and two different calls get
different ones. A debate's tag (`kill debate 0042`) is in its topic; every prompt carries the topic, or the
distilled question, which repeats it. The judge picks the seat of the first debater model (`voice-…` in that
seat's turns) in both passes, so the two passes agree whatever order they see the debaters in.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord

TAG = re.compile(r"kill debate (\d{4})")
MARKER = re.compile(r"\bkh(\d{4})m([0-9a-f]{10})\b")
PRO_MODEL = "openai:kh-pro"
CON_MODEL = "anthropic:kh-con"
JUDGE_MODEL = "openai:kh-judge"
STATUS = ("\n\n## Status\nConsensus: one queue for the audit log\nKey trade-offs: durability against cost\n"
          "Recommendation: pilot it in one region\nOpen questions: retention policy\n")
_BLOCK = re.compile(r'^<turn round="\d+" debater="([A-D])"[^\n]*\n(.*?)^</turn>$', re.DOTALL | re.MULTILINE)
_FILLER = ("the audit log needs ordered durable writes and replay, measured at p99 under a region failover, "
           "with one on-call rotation and a budget that holds for a quarter").split()


def topic(tag: int, question: str = "Kafka or a managed queue for the audit log?") -> str:
    return f"kill debate {tag:04d}: {question}"


def tag_of(text: str) -> int | None:
    found = TAG.search(text)
    return int(found.group(1)) if found else None


def marker(record: RequestRecord) -> str:
    tag = tag_of(record.prompt_text) or 0
    system = record.messages[0]["content"] if record.messages and record.messages[0]["role"] == "system" else ""
    digest = hashlib.sha1(f"{record.model}\n{system}\n{record.last_user}".encode()).hexdigest()[:10]
    return f"kh{tag:04d}m{digest}"


def _voice(model: str) -> str:
    return "voice-" + model.replace("-", "")


def _prose(record: RequestRecord, words: int) -> str:
    body = " ".join(_FILLER[i % len(_FILLER)] for i in range(words))
    return f"{marker(record)} {_voice(record.model)}: {body}."


def _winner(record: RequestRecord) -> str:
    """The letter this pass shows the first debater model under (A when it cannot tell)."""
    for letter, body in _BLOCK.findall(record.last_user):
        if _voice(PRO_MODEL.split(":")[1]) in body:
            return letter
    return "A"


def _verdict(record: RequestRecord) -> str:
    winner = _winner(record)
    body = {  # evidence before the winner, as the judge prompt asks (or the pass is retried: a call more)
        "evidence": [f"Round 1, Debater {winner}: tied each claim to a measurement."],
        "winner": winner,
        "reasoning": f"{marker(record)} Debater {winner} tied each claim to a measurement.",
        "ratings": {"genuine_disagreement": "high", "evidence_quality": "medium", "challenge_depth": "high"},
        "agreements": ["Both accept that replay matters."],
        "disagreements": ["Whether the team can run it."],
        "unresolved": ["Retention."],
        "recommendation": "Pilot the queue in one region and measure p99 for a month.",
        "scores": [{"seat": s, "stance": "x", "strongest_point": "p", "fatal_weakness": "w", "score": 6}
                   for s in "AB"],
    }
    return "```json\n" + json.dumps(body) + "\n```"


@dataclass(frozen=True)
class KillScript:
    """Per-call pacing: `latency_s` before the first token, then `tokens_per_s`; `words` per debater turn."""

    latency_s: float = 0.3
    tokens_per_s: float = 60.0
    words: int = 24

    def text(self, record: RequestRecord) -> str:
        system = record.messages[0]["content"] if record.messages else ""
        ask = record.last_user
        tag = tag_of(record.prompt_text) or 0
        if "impartial judge" in system:
            return _verdict(record)
        if "Split this topic" in ask:
            stances = [f"kh{tag:04d} stance one: a self-run Kafka cluster is cheaper within a year.",
                       f"kh{tag:04d} stance two: a managed queue is cheaper once on-call time is counted."]
            return "```json\n" + json.dumps({"debatable": True, "stances": stances, "reason": "Two camps."}) + "\n```"
        if "Rewrite it as one clear question" in ask:
            return f"{topic(tag, 'Should the audit log move to Kafka this quarter?')}"
        if "write the joint summary" in ask:
            return _prose(record, self.words // 2) + STATUS
        if "condense debate transcripts" in system:
            return _prose(record, self.words // 2)
        if re.search(r"round \d+ of at most", ask):
            closing = "\nCONSENSUS_REACHED" if "round 1 of at most" not in ask else ""
            return _prose(record, self.words) + STATUS + closing
        if re.search(r"Round \d+ of up to", ask):
            rebuttal = "Round 1 of up to" not in ask
            envelope = {"stance": "as assigned", "arguments": [_prose(record, self.words // 2)],
                        "rebuttals": ["Debater B: the cost figure ignores on-call time."] if rebuttal else [],
                        "no_new_points": rebuttal}
            return "```json\n" + json.dumps(envelope) + "\n```"
        return _prose(record, self.words)

    def install(self, srv: FakeLLMServer) -> None:
        srv.default = Reply(text=None, latency_s=self.latency_s, tokens_per_s=self.tokens_per_s)
        srv.default_text = self.text


# What a finished debate of each format logs with this script: (round, seat, kind) of every turn.
EXPECTED_TURNS: dict[str, frozenset[tuple[int, str, str]]] = {
    "challenge-1": frozenset({(1, "A", "opening"), (1, "B", "challenge")}),
    "challenge-2": frozenset({(1, "A", "opening"), (1, "B", "challenge"), (2, "A", "defense"),
                              (2, "B", "follow-up")}),
    # consensus and stances ignore --rounds: the script ends consensus in round 2 (marker) and stances after
    # round 2 (no new points); stances seats a third debater by default, who sits out (two stances)
    "consensus": frozenset({(1, "A", "opening"), (1, "B", "opening"), (2, "A", "response"), (2, "B", "response"),
                            (2, "A", "summary")}),
    "stances": frozenset({(1, "A", "opening"), (1, "B", "opening"), (2, "A", "rebuttal"), (2, "B", "rebuttal")}),
}
