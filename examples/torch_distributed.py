"""A cubepy op in every rank of a torch.distributed job: each rank squares its shard, then all-reduce.

Two processes (the `gloo` backend on CPUs; `nccl` with one GPU per rank where there are GPUs,
`--backend nccl`) each run `cubepy.torch.op` on their shard of the data and sum the results with
`dist.all_reduce`; rank 0 checks the sum against plain torch. Each rank compiles the kernel once
(or loads it from the disk cache the ranks of a machine share).
"""

import argparse
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import cubepy as cb
import cubepy.torch
from cubepy import Array, Mut, f32

N = 1 << 16


@cb.kernel
def squares(x: Array[f32], out: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        out[i] = x[i] * x[i]


@cubepy.torch.op("cubepy_examples::squares", mutates_args=())
def square(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    squares[(x.numel() + 255) // 256, 256](x.contiguous(), out)
    return out


def rank_main(rank: int, world: int, backend: str, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group(backend, rank=rank, world_size=world)
    try:
        where = f"cuda:{rank}" if backend == "nccl" else "cpu"
        if backend == "nccl":
            torch.cuda.set_device(rank)
        data = torch.arange(world * N, dtype=torch.float32).reshape(world, N) / N
        shard = data[rank].to(where)
        result = square(shard)
        dist.all_reduce(result)
        if rank == 0:
            torch.testing.assert_close(result.cpu(), (data * data).sum(0))
            print(f"torch_distributed ok: {world} ranks ({backend}) ran a cubepy op on their shards and all-reduced "
                  f"{N} values; compile stats of rank 0: {cb.compile_stats()}", flush=True)
        dist.barrier()      # no rank tears its connections down while another still uses them (gloo aborts)
    finally:
        dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", default="gloo", choices=("gloo", "nccl"))
    parser.add_argument("--world", type=int, default=2)
    args = parser.parse_args()
    with socket.socket() as probe:         # a port free now, not one a parallel run may hold
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    mp.spawn(rank_main, args=(args.world, args.backend, port), nprocs=args.world, join=True)


if __name__ == "__main__":
    sys.exit(main())
