"""Times split-KV decoding against torch SDPA (issue 15's decode bars).

    python -m flash_mlir.decode_bench DIR [--kernels K1,K2] [--splits 1,4,8,16]
        [--shapes 1x8192,8x32768] [--trace] [--no-sdpa]

For each split-KV kernel of DIR (a manifest with `key_splits`: the `decode`
kernel of a bf16 D = 128 family, or a forced-tile build of one) times one
decode step, bf16, Hq = 32, Hkv = 8, M = 1 (the group's four query heads
packed as the rows of one head, as flash_mlir.torch packs them), at
(B, N) = (1, 8k), (1, 32k), (8, 8k), (8, 32k), (64, 8k), (64, 32k) (issue
15's bars): with the runtime's split count and with each of --splits, in
us per call (bench.py's method: CUDA events behind a GPU spin, medians),
with the KV cache's read rate (K and V bytes per second) against the
device's copy bandwidth (a 2 GiB device-to-device copy, read + write), and
checks O against SDPA's math backend (per sequence). SDPA's cuDNN and
FlashAttention-2 backends on the same shapes (enable_gqa). With
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
from flash_mlir.validate import manifest_params

SHAPES = "1x8192,1x32768,8x8192,8x32768,64x8192,64x32768"
KV_HEADS, GROUP, DIM = 8, 4, 128


def decode_tensors(batch, keys):
    q = torch.randn(batch, KV_HEADS, GROUP, DIM, device="cuda",
                    dtype=torch.bfloat16)
    k = torch.randn(batch, KV_HEADS, keys, DIM, device="cuda",
                    dtype=torch.bfloat16)
    return dict(q=q, k=k, v=torch.randn_like(k), o=torch.empty_like(q),
                lse=torch.empty(batch, KV_HEADS, GROUP, device="cuda"))


def cache_inputs(kernel, t, seed=0):
    """`t` as the inputs of a KV-cache kernel (manifest params `key_lengths`,
    and `block_table` for pages): every sequence's cache full (N keys); a
    paged kernel's K and V cut into its pages, shuffled over the pool, and
    the table that finds them."""
    params = {p["name"]: p for p in manifest_params(kernel.manifest)}
    if "key_lengths" not in params:
        return dict(t)
    batch, heads, keys, dim = t["k"].shape
    inputs = dict(t)
    inputs["key_lengths"] = torch.full((batch,), keys, dtype=torch.int32,
                                       device="cuda")
    if "block_table" in params:
        page = params["k"]["shape"][2]
        if keys % page:
            raise ValueError(f"{kernel.name}: {keys} keys are not whole pages "
                             f"of {page}")
        per = keys // page
        g = torch.Generator(device="cuda").manual_seed(seed)
        order = torch.randperm(batch * per, generator=g, device="cuda")
        for name in ("k", "v"):
            pages = t[name].view(batch, heads, per, page, dim).permute(
                0, 2, 1, 3, 4).reshape(batch * per, heads, page, dim)
            pool = torch.empty_like(pages)
            pool[order] = pages
            inputs[name] = pool
        inputs["block_table"] = order.view(batch, per).to(torch.int32)
    return inputs


def kv_bytes(batch, keys):
    """Bytes of K and V a decode step reads (bf16)."""
    return 2 * batch * KV_HEADS * keys * DIM * 2


def copy_bandwidth():
    """The device's copy bandwidth in bytes/s: a 2 GiB device-to-device
    copy, its bytes read plus written over the median time."""
    src = torch.empty(1 << 30, dtype=torch.int16, device="cuda").random_()
    dst = torch.empty_like(src)
    us = median_us(lambda: dst.copy_(src))
    return 2 * src.numel() * src.element_size() / (us * 1e-6)


def reference_o(t):
    """O by SDPA's math backend in f32, one sequence at a time (the whole
    batch's expanded K and V would not fit at B = 64, N = 32k)."""
    from torch.nn.attention import SDPBackend
    outs = []
    for b in range(t["q"].shape[0]):
        one = {n: t[n][b:b + 1].float() for n in ("q", "k", "v")}
        outs.append(sdpa_call(SDPBackend.MATH, one)())
    return torch.cat(outs)


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
    global DIM
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("directory")
    p.add_argument("--kernels", help="comma-separated kernel names")
    p.add_argument("--splits", default="1,4,8,12,16,24,32")
    p.add_argument("--shapes", default=SHAPES,
                   help="comma-separated BxN (batch x cached keys)")
    p.add_argument("--trace", action="store_true")
    p.add_argument("--no-sdpa", action="store_true")
    p.add_argument("--dim", type=int, default=DIM,
                   help="head dimension of the kernels and tensors (default "
                        "%(default)s)")
    args = p.parse_args(argv)
    DIM = args.dim
    from torch.nn.attention import SDPBackend
    wanted = set(args.kernels.split(",")) if args.kernels else None
    loaded = {k.name: k for k in load_all(args.directory, general=False)}
    kernels = [k for k in loaded.values()
               if k.manifest.get("key_splits") and k.manifest["head_dim"] == DIM
               and (wanted is None or k.name in wanted)]
    if not kernels:
        print(f"no split-KV kernels of D = {DIM} in {args.directory}",
              file=sys.stderr)
        return 1
    splits = [int(s) for s in args.splits.split(",")]
    shapes = [tuple(int(x) for x in s.split("x"))
              for s in args.shapes.split(",")]
    warm_up_gpu()
    copy = copy_bandwidth()
    print(f"device copy bandwidth: {copy / 1e12:.2f} TB/s", flush=True)

    def rate(us, batch, keys):
        r = kv_bytes(batch, keys) / (us * 1e-6)
        return f"{r / 1e12:.2f} TB/s, {100 * r / copy:.0f}% of copy"

    for batch, keys in shapes:
        t = decode_tensors(batch, keys)
        print(f"B = {batch}, N = {keys}:", flush=True)
        backends = [] if args.no_sdpa else [
            ("SDPA cuDNN", SDPBackend.CUDNN_ATTENTION),
            ("SDPA FA2", SDPBackend.FLASH_ATTENTION)]
        for label, backend in backends:
            try:
                us = median_us(sdpa_call(backend, t))
                print(f"  {label}: {us:.1f} us ({rate(us, batch, keys)})",
                      flush=True)
                if args.trace:
                    for row in kernel_trace(sdpa_call(backend, t)):
                        print("    %s grid %s: %.1f us (gap %.1f us)" % row)
            except RuntimeError as e:
                print(f"  {label}: failed ({str(e).splitlines()[0]})")
        reference = reference_o(t)
        for kernel in kernels:
            inputs = cache_inputs(kernel, t)
            own = kernel.splits(inputs)
            blocks = -(-keys // kernel.manifest["block_cols"])
            timed = [own] + [s for s in splits if s != own and s <= blocks]
            us_by = {s: median_us(lambda: kernel.launch(dict(inputs), splits=s))
                     for s in timed}
            parts = [f"{s}{'*' if s == own else ''}: {us:.1f}"
                     for s, us in us_by.items()]
            out = dict(inputs)
            kernel.launch(out)
            torch.cuda.synchronize()
            err = (out["o"].float().reshape(reference.shape) - reference).abs().max()
            print(f"  {kernel.name} ({kernel.manifest['block_rows']}x"
                  f"{kernel.manifest['block_cols']}), us by splits (* the "
                  f"runtime's): {', '.join(parts)}; max |O - SDPA| {err:.1e}; "
                  f"runtime's split count: {rate(us_by[own], batch, keys)}",
                  flush=True)
            # Where the runtime takes one run and a decode step's rows do
            # not fit the split kernel's tile, the PyTorch op launches the
            # family's plain forward instead (flash_mlir.torch._forward);
            # timed at one run either way, for the comparison.
            plain = (loaded.get(kernel.name[:-len("decode")] + "fwd")
                     if kernel.name.endswith("_decode") else None)
            if own == 1 and plain is not None:
                us = median_us(lambda: plain.launch(dict(inputs)))
                takes = GROUP <= kernel.manifest["block_rows"]
                print(f"  {plain.name} (the plain forward at one run"
                      f"{'' if takes else ', the op' + chr(39) + 's choice'}): "
                      f"{us:.1f} us ({rate(us, batch, keys)})", flush=True)
            if args.trace:
                for row in kernel_trace(lambda: kernel.launch(dict(inputs))):
                    print("    %s grid %s: %.1f us (gap %.1f us)" % row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
