"""deploy/compose.postgres.yml's `monitoring` profile: what it mounts exists, and Prometheus scrapes every
front and worker of the same file on the port its command serves."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"


def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.postgres.yml").read_text())


def test_the_monitoring_services_mount_files_that_exist_and_only_start_with_their_profile() -> None:
    services = compose()["services"]
    for name in ("prometheus", "grafana"):
        assert services[name]["profiles"] == ["monitoring"]
        for mount in services[name]["volumes"]:
            source = mount.split(":")[0]
            if source.startswith("./"):
                assert (DEPLOY / source).exists(), (name, source)
        assert all(port.startswith("127.0.0.1:") for port in services[name]["ports"])
    provisioning = DEPLOY / "grafana/provisioning"
    datasource = yaml.safe_load((provisioning / "datasources/prometheus.yml").read_text())["datasources"][0]
    assert datasource["url"] == "http://prometheus:9090" and datasource["type"] == "prometheus"


def test_prometheus_scrapes_every_front_and_worker_on_its_metrics_port() -> None:
    """Each process serves /metrics on a --metrics-port of its own, reachable on the compose network
    (0.0.0.0) but never published, and not on its public --port (issue 57 item 5)."""
    services = compose()["services"]
    served = {}
    for name, service in services.items():
        command = service.get("command", [])
        if command[:1] == ["debate"]:
            metrics_port = command[command.index("--metrics-port") + 1]
            assert command[command.index("--metrics-host") + 1] == "0.0.0.0"
            assert metrics_port != command[command.index("--port") + 1]
            assert not any(metrics_port in port for port in service.get("ports", [])), "never published"
            served[f"{service.get('hostname', name)}:{metrics_port}"] = command[1]
    config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    targets = {job["job_name"]: {t for c in job["static_configs"] for t in c["targets"]}
               for job in config["scrape_configs"]}
    assert targets["debate-fronts"] | targets["debate-workers"] == set(served)
    assert {served[t] for t in targets["debate-workers"]} == {"worker"}
    assert {served[t] for t in targets["debate-fronts"]} == {"serve"}
    assert all(re.fullmatch(r"[a-z0-9-]+:\d+", t) for t in served)
