"""Reads a PDF's text in a process of its own: `python -m orchestrator.brief.pdf_child MAX_PAGES MEMORY_BYTES`.

A PDF is a program of sorts (streams, compression, object graphs an attacker shapes), so pypdf reads it
here, under an address-space limit and a CPU-time limit set before pypdf is imported; the parent
(orchestrator/brief/extract.py) adds a wall-clock limit and kills this process when it passes. The PDF
comes on stdin; stdout gets one JSON object: {"title", "pages": [text, …], "page_count"}.
"""

from __future__ import annotations

import io
import json
import resource
import sys

CPU_SECONDS = 20


def _limit(memory_bytes: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS + 1))


def main() -> int:
    max_pages, memory_bytes = int(sys.argv[1]), int(sys.argv[2])
    data = sys.stdin.buffer.read()
    _limit(memory_bytes)
    import logging

    logging.disable(logging.WARNING)  # pypdf warns on stderr about every odd object; the text is what we want
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            reader.decrypt("")  # an owner-password-only PDF opens with the empty user password
        count = len(reader.pages)
        pages = [(reader.pages[i].extract_text() or "") for i in range(min(count, max_pages))]
        title = ""
        if reader.metadata is not None and reader.metadata.title:
            title = str(reader.metadata.title)
    except MemoryError:
        print("memory", file=sys.stderr)
        return 3
    except Exception as exc:  # a broken or hostile PDF: say what kind, never a traceback
        print(f"unreadable: {type(exc).__name__}", file=sys.stderr)
        return 2
    json.dump({"title": title, "pages": pages, "page_count": count}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
