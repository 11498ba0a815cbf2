"""The demo producer's CPU at a fixed rate, paced in bursts against a wait after every event.

    python -m bench.producer_pacing [--rate 200] [--seconds 30] [--runs 2]

``kappa up`` runs the demo producer at 200 events/s beside the platform, on the same cores. One
embedded broker; the producer runs as a process of its own (as ``kappa demo produce`` does) for
``--seconds``, alternately paced in bursts (the platform's ``PACE_TICK_S``) and with a wait after
every event (the baseline, ``pace_tick_s=0``). Per run: the producer process's CPU (all its
threads: librdkafka's included) in cores, and the rate the log received, read from its end
offsets; the last column is the ratio bursts / baseline of this run's medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.support.settings import private_settings
from kappa.broker import EmbeddedBroker
from kappa.demo import PACE_TICK_S, TOPICS, produce
from streaming.kafka.log import KafkaLog
from streaming.settings import REPO_ROOT, Settings, load_settings


def child(rate: float, seconds: float, tick_s: float) -> None:
    """Produce at ``rate`` for ``seconds`` in this process; print its CPU and the events sent."""
    settings = load_settings()
    deadline = time.monotonic() + seconds
    cpu = time.process_time()
    sent = produce(
        settings, rate=rate, should_stop=lambda: time.monotonic() > deadline, pace_tick_s=tick_s
    )
    print(json.dumps({"cpu_s": time.process_time() - cpu, "sent": sent}))


def one_run(settings: Settings, rate: float, seconds: float, tick_s: float) -> dict[str, float]:
    log = KafkaLog(settings.kafka.client_config())
    try:
        before, started = _events(log), time.monotonic()
        argv = [sys.executable, "-m", "bench.producer_pacing", "--child", "--tick", str(tick_s)]
        argv += ["--rate", str(rate), "--seconds", str(seconds)]
        env = {**os.environ, **settings.to_env()}
        done = subprocess.run(argv, env=env, cwd=REPO_ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"the producer failed: {done.stderr[-2000:]}")
        took = time.monotonic() - started
        answer = json.loads(done.stdout.strip().splitlines()[-1])
        received = _events(log) - before
    finally:
        log.close()
    if received != answer["sent"]:
        raise SystemExit(f"the log received {received} events, the producer sent {answer['sent']}")
    return {"cores": answer["cpu_s"] / seconds, "rate": received / took}


def _events(log: KafkaLog) -> int:
    return sum(sum(parts.values()) for parts in log.latest(list(TOPICS)).values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--runs", type=int, default=2, help="runs of each, alternating")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tick", type=float, default=PACE_TICK_S, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.rate, args.seconds, args.tick)
        return 0
    variants = {"bursts": PACE_TICK_S, "baseline": 0.0}
    figures: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory(prefix="kappa-bench-pacing-") as home:
        settings = private_settings(Path(home))
        broker = EmbeddedBroker(settings)
        broker.start()
        try:
            print(f"load average before: {os.getloadavg()[0]:.2f}")
            for _ in range(args.runs):
                for name, tick in variants.items():
                    figures[name].append(one_run(settings, args.rate, args.seconds, tick))
                    print(f"{name}: {figures[name][-1]}", flush=True)
        finally:
            broker.stop()
    print(f"{args.runs} runs each of {args.seconds:.0f} s at {args.rate:.0f} events/s")
    print(f"{'producer':<14} {'bursts':>9} {'baseline':>9} {'ratio':>6}")
    for measure in ("cores", "rate"):
        ours, base = (statistics.median(f[measure] for f in figures[n]) for n in variants)
        print(f"{measure:<14} {ours:>9.3f} {base:>9.3f} {ours / base:>6.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
