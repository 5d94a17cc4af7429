"""The suite as a function: options in, results (a JSON-ready dict) out."""

from __future__ import annotations

import os
import time
import traceback
from dataclasses import dataclass

import cubepy as cb

from .apps import APPS
from .machine import describe
from .progress import progress
from .runner import KernelRun, parse_sizes, parse_variants

PEER_KEYS = {"numba": "numba parallel", "openmp": "C OpenMP", "cuda": "CUDA (Base_CUDA)",
             "numba-cuda": "numba-cuda", "triton": "Triton", "cuda-strict": "CUDA (Base_CUDA, --fmad=false)",
             "cuda-restrict": "CUDA (Base_CUDA, __restrict__)"}
# asked for by name only: a build of a peer that isolates one cause, not a peer of its own
ISOLATION_PEERS = {"cuda-strict", "cuda-restrict"}


@dataclass
class Options:
    kernels: str = "all"
    device: str | None = None
    sizes: str = "default,32x"
    variants: str = "plain,tuned,checked,unchecked"
    peers: str = "all"
    reps: int = 11                 # timed samples per contender (each a batch of reps back to back)
    transfer: bool = True
    transfer_reps: int = 20
    transfer_size: int = 1_000_000
    progress: str = "auto"
    timer: str = "events"          # "queued": the GPU's work alone (timing.QueuedEventTimer, CUDA)


def select_kernels(text: str) -> list[str]:
    if text in ("all", ""):
        return list(APPS)
    names = [k.strip().upper() for k in text.split(",") if k.strip()]
    unknown = [k for k in names if k not in APPS]
    if unknown:
        raise ValueError(f"unknown kernel(s) {unknown}: choose from {', '.join(APPS)}")
    return names


def select_peers(text: str, device) -> tuple[list, dict[str, str]]:
    """The peers to run on ``device`` and, for the others asked for, why not."""
    from .peers import cpu_peers, gpu_peers
    backend = device.properties.backend
    pool = cpu_peers() if backend == "cpu" else gpu_peers() if backend == "cuda" else []
    if text == "none":
        return [], {}
    wanted = set(PEER_KEYS) - ISOLATION_PEERS if text == "all" else {k.strip() for k in text.split(",") if k.strip()}
    unknown = wanted - set(PEER_KEYS)
    if unknown:
        raise ValueError(f"unknown peer(s) {sorted(unknown)}: choose from {', '.join(PEER_KEYS)}, all or none")
    names = {PEER_KEYS[k] for k in wanted}
    chosen, skipped = [], {}
    for peer in pool:
        if peer.name not in names:
            continue
        why = peer.unavailable()
        if why:
            skipped[peer.name] = why
        else:
            chosen.append(peer)
    return chosen, skipped


def run(options: Options, log=print) -> dict:
    # OpenMP threads spin after each parallel region by default; with three thread pools on the
    # CPU (cubepy's, numba's, OpenMP's) spinning ones steal the others' cores (C PRESSURE took
    # 14 ms instead of 0.8 on 2 cores). Passive waiting is set before any OpenMP runtime loads.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    device = cb.device(options.device) if options.device else cb.current_device()
    kernels = select_kernels(options.kernels)
    sizes = parse_sizes(options.sizes)
    pairs = parse_variants(options.variants)
    peers, skipped = select_peers(options.peers, device)
    machine = describe(device)
    results = {"machine": machine, "command_options": vars(options).copy(), "peers": [p.name for p in peers],
               "peers_skipped": skipped, "rows": [],
               "primary_peer": "CUDA (Base_CUDA)" if device.properties.backend == "cuda" else "numba parallel",
               "started": time.strftime("%Y-%m-%d %H:%M:%S"),
               "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY")}
    for name, why in skipped.items():
        log(f"peer {name} skipped: {why}")
    steps = len(kernels) * len(sizes) + (1 if options.transfer else 0)
    bar = progress(steps, options.progress)
    began = time.perf_counter()
    try:
        for size in sizes:
            for name in kernels:
                try:
                    row = KernelRun(APPS[name], size, device, pairs, peers, options.reps, log=bar.write,
                                    timer=options.timer).run()
                    results["rows"].append(row)
                except Exception as e:        # one kernel's failure is reported; the others still run
                    results.setdefault("errors", []).append(
                        {"kernel": name, "size": size, "error": f"{type(e).__name__}: {e}",
                         "traceback": traceback.format_exc(limit=12)[-4000:]})
                    bar.write(f"{name} {size} failed: {type(e).__name__}: {e}")
                bar.step(f"{name} {size}")
        if options.transfer:
            from .transfer import transfer_study
            try:
                results["transfer"] = transfer_study(device, options.transfer_reps, options.transfer_size)
            except Exception as e:
                results.setdefault("errors", []).append(
                    {"kernel": "transfer study", "error": f"{type(e).__name__}: {e}",
                     "traceback": traceback.format_exc(limit=12)[-4000:]})
                bar.write(f"transfer study failed: {type(e).__name__}: {e}")
            bar.step("transfer study")
    finally:
        bar.close()
    results["wall_s"] = time.perf_counter() - began
    return results
