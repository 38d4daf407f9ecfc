"""Training-step benchmark of a GPT-style model (pre-norm blocks: attention
and a 4x MLP, bf16) with flash-mlir's op against SDPA's backends, in one run.

    python -m flash_mlir.train_bench [--layers 4] [--seqs 4096,16384]
                                     [--width 2048] [--heads 16] [--causal]

16k tokens per step (batch = 16384 / seq). Each row times forward +
backward of the whole model (CUDA events, median of rounds after warm-up)
with the attention computed by:
  flash_mlir       flash_mlir.torch.attention
  sdpa-flash_mlir  F.scaled_dot_product_attention with flash_mlir.sdpa active
  sdpa-default     F.scaled_dot_product_attention as torch chooses (cuDNN on H200)
  sdpa-cudnn       SDPA's cuDNN backend
  sdpa-fa2         SDPA's FlashAttention-2 backend
  handwritten      q @ k^T / sqrt(d), masked_fill(tril), softmax in f32, @ v
  handwritten-compiled   the same under torch.compile (Inductor)
  handwritten-flash_mlir the same under torch.compile(backend="flash_mlir"),
                         which finds the attention and runs our kernels
and prints ms per step and the ratio to sdpa-default; --markdown FILE
writes the table.
"""

import argparse
import math
import statistics
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


def handwritten_attention(q, k, v, causal):
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = s.shape[-1]
        keep = torch.tril(torch.ones(n, n, dtype=torch.bool, device=s.device))
        s = s.masked_fill(~keep, float("-inf"))
    p = torch.softmax(s.float(), dim=-1).to(q.dtype)
    return p @ v


class Block(nn.Module):
    def __init__(self, width, heads, attend):
        super().__init__()
        self.heads, self.attend = heads, attend
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.proj = nn.Linear(width, width, bias=False)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                 nn.Linear(4 * width, width))

    def forward(self, x):
        b, s, w = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, -1) \
            .permute(2, 0, 3, 1, 4)
        o = self.attend(q, k, v)
        x = x + self.proj(o.transpose(1, 2).reshape(b, s, w))
        return x + self.mlp(self.norm2(x))


def attention_fns(causal):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from flash_mlir import torch as fm

    def ours(q, k, v):
        return fm.attention(q, k, v, causal=causal)

    def sdpa(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def backend(which):
        def fn(q, k, v):
            with sdpa_kernel(which):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return fn

    def hand(q, k, v):
        return handwritten_attention(q, k, v, causal)

    return {"sdpa-default": (sdpa, False, False),
            "flash_mlir": (ours, False, False),
            "sdpa-flash_mlir": (sdpa, False, True),
            "sdpa-cudnn": (backend(SDPBackend.CUDNN_ATTENTION), False, False),
            "sdpa-fa2": (backend(SDPBackend.FLASH_ATTENTION), False, False),
            "handwritten": (hand, False, False),
            "handwritten-compiled": (hand, "inductor", False),
            "handwritten-flash_mlir": (hand, "flash_mlir", False)}


def time_step(model, x, rounds=5, reps=5):
    def step():
        model(x).float().square().mean().backward()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(True), torch.cuda.Event(True)
        start.record()
        for _ in range(reps):
            step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / reps)
    return statistics.median(times)


def overhead(calls=300):
    """Host time per call at a launch-bound size (B = 1, H = 2, S = 128,
    D = 64, bf16, no grad): where the Python layers cost."""
    import time
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from flash_mlir import sdpa, torch as fm
    from flash_mlir.kernels import Variant
    q, k, v = (torch.randn(1, 2, 128, 64, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    o = torch.empty_like(q)
    kern = fm.kernel_for(Variant.of("bf16", 64), "fwd", q.device)

    def stock():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            F.scaled_dot_product_attention(q, k, v)

    cases = [("Kernel.launch (no checks)", lambda: kern.launch(dict(q=q, k=k, v=v, o=o))),
             ("Kernel(...) (manifest checks)", lambda: kern(q=q, k=k, v=v, o=o)),
             ("flash_mlir.torch.attention", lambda: fm.attention(q, k, v)),
             ("SDPA stock FA2", stock)]
    def per_call(fn):
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - start) / calls * 1e6

    with torch.no_grad():
        results = [(name, per_call(fn)) for name, fn in cases]
        sdpa.activate()
        try:
            results.append(("SDPA with flash_mlir active", per_call(
                lambda: F.scaled_dot_product_attention(q, k, v))))
        finally:
            sdpa.restore()
    for name, us in results:
        print(f"overhead: {name:32s} {us:7.1f} us per call")
    return results


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=2048)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--seqs", default="4096,16384")
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--only", help="comma-separated rows to time")
    p.add_argument("--markdown")
    p.add_argument("--overhead", action="store_true",
                   help="only the host time per call at a tiny size")
    args = p.parse_args(argv)
    if args.overhead:
        overhead()
        return 0
    from flash_mlir import sdpa
    torch.manual_seed(0)
    rows = []
    for seq in (int(s) for s in args.seqs.split(",")):
        batch = max(1, args.tokens // seq)
        x = torch.randn(batch, seq, args.width, device="cuda", dtype=torch.bfloat16)
        results = {}
        for name, (fn, compiled, activate) in attention_fns(args.causal).items():
            if args.only and name not in args.only.split(","):
                continue
            if name.startswith("handwritten") and seq > 4096:
                results[name] = None  # N x N scores per layer: skip long seqs
                continue
            torch._dynamo.reset()
            model = nn.Sequential(*[Block(args.width, args.heads, fn)
                                    for _ in range(args.layers)]).cuda().bfloat16()
            if compiled:
                import flash_mlir.compile  # noqa: F401  (the backend)
                model = torch.compile(model, backend=compiled)
            if activate:
                sdpa.activate()
            before = dict(sdpa.handled)
            try:
                results[name] = time_step(model, x)
            except Exception as e:  # noqa: BLE001
                print(f"{name} seq {seq}: {type(e).__name__}: {e}", file=sys.stderr)
                results[name] = None
            finally:
                ran = {op: n - before.get(op, 0) for op, n in sdpa.handled.items()}
                print(f"  {name}: SDPA priority "
                      f"{list(torch._C._get_sdp_priority_order())}, flash_mlir "
                      f"SDPA calls {ran}, fallbacks {dict(sdpa.fallbacks)}")
                if activate:
                    sdpa.restore()
            del model
            torch.cuda.empty_cache()
        base = results.get("sdpa-default")
        for name, ms in results.items():
            ratio = "" if ms is None or not base else f"{base / ms:.2f}"
            rows.append((seq, batch, name, ms, ratio))
            print(f"seq {seq:6d} batch {batch:3d} {name:22s} "
                  f"{'n/a' if ms is None else f'{ms:8.2f} ms'}  "
                  f"{ratio and 'x' + ratio + ' vs sdpa-default'}")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(f"GPT-style training step, {args.layers} layers, width "
                    f"{args.width}, {args.heads} heads, bf16, "
                    f"{'causal' if args.causal else 'full'} attention, "
                    f"{args.tokens} tokens per step (fwd + bwd)\n\n")
            f.write("| seq | batch | attention | ms / step | speed vs sdpa-default |\n")
            f.write("|---|---|---|---|---|\n")
            for seq, batch, name, ms, ratio in rows:
                f.write(f"| {seq} | {batch} | {name} | "
                        f"{'n/a' if ms is None else f'{ms:.2f}'} | {ratio} |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
