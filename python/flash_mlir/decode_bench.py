"""Times split-KV decoding against torch SDPA (issue 15's decode bars).

    python -m flash_mlir.decode_bench DIR [--kernels K1,K2] [--splits 1,4,8,16]
        [--trace] [--no-sdpa]

For each split-KV kernel of DIR (a manifest with `key_splits`: the `decode`
kernel of a bf16 D = 128 family, or a forced-tile build of one) times one
decode step, bf16, Hq = 32, Hkv = 8, M = 1 (the group's four query heads
packed as the rows of one head, as flash_mlir.torch packs them), at
(B, N) = (1, 8k), (1, 32k), (8, 8k), (8, 32k): with the runtime's split
count and with each of --splits, in us per call (bench.py's method: CUDA
events behind a GPU spin, medians), and checks O against SDPA. SDPA's
cuDNN and FlashAttention-2 backends on the same shapes (enable_gqa). With
--trace, each call's kernels (the split kernel, the merge; cuDNN's) with
their durations and the gaps between them, from torch.profiler (CUPTI).
"""

import argparse
import json
import os
import statistics
import sys
import tempfile

import torch
import torch.nn.functional as F

from flash_mlir.bench import time_ms, warm_up_gpu
from flash_mlir.runtime import load_all

SHAPES = ((1, 8192), (1, 32768), (8, 8192), (8, 32768))
KV_HEADS, GROUP, DIM = 8, 4, 128


def decode_tensors(batch, keys):
    q = torch.randn(batch, KV_HEADS, GROUP, DIM, device="cuda",
                    dtype=torch.bfloat16)
    k = torch.randn(batch, KV_HEADS, keys, DIM, device="cuda",
                    dtype=torch.bfloat16)
    return dict(q=q, k=k, v=torch.randn_like(k), o=torch.empty_like(q),
                lse=torch.empty(batch, KV_HEADS, GROUP, device="cuda"))


def median_us(fn):
    return 1000 * statistics.median(
        time_ms(fn, [()], warmup=2, reps=15) for _ in range(3))


def sdpa_call(backend, t):
    from torch.nn.attention import sdpa_kernel
    batch = t["q"].shape[0]
    q = t["q"].reshape(batch, KV_HEADS * GROUP, 1, DIM)

    def run():
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, t["k"], t["v"],
                                                  enable_gqa=True)
    return run


def kernel_trace(fn, calls=20):
    """(name, grid, median us, median gap before it in us) per kernel of a
    call."""
    from torch.profiler import ProfilerActivity, profile
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
            torch.cuda.synchronize()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    prof.export_chrome_trace(path)
    with open(path) as f:
        events = [e for e in json.load(f)["traceEvents"]
                  if e.get("cat") == "kernel"]
    os.remove(path)
    events.sort(key=lambda e: e["ts"])
    per = len(events) // calls
    rows = []
    for i in range(per):
        mine = [events[c * per + i] for c in range(calls)]
        gaps = [0.0] if i == 0 else [
            e["ts"] - (p["ts"] + p["dur"])
            for e, p in zip(mine, [events[c * per + i - 1] for c in range(calls)])]
        rows.append((mine[0]["name"][:60], mine[0].get("args", {}).get("grid"),
                     statistics.median(e["dur"] for e in mine),
                     statistics.median(gaps)))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("directory")
    p.add_argument("--kernels", help="comma-separated kernel names")
    p.add_argument("--splits", default="1,4,8,12,16,24,32")
    p.add_argument("--trace", action="store_true")
    p.add_argument("--no-sdpa", action="store_true")
    args = p.parse_args(argv)
    from torch.nn.attention import SDPBackend
    wanted = set(args.kernels.split(",")) if args.kernels else None
    kernels = [k for k in load_all(args.directory, general=False)
               if k.manifest.get("key_splits") and k.manifest["head_dim"] == DIM
               and (wanted is None or k.name in wanted)]
    if not kernels:
        print(f"no split-KV kernels of D = {DIM} in {args.directory}",
              file=sys.stderr)
        return 1
    splits = [int(s) for s in args.splits.split(",")]
    warm_up_gpu()
    for batch, keys in SHAPES:
        t = decode_tensors(batch, keys)
        print(f"B = {batch}, N = {keys}:", flush=True)
        backends = [] if args.no_sdpa else [
            ("SDPA cuDNN", SDPBackend.CUDNN_ATTENTION),
            ("SDPA FA2", SDPBackend.FLASH_ATTENTION)]
        for label, backend in backends:
            try:
                us = median_us(sdpa_call(backend, t))
                print(f"  {label}: {us:.1f} us", flush=True)
                if args.trace:
                    for row in kernel_trace(sdpa_call(backend, t)):
                        print("    %s grid %s: %.1f us (gap %.1f us)" % row)
            except RuntimeError as e:
                print(f"  {label}: failed ({str(e).splitlines()[0]})")
        reference = sdpa_call(SDPBackend.MATH, {
            n: (x.float() if x.dtype == torch.bfloat16 else x)
            for n, x in t.items()})()
        for kernel in kernels:
            own = kernel.splits(t)
            blocks = -(-keys // kernel.manifest["block_cols"])
            timed = [own] + [s for s in splits if s != own and s <= blocks]
            parts = []
            for s in timed:
                us = median_us(lambda: kernel.launch(dict(t), splits=s))
                parts.append(f"{s}{'*' if s == own else ''}: {us:.1f}")
            out = dict(t)
            kernel.launch(out)
            torch.cuda.synchronize()
            err = (out["o"].float().reshape(reference.shape) - reference).abs().max()
            print(f"  {kernel.name} ({kernel.manifest['block_rows']}x"
                  f"{kernel.manifest['block_cols']}), us by splits (* the "
                  f"runtime's): {', '.join(parts)}; max |O - SDPA| {err:.1e}",
                  flush=True)
            if args.trace:
                for row in kernel_trace(lambda: kernel.launch(dict(t))):
                    print("    %s grid %s: %.1f us (gap %.1f us)" % row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
