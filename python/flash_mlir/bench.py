"""Times flash-compile's kernels against torch SDPA (FlashAttention-2 and
cuDNN backends) in the same run.

    python -m flash_mlir.bench DIR [--seqs 1024,2048,4096,8192,16384]

FlashAttention's benchmark convention: 16k tokens in total (batch =
16384 / seq), model width 2048 (heads = 2048 / D), forward FLOPs
4 * B * H * seq^2 * D, halved for causal. For each kernel whose dtype, D and
causal flag fit, times ours, SDPA-FA2 and SDPA-cuDNN with CUDA events
(the GPU brought to working clocks first; three rounds that interleave the
three; per round a warm-up and the median of up to five runs over three
rotating input sets; the median of the rounds) and prints TFLOP/s and the
ratios. The table is also written as markdown to --markdown.
"""

import argparse
import statistics
import time
import sys

import torch
import torch.nn.functional as F

from flash_mlir.runtime import load_all

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
ROUNDS = 3


def time_ms(fn, inputs, warmup=2, reps=10, budget_ms=4000.0):
    for i in range(warmup):
        fn(*inputs[i % len(inputs)])
    torch.cuda.synchronize()
    times = []
    for i in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*inputs[i % len(inputs)])
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
        if sum(times) > budget_ms and len(times) >= 3:
            break
    return statistics.median(times)


def warm_up_gpu(seconds=2.0):
    """Brings the GPU to its working clocks before the first measurement
    (it idles far below them)."""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    start = time.time()
    while time.time() - start < seconds:
        a @ a
        torch.cuda.synchronize()


def sdpa(backend, causal, scale):
    from torch.nn.attention import sdpa_kernel

    def run(q, k, v, o):
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                  scale=scale)
    return run


def main(argv=None):
    from torch.nn.attention import SDPBackend
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("directory")
    p.add_argument("--seqs", default="1024,2048,4096,8192,16384")
    p.add_argument("--markdown")
    args = p.parse_args(argv)
    seqs = [int(s) for s in args.seqs.split(",")]
    rows = []
    header = ("| kernel | dtype | D | causal | seq | ours TFLOP/s | SDPA FA2 | SDPA cuDNN "
              "| ours / FA2 | ours / cuDNN |")
    print(header)
    print("|" + "---|" * 10)
    warm_up_gpu()
    for kernel in load_all(args.directory, general=False):
        man = kernel.manifest
        if man["dtype"] not in DTYPES or man["has_bias"] or man["has_mask"] \
                or man["window"] is not None:
            continue
        dtype, d, causal = DTYPES[man["dtype"]], man["head_dim"], man["causal"]
        for seq in seqs:
            b, h = 16384 // seq, 2048 // d
            inputs = []
            for _ in range(3):
                q, k, v = (torch.randn(b, h, seq, d, device="cuda", dtype=dtype)
                           for _ in range(3))
                inputs.append((q, k, v, torch.empty_like(q)))
            flops = 4 * b * h * seq * seq * d / (2 if causal else 1)

            def ours(q, k, v, o):
                kernel(q=q, k=k, v=v, o=o)
            # Rounds that interleave the three, so that clock and thermal drift
            # during the run hits them alike; the median of the rounds.
            fns = [("ours", ours),
                   ("fa2", sdpa(SDPBackend.FLASH_ATTENTION, causal, man["scale"])),
                   ("cudnn", sdpa(SDPBackend.CUDNN_ATTENTION, causal, man["scale"]))]
            samples = {name: [] for name, _ in fns}
            for _ in range(ROUNDS):
                for name, fn in fns:
                    if samples[name] is None:
                        continue
                    try:
                        samples[name].append(time_ms(fn, inputs, warmup=1, reps=5,
                                                     budget_ms=1500.0))
                    except RuntimeError as e:
                        samples[name] = None
                        print(f"   {name} failed: {str(e).splitlines()[0]}",
                              file=sys.stderr)
            result = {name: None if not t else flops / (statistics.median(t) * 1e-3) / 1e12
                      for name, t in samples.items()}

            def fmt(x):
                return "n/a" if x is None else f"{x:.1f}"

            def ratio(a, b):
                return "n/a" if a is None or b is None else f"{a / b:.3f}"
            row = (f"| {kernel.name} | {man['dtype']} | {d} | {'yes' if causal else 'no'} | "
                   f"{seq} | {fmt(result['ours'])} | {fmt(result['fa2'])} | "
                   f"{fmt(result['cudnn'])} | {ratio(result['ours'], result['fa2'])} | "
                   f"{ratio(result['ours'], result['cudnn'])} |")
            print(row, flush=True)
            rows.append(row)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(header + "\n|" + "---|" * 10 + "\n" + "\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
