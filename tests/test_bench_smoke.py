"""`make bench-smoke` starts one Postgres server where each Postgres bench started its own (issue 24): inside
`bench.pg.shared_servers()` a bench's stopped server is handed to the next bench, and every server started
meanwhile stops when the run ends."""

from __future__ import annotations

import psycopg
import pytest

from bench.pg import BenchPostgres, PostgresUnavailable, shared_servers


def _start() -> BenchPostgres:
    try:
        return BenchPostgres.start()
    except PostgresUnavailable as error:
        pytest.skip(f"PostgreSQL cannot start on this machine: {error}")


@pytest.mark.slow
@pytest.mark.postgres
def test_a_smoke_run_hands_its_postgres_server_from_bench_to_bench_and_stops_it_at_the_end() -> None:
    with shared_servers():
        first = _start()
        first.create_database("recall")
        first.stop()  # what the first bench does when it is done
        second = _start()
        assert second is first and not second.stopped
        url = second.create_database("durable")
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute("select 1").fetchone() == (1,)
        second.stop()
    assert first.stopped
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(url, connect_timeout=2)


@pytest.mark.slow
@pytest.mark.postgres
def test_outside_a_smoke_run_each_bench_gets_a_server_of_its_own() -> None:
    first = _start()
    first.stop()
    second = _start()
    try:
        assert second is not first and first.stopped
    finally:
        second.stop()


def test_the_smoke_level_counts_only_its_own_debates_in_a_log_the_ack_shares() -> None:
    """bench.durable's smoke runs the ack and then the level on one deployment: the ack's debates (tags 0…9,
    and its warm-up) are in the same log and at the same LLM peer, and must not count in the level."""
    from datetime import UTC, datetime, timedelta
    from pathlib import Path

    from bench.durable import ACK_WARM_TAG, SMOKE_LEVEL_TAG, Window, level_from
    from bench.llm_peer import PeerStats, ReplyPlan

    t0 = datetime(2026, 1, 1, tzinfo=UTC)

    def row(tag: int, seconds: float) -> dict[str, object]:
        return {"topic": f"Bench debate #{tag:06d}: Kafka or RabbitMQ?", "status": "completed",
                "created_at": t0.isoformat(), "finished_at": (t0 + timedelta(seconds=seconds)).isoformat()}

    ack_tags, level_tags = [*range(10), ACK_WARM_TAG], [SMOKE_LEVEL_TAG + i for i in range(3)]
    logged = [row(t, 50.0) for t in ack_tags] + [row(t, 2.0) for t in level_tags]
    # [tag, kind, duration, ideal, status, ...]: each debate's one debater call took 1 s at the peer
    calls = [[t, "debater", 1.0, 1.0, 200] for t in ack_tags + level_tags]
    window = Window(3, SMOKE_LEVEL_TAG, logged, 2.0, 1.0, {}, None, t0 + timedelta(seconds=60))
    level = level_from(window, PeerStats(cpu_s=0.0, calls=calls), ReplyPlan(), 2, Path("."))
    assert (level.completed, level.logged, level.calls, level.ratio) == (3, 3, 3, 2.0)
