"""A jury's verdict in plain lines, for every surface to style: one line per juror (pick, calls,
tokens, cost) and each dissent with its reasoning. Model names are shown to the team here; no judge
ever sees them."""

from __future__ import annotations

from orchestrator.models import JurorVote, Verdict


def juror_line(juror: JurorVote) -> str:
    pick = {"voted": f"for {juror.winner}", "failed": "no usable answer",
            "undecided": "undecided (its passes: " + ", ".join(juror.passes) + ")"}[juror.status]
    flag = " · same family as a debater" if juror.same_family else ""
    cost = f" · ≈ ${juror.cost_usd:.4f}" if juror.cost_usd is not None else ""
    return (f"{juror.name} · {juror.model} ({juror.family}): {pick}{flag} · {juror.calls} call"
            f"{'s' if juror.calls != 1 else ''} · {juror.input_tokens:,} in / {juror.output_tokens:,} out tokens{cost}")


def juror_lines(verdict: Verdict) -> list[str]:
    return [juror_line(j) for j in verdict.jury]


def dissent_title(juror: JurorVote) -> str:
    return f"{juror.name} (dissent, for {juror.winner})"


def dissent_lines(verdict: Verdict) -> list[tuple[str, str]]:
    """(title, reasoning) of every dissenting juror."""
    return [(dissent_title(j), j.reasoning) for j in verdict.dissents()]
