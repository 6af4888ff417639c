"""The debate page: every debate at a link that works outside its thread, live while it runs.

`PageSite(store, settings, feed).mount(front)` serves the pages on a front's HTTP server (routes.py);
`page_link(store, settings, id)` is a debate's link (keys.py: a capability, None without
DEBATE_PUBLIC_URL).
"""

from bots.page.keys import page_link, parse_page_url
from bots.page.routes import PageSite
from bots.page.security import RateLimit

__all__ = ["PageSite", "RateLimit", "page_link", "parse_page_url"]
