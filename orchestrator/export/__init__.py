"""A logged debate as a document: `to_json` (the CONTRACT.md export, a superset of the agentsys state file) and
`from_json`, `to_markdown` (the readable transcript); `to_shared_json`: the JSON a
debate page's link gives (no platform ids). Presentation of what orchestrator/log/ stores, apart from
the storage itself: the CLI's `debate export`, the debate page's links and the chat surfaces all read it here."""

from orchestrator.export.document import ExportError, from_json, to_json, to_shared_json
from orchestrator.export.markdown import to_markdown

__all__ = ["ExportError", "from_json", "to_json", "to_markdown", "to_shared_json"]
