"""Evidence checks: the citations a debater's turn makes, each held against what it cites.

- citations: `citations(text)` finds `[S2 §3 "exact words"]` and `[https://… "exact words"]` in a turn.
- match: `find_quote(quote, text)`: where a quote is in a text, normalised and fuzzily (rapidfuzz).
- check: `EvidenceChecker` checks a turn's citations against the brief and, through the one fetch client
  (orchestrator/brief/fetch.py), against the pages they name, each URL read at most once per debate.
- marks: `check_marks(text, checks)`: each checked citation's status as a judge's transcript shows it.

A status comes only from here: nothing a debater writes (a "[✓ verified]" of its own) can set one.
"""

from orchestrator.evidence.check import EvidenceChecker
from orchestrator.evidence.citations import MAX_QUOTE_WORDS, Citation, citations
from orchestrator.evidence.match import MATCH_THRESHOLD, Found, Haystack, find_quote, normalised

__all__ = ["MATCH_THRESHOLD", "MAX_QUOTE_WORDS", "Citation", "EvidenceChecker", "Found", "Haystack", "citations",
           "find_quote", "normalised"]
