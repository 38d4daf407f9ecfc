"""Times context-parallel attention, forward + backward, in one harness:

    torchrun --nproc-per-node N -m flash_mlir.cp_bench --seq 131072 --heads 16 --dim 128 --causal

With N > 1: ring_attention on flash-mlir's kernels (flash_mlir.context_parallel),
and F.scaled_dot_product_attention under PyTorch's context_parallel with its
FlashAttention-2 and cuDNN backends and with our kernels (use_with_torch_cp);
each against the same kernels on one GPU over the whole sequence (rank 0
while the others wait; --no-baseline skips that). With N = 1: the
single-GPU ops on the whole sequence.

Each time is the median of --iters runs after --warmup (CUDA events, a
barrier before each run), of the slowest rank. TFLOP/s per GPU in
FlashAttention's convention: 4 B Hq S^2 D forward, 2.5x that backward,
halved when causal. "vs 1 GPU" is the N-GPU time over the one-GPU time of
the same kernels (ideal 1/N); "vs cuDNN CP" is the cuDNN-under-CP time over
this one (above 1: faster).
"""

import argparse
import contextlib
import os
import statistics
import sys
import traceback

import torch
import torch.distributed as dist
import torch.nn.functional as F

from flash_mlir import context_parallel as cp
from flash_mlir import torch as fm

RANK, WORLD = 0, 1
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


def say(*args):
    if RANK == 0:
        print(*args, flush=True)


def tensors(a, seq, grad=True):
    """Random Q, K, V (requiring grad) and dO [B, H, seq, D]."""
    dt = DTYPES[a.dtype]
    out = [torch.randn(a.batch, h, seq, a.dim, device="cuda", dtype=dt)
           for h in (a.heads, a.kv_heads, a.kv_heads, a.heads)]
    for t in out[:3]:
        t.requires_grad_(grad)
    return out


