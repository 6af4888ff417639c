"""The modals behind the Interject and Continue buttons, and what their submissions carry.

A modal remembers which debate it is about and the channel its button was clicked in (the Scope the
submission is checked against) in `private_metadata`, which Slack hands back untouched in the signed
submission. Limits: title, submit and close labels 24 characters; a plain-text input at most 3,000.
"""

from __future__ import annotations

import json
from typing import Any

from bots.slack.blocks import Block, context, safe
from orchestrator.models import MAX_INTERJECTION_CHARS

INTERJECT_VIEW = "debate_interject_modal"
CONTINUE_VIEW = "debate_continue_modal"
NOTE_BLOCK = "note"
FACTS_BLOCK = "facts"
TEXT_INPUT = "text"


def _text(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text, "emoji": True}


def _input(block_id: str, label: str, placeholder: str, *, optional: bool) -> Block:
    return {
        "type": "input", "block_id": block_id, "optional": optional, "label": _text(label),
        "element": {"type": "plain_text_input", "action_id": TEXT_INPUT, "multiline": True,
                    "max_length": MAX_INTERJECTION_CHARS, "placeholder": _text(placeholder)},
    }


def _modal(callback_id: str, title: str, submit: str, debate_id: str, channel: str, blocks: list[Block]) -> Block:
    return {
        "type": "modal", "callback_id": callback_id, "title": _text(title), "submit": _text(submit),
        "close": _text("Cancel"), "private_metadata": json.dumps({"debate": debate_id, "channel": channel}),
        "blocks": blocks,
    }


def interject_modal(debate_id: str, topic: str, channel: str) -> Block:
    blocks = [
        context(f"*{safe(topic, 300)}* · debate `{debate_id}`"),
        _input(NOTE_BLOCK, "Your note for both sides and the judge",
               "A fact or claim the debaters should weigh, e.g. our p99 write latency is 40 ms.", optional=False),
        context(f"Up to {MAX_INTERJECTION_CHARS} characters. It reaches the debaters at the start of the next "
                "round, under your display name, as a claim from the audience (never as instructions)."),
    ]
    return _modal(INTERJECT_VIEW, "Interject", "Send", debate_id, channel, blocks)


def continue_modal(debate_id: str, topic: str, channel: str) -> Block:
    blocks = [
        context(f"*{safe(topic, 300)}* · debate `{debate_id}`"),
        _input(FACTS_BLOCK, "New facts (optional)",
               "What the debaters did not know, e.g. we already run a Kafka cluster.", optional=True),
        context("The debate runs one more round with these facts, then the judge gives a new verdict that says "
                "whether the winner changed and why."),
    ]
    return _modal(CONTINUE_VIEW, "Continue the debate", "Continue", debate_id, channel, blocks)


def about(view: dict[str, Any]) -> tuple[str, str]:
    """The debate id and channel a submitted modal is about."""
    meta = json.loads(view.get("private_metadata") or "{}")
    return str(meta.get("debate", "")), str(meta.get("channel", ""))


def submitted(view: dict[str, Any], block_id: str) -> str | None:
    """The text typed into one input block of a submitted modal (None when left empty)."""
    value = (((view.get("state") or {}).get("values") or {}).get(block_id) or {}).get(TEXT_INPUT) or {}
    text = value.get("value")
    return text if isinstance(text, str) and text.strip() else None


DEBATE_THIS_VIEW = "debate_this_modal"
TOPIC_BLOCK = "topic"
TOPIC_INPUT_CHARS = 3000  # a plain-text input's most (the topic's own limit is checked as for /debate)


def debate_this_modal(topic: str, channel: str, ts: str, thread_ts: str | None) -> Block:
    """**Debate this**: the topic (prefilled from the message's first line) for a debate whose brief is the
    message, its files and its thread. The message is named in `private_metadata`, read at submission."""
    element: dict[str, Any] = {"type": "plain_text_input", "action_id": TEXT_INPUT, "multiline": False,
                               "max_length": TOPIC_INPUT_CHARS,
                               "placeholder": _text("The question to debate, e.g. Should we adopt this RFC?")}
    if topic:
        element["initial_value"] = topic[:TOPIC_INPUT_CHARS]
    blocks = [
        {"type": "input", "block_id": TOPIC_BLOCK, "optional": False, "label": _text("Topic"), "element": element},
        context("The debaters and the judge read this message, its files and its thread as the debate's brief, "
                "quoted as material (never as instructions). The debate starts in this channel."),
    ]
    return {"type": "modal", "callback_id": DEBATE_THIS_VIEW, "title": _text("Debate this"),
            "submit": _text("Start debate"), "close": _text("Cancel"),
            "private_metadata": json.dumps({"channel": channel, "ts": ts, "thread_ts": thread_ts}),
            "blocks": blocks}


def debate_this_about(view: dict[str, Any]) -> tuple[str, str, str | None]:
    """The channel, message ts and thread ts a submitted **Debate this** modal is about."""
    meta = json.loads(view.get("private_metadata") or "{}")
    return str(meta.get("channel", "")), str(meta.get("ts", "")), meta.get("thread_ts") or None
