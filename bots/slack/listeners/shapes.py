"""The shape bolt and each of our listeners need, checked once before bolt dispatches a request.

Slack sends payloads our listeners were not written for (a button clicked from a modal or App Home,
workflow steps, new surfaces), and bolt itself reads some fields unguarded (`body["actions"][0]`,
`body["view"]["type"]`, `body["event"]["type"]`): a signed request whose needed fields are missing or
odd is acked with an empty 200 and a line in the log (`bots.slack.app.GuardedApp`), never a crash.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator

from bots.slack.blocks import CONTINUE_ACTION, INTERJECT_ACTION, QUOTE_ACTION, VOTE_ACTION
from bots.slack.modals import CONTINUE_VIEW, INTERJECT_VIEW

BUTTONS = (QUOTE_ACTION, INTERJECT_ACTION, CONTINUE_ACTION)
FORMS = (INTERJECT_VIEW, CONTINUE_VIEW)


class _Id(BaseModel):
    id: str


class _Message(BaseModel):
    ts: str


class _Action(BaseModel):
    action_id: str
    value: str


class _Click(BaseModel):
    """A click on one of our buttons on a message."""

    user: _Id
    channel: _Id
    message: _Message
    response_url: str
    trigger_id: str
    actions: list[_Action] = Field(min_length=1)


class _Shortcut(BaseModel):
    callback_id: str
    user: _Id
    channel: _Id
    response_url: str
    message: dict[str, Any]


class _State(BaseModel):
    values: dict[str, dict[str, dict[str, Any]]] = {}


class _View(BaseModel):
    type: str
    callback_id: str
    private_metadata: str
    state: _State = _State()

    @field_validator("private_metadata")
    @classmethod
    def _about(cls, value: str) -> str:
        meta = json.loads(value or "{}")  # a ValueError here is a ValidationError
        if not isinstance(meta, dict) or not all(isinstance(meta.get(k, ""), str) for k in ("debate", "channel")):
            raise ValueError("private_metadata must hold the debate and channel")
        return value


class _Submission(BaseModel):
    user: _Id
    view: _View


class _Command(BaseModel):
    user_id: str
    channel_id: str
    response_url: str
    text: str = ""


class _HomeOpened(BaseModel):
    type: str
    user: str
    tab: str = "home"


def _ours(action_id: object) -> bool:
    return isinstance(action_id, str) and (action_id in BUTTONS or action_id.startswith(f"{VOTE_ACTION}_"))


def shape_problem(body: object) -> str | None:
    """Why `body` cannot go to the listener it is meant for, or None (including requests for none)."""
    if not isinstance(body, dict):
        return "not a JSON object"
    kind = body.get("type")
    try:
        if body.get("command") == "/debate":
            _Command.model_validate(body)
        elif kind == "block_actions":
            actions = body.get("actions")
            if not isinstance(actions, list) or not actions or not isinstance(actions[0], dict):
                return "no actions"
            if _ours(actions[0].get("action_id")):
                _Click.model_validate(body)
        elif kind in ("message_action", "shortcut") and body.get("callback_id") == QUOTE_ACTION:
            _Shortcut.model_validate(body)
        elif kind in ("view_submission", "view_closed"):
            view = body.get("view")
            if not isinstance(view, dict) or not isinstance(view.get("type", ""), str):
                return "no view"
            if kind == "view_submission" and view.get("callback_id") in FORMS:
                _Submission.model_validate(body)
            elif kind == "view_submission" and "callback_id" in view and "type" not in view:
                return "view: no type"
        elif kind == "event_callback" or "event" in body:
            event = body.get("event")
            if not isinstance(event, dict) or not isinstance(event.get("type"), str):
                return "no event"
            if event["type"] == "app_home_opened":
                _HomeOpened.model_validate(event)
    except ValidationError as exc:
        first = exc.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc']) or 'body'}: {first['msg']}"
    return None
