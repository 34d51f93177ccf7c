"""meshrt on gloo against PyTorch on gloo: the same library (Debian's
libgloo), both started by torchrun without MPI, in one process.

Per call: each round times a batch of all_reduce calls (f32 sum) through
mesh.distributed (our gloo plugin, meeting its peers at our store) and a
batch through torch.distributed (its ProcessGroupGloo, meeting at torch's
store), in alternating order, each batch after a barrier of its own
library; a batch's time is the slowest rank's (a max all_reduce of the
times after the batch, outside it). Reported per size: the median per-call
time of each and the median of the per-round ratios.

Set-up (``--setup``): the seconds from before ``init_device_mesh`` to the
end of a first all_reduce on a (2, N/2) mesh's two groups, against
``init_process_group("gloo")`` + ``new_group`` for each group + the same
two all_reduces. One variant per process (a torchrun launch each); run.sh
alternates the launches.

    python3 -m torch.distributed.run --nproc_per_node=N --redirects 1 \\
        --tee 1 bench/runtime/gloo_vs_torch.py [SECONDS_PER_SIZE]
    ... gloo_vs_torch.py --setup ours|torch
"""

import os
import sys
import time

import numpy as np
import torch
import torch.distributed as tdist

import mesh.distributed as dist

RANK = int(os.environ["RANK"])
WORLD = int(os.environ["WORLD_SIZE"])


def setup(which):
    t0 = time.perf_counter()
    if which == "ours":
        m = dist.init_device_mesh("cpu", (2, WORLD // 2),
                                  mesh_dim_names=("a", "b"))
        x = np.ones(2, np.float32)
        m.get_group("a").all_reduce(x)
        m.get_group("b").all_reduce(x)
    else:
        tdist.init_process_group("gloo")
        groups = {}
        half = WORLD // 2
        # Every rank makes every group, as torch requires.
        for j in range(half):
            g = tdist.new_group([j, j + half])
            if RANK % half == j:
                groups["a"] = g
        for i in range(2):
            g = tdist.new_group(list(range(i * half, (i + 1) * half)))
            if RANK // half == i:
                groups["b"] = g
        t = torch.ones(2)
        tdist.all_reduce(t, group=groups["a"])
        tdist.all_reduce(t, group=groups["b"])
    seconds = time.perf_counter() - t0
    if RANK == 0:
        print(f"setup {which} {WORLD} ranks: {seconds:.3f} s")


def per_call(seconds_per_size):
    tdist.init_process_group("gloo")
    m = dist.init_device_mesh("cpu", (WORLD,), mesh_dim_names=("x",))
    g = m.get_group("x")
    if RANK == 0:
        print(f"# all_reduce f32 sum, {WORLD} ranks under torchrun: meshrt "
              "on gloo (mesh.distributed) vs torch.distributed on gloo")
        print("| bytes | meshrt (us) | torch (us) | meshrt / torch | "
              "rounds x calls |")
        print("|---:|---:|---:|---:|---:|")
    slowest = np.zeros(1)
    for n in (2, 16, 256, 4096, 65536, 1 << 18):
        x = np.ones(n, np.float32)
        t = torch.ones(n)
        run = {"ours": lambda: g.all_reduce(x),
               "torch": lambda: tdist.all_reduce(t)}
        fence = {"ours": g.barrier, "torch": tdist.barrier}
        for f in run.values():
            for _ in range(10):
                f()
        # Calls per batch: about 1/20 of the size's time, at least 5.
        t0 = time.perf_counter()
        for _ in range(10):
            run["ours"]()
        each = (time.perf_counter() - t0) / 10
        slowest[0] = each
        g.all_reduce(slowest, op=dist.ReduceOp.MAX)
        calls = max(5, int(seconds_per_size / 20 / slowest[0]))
        times = {"ours": [], "torch": []}
        start = time.perf_counter()
        rounds = 0
        while rounds < 5 or (time.perf_counter() - start < seconds_per_size
                             and rounds < 41):
            for k in (("ours", "torch") if rounds % 2 == 0
                      else ("torch", "ours")):
                fence[k]()
                t0 = time.perf_counter()
                for _ in range(calls):
                    run[k]()
                slowest[0] = (time.perf_counter() - t0) / calls
                g.all_reduce(slowest, op=dist.ReduceOp.MAX)
                times[k].append(slowest[0] * 1e6)
            rounds += 1
        if RANK == 0:
            a, b = np.array(times["ours"]), np.array(times["torch"])
            print(f"| {4 * n} | {np.median(a):.1f} | {np.median(b):.1f} | "
                  f"{np.median(a / b):.2f} | {rounds} x {calls} |")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--setup":
        setup(sys.argv[2])
    else:
        per_call(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
