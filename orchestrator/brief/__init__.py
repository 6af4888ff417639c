"""A debate's brief: the documents, links and threads every seat and judge reads, quoted as untrusted text.

The public face (what the rest of the product, and the evidence checks, build on):
`fetch` (the one SSRF-safe client for user-typed URLs) and `addresses` (which addresses it may reach).
"""

from orchestrator.brief.fetch import Fetcher, FetchError, FetchPolicy, FetchRefused, fetch_url

__all__ = ["FetchError", "FetchPolicy", "FetchRefused", "Fetcher", "fetch_url"]
