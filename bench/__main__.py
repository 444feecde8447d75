"""Run every benchmark and print its figures (ratios against a same-run baseline)."""

from __future__ import annotations

import importlib
import sys

MODULES = (
    "bench_startup",
    "bench_loop",
    "bench_sse",
    "bench_runner",
    "bench_turn_gap",
    "bench_spill",
    "bench_terminal",
    "bench_output",
    "bench_transcript",
    "bench_cache",
    "bench_changes",
    "bench_batch",
    "bench_context",
    "bench_workflows",
    "bench_hooks",
    "bench_telemetry",
)


def main() -> int:
    for name in MODULES:
        module = importlib.import_module(f"bench.{name}")
        for line in module.run():
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