def backend(name):
    from torch.nn.attention import SDPBackend
    return {"fa2": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[name]


def clear(ts):
    for t in ts:
        t.grad = None


@contextlib.contextmanager
def ours_whole(a):
    """flash-mlir's op on the whole sequence, one GPU."""
    q, k, v, do = tensors(a, a.seq)

    def step():
        fm.attention(q, k, v, causal=a.causal).backward(do)
        clear((q, k, v))
    yield step


@contextlib.contextmanager
def sdpa_whole(a, name):
    """SDPA with backend `name` on the whole sequence, one GPU."""
    from torch.nn.attention import sdpa_kernel
    q, k, v, do = tensors(a, a.seq)

    def step():
        F.scaled_dot_product_attention(q, k, v, is_causal=a.causal,
                                       enable_gqa=a.heads != a.kv_heads).backward(do)
        clear((q, k, v))
    with sdpa_kernel(backend(name)):
        yield step


@contextlib.contextmanager
def ours_ring(a):
    """ring_attention over the process group (this rank's shards)."""
    q, k, v, do = tensors(a, a.seq // WORLD)

    def step():
        cp.ring_attention(q, k, v, causal=a.causal).backward(do)
        clear((q, k, v))
    yield step


@contextlib.contextmanager
def torch_cp(a, name):
    """SDPA under PyTorch's context_parallel: backend `name` ("fa2",
    "cudnn") or our kernels ("ours", through use_with_torch_cp)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.experimental import context_parallel
    from torch.distributed.tensor.experimental import _attention as tcp
    from torch.nn.attention import sdpa_kernel
    # PyTorch's CP refuses non-causal attention with its load balancing on.
    tcp._cp_options.enable_load_balance = a.causal
    tcp.set_rotate_method(a.rotate)
    mesh = init_device_mesh("cuda", (WORLD,))
    bufs = tensors(a, a.seq, grad=False)
    use = cp.use_with_torch_cp() if name == "ours" else sdpa_kernel(backend(name))
    with use, context_parallel(mesh, buffers=bufs, buffer_seq_dims=[2] * 4,
                               no_restore_buffers=set(bufs)):
        q, k, v, do = bufs
        for t in (q, k, v):
            t.requires_grad_()

        def step():
            F.scaled_dot_product_attention(q, k, v, is_causal=a.causal,
                                           enable_gqa=a.heads != a.kv_heads).backward(do)
            clear((q, k, v))
        yield step


def timed(step, a, together):
    """Median milliseconds of `step`; with `together` every rank runs it and
    the slowest rank's median counts."""
    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(a.iters):
        if together and WORLD > 1:
            dist.barrier()
        start.record()
        step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    ms = statistics.median(times)
    if together and WORLD > 1:
        t = torch.tensor([ms], device="cuda")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        ms = t.item()
    return ms


def measure(label, make, a, together=True):
    """(label, ms or None, note). An impl that fails is noted, not fatal."""
    try:
        with make() as step:
            ms = timed(step, a, together)
        note = ""
    except Exception as e:  # noqa: BLE001
        ms, note = None, f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"
        if os.environ.get("FLASH_CP_BENCH_TRACE"):
            traceback.print_exc()
    torch.cuda.empty_cache()
    say(f"  {label}: {'%.2f ms' % ms if ms is not None else note}")
    return label, ms, note


def main(argv=None):
    global RANK, WORLD
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seq", type=int, default=131072)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--kv-heads", type=int, help="default: --heads")
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--impls", default="ring,fa2,cudnn,ours-cp",
                   help="N > 1: ring (ours), fa2, cudnn, ours-cp (under torch CP)")
    p.add_argument("--rotate", choices=("allgather", "alltoall"), default="allgather",
                   help="PyTorch CP's K/V rotation")
    p.add_argument("--no-baseline", action="store_true",
                   help="N > 1: skip the one-GPU runs on rank 0")
    p.add_argument("--markdown", help="also write the table here (rank 0)")
    a = p.parse_args(argv)
    a.kv_heads = a.kv_heads or a.heads
    distributed = "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1
    if distributed:
        RANK, WORLD = cp.init_from_torchrun(timeout_minutes=30)
    if a.seq % (2 * WORLD):
        sys.exit(f"--seq {a.seq} is not a multiple of 2 x {WORLD} ranks")
    flops = 4 * a.batch * a.heads * a.seq ** 2 * a.dim * 3.5 * (0.5 if a.causal else 1)
    say(f"cp_bench: {WORLD} GPU(s) {torch.cuda.get_device_name()}, torch {torch.__version__}; "
        f"B={a.batch} S={a.seq} H={a.heads}/{a.kv_heads} D={a.dim} {a.dtype}"
        f"{' causal' if a.causal else ''}, fwd+bwd, median of {a.iters}"
        f"{f', CP rotate {a.rotate}' if WORLD > 1 else ''}")

    one = {}  # one-GPU times by kernel family
    if WORLD == 1 or not a.no_baseline:
        say("one GPU, whole sequence" + (" (rank 0)" if WORLD > 1 else ""))
        if RANK == 0:
            for family, make in (("ours", lambda: ours_whole(a)),
                                 ("fa2", lambda: sdpa_whole(a, "fa2")),
                                 ("cudnn", lambda: sdpa_whole(a, "cudnn"))):
                label = {"ours": "flash-mlir", "fa2": "SDPA FA2",
                         "cudnn": "SDPA cuDNN"}[family] + " 1 GPU"
                one[family] = measure(label, make, a, together=False)
        if WORLD > 1:
            dist.barrier()
    rows = [(label, 1, ms, note, None) for label, ms, note in one.values()]
    if WORLD > 1:
        say(f"{WORLD} GPUs")
        runs = {"ring": ("flash-mlir ring", "ours", lambda: ours_ring(a)),
                "fa2": ("SDPA FA2 under torch CP", "fa2", lambda: torch_cp(a, "fa2")),
                "cudnn": ("SDPA cuDNN under torch CP", "cudnn", lambda: torch_cp(a, "cudnn")),
                "ours-cp": ("flash-mlir under torch CP", "ours", lambda: torch_cp(a, "ours"))}
        for impl in a.impls.split(","):
            label, family, make = runs[impl]
            _, ms, note = measure(label, make, a)
            base = one.get(family, (None, None))[1]
            rows.append((label, WORLD, ms, note, base))
    cudnn_cp = next((r[2] for r in rows if r[0] == "SDPA cuDNN under torch CP"), None)
    lines = ["| impl | GPUs | fwd+bwd ms | TFLOP/s per GPU | vs 1 GPU | vs cuDNN CP |",
             "| --- | --- | --- | --- | --- | --- |"]
    for label, gpus, ms, note, base in rows:
        if ms is None:
            lines.append(f"| {label} | {gpus} | n/a | | | {note} |")
            continue
        tflops = flops / (ms * 1e-3) / gpus / 1e12
        vs_one = f"{ms / base:.2f}x" if base else ""
        vs_cudnn = f"{cudnn_cp / ms:.2f}" if cudnn_cp and gpus > 1 else ""
        lines.append(f"| {label} | {gpus} | {ms:.2f} | {tflops:.0f} | {vs_one} | {vs_cudnn} |")
    say("\n".join(lines))
    if a.markdown and RANK == 0:
        with open(a.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")
    if distributed:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
