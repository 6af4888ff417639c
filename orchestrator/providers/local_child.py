"""The child process that runs llama.cpp's HTTP server for the `local:` provider.

`python -m orchestrator.providers.local_child '<json settings>'` loads the model through `xllamacpp`,
listens on loopback on a free port, prints one JSON line (`{"url": …}`, or `{"error": …}`) on stdout,
then serves until its stdin closes: the parent closing the pipe, or dying, ends it. xllamacpp's server
serves until its process ends, so it lives here and not in the debate process.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def _params(config: dict[str, Any]) -> Any:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = config["model_path"]
    params.n_ctx = int(config["ctx"])
    params.n_parallel = int(config["parallel"])
    params.cpuparams.n_threads = int(config["threads"])
    params.cpuparams_batch.n_threads = int(config["threads"])
    params.use_jinja = True  # the model's own chat template; without it the answers are template garbage
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.kv_unified = False  # each slot has its own n_ctx / n_parallel: the context the product plans for
    params.endpoint_metrics = True  # the model's own time (llamacpp:*_seconds_total), read by bench/local_model.py
    params.warmup = False
    return params


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    try:
        import xllamacpp

        server = xllamacpp.Server(_params(config))
        url = str(server.listening_address).rstrip("/")
    except Exception as exc:  # reported to the parent in one line; it raises ProviderError from it
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"[:300]}), flush=True)
        return 1
    print(json.dumps({"url": url}), flush=True)
    sys.stdin.read()  # until the parent closes the pipe or dies
    del server  # stops llama.cpp's loop: slots released, sockets closed
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
