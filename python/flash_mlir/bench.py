"""Times flash-compile's kernels against torch SDPA (FlashAttention-2 and
cuDNN backends) in the same run.

    python -m flash_mlir.bench DIR [--seqs 1024,2048,4096,8192,16384]
        [--kernels K1,K2] [--flex] [--plot FILE.png] [--against DIR2] [--rounds N]

FlashAttention's benchmark convention: 16k tokens in total (batch =
16384 / seq), model width 2048 (heads = 2048 / D), forward FLOPs
4 * B * H * seq^2 * D, halved for causal (with a sliding window: 4 * B * H
* D per visible pair). For each kernel whose dtype, D and causal flag fit,
times ours, SDPA-FA2 and SDPA-cuDNN (not for a sliding window, which SDPA
lacks: FlexAttention's block mask with --flex) with CUDA events
around each call, enqueued behind a short GPU spin so that the host's launch
work (Python for ours, the SDPA dispatcher for torch's) overlaps it and the
events time GPU work only (the GPU brought to working clocks first; three
rounds that interleave
them, each starting one further along the list; per round a warm-up and the
median of up to five runs over three rotating input sets; the median of the
rounds) and prints TFLOP/s and the ratios. The table is also written as markdown to --markdown.

A backward kernel (flash-compile's @f_backward next to its forward @f,
which returns the LSE) is timed as forward + backward against SDPA-FA2's
forward + backward through autograd, and its backward alone; FLOPs 2.5x
the forward's for the backward. --against DIR2 also times the kernels of
the same names in DIR2 (another build) in the same rounds: an A/B of two
compilers' kernels that clock drift between runs cannot blur. --memory N measures the peak extra memory
of our forward + backward (and FA2's) for B = 1, H = 16 and sequence
lengths up to N, to show that it grows linearly in N.
"""

import argparse
import statistics
import time
import sys

import torch
import torch.nn.functional as F

from flash_mlir.flops import forward_flops
from flash_mlir.runtime import load_all

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
ROUNDS = 3


# GPU cycles of the spin enqueued before each timed call: long enough to
# cover any backend's host-side launch work (our Python launcher's ~0.15 ms
# included), so the events time the kernels, not the host.
HOST_COVER_CYCLES = 1_000_000


def time_ms(fn, inputs, warmup=2, reps=10, budget_ms=4000.0):
    for i in range(warmup):
        fn(*inputs[i % len(inputs)])
    torch.cuda.synchronize()
    times = []
    for i in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        # The start event follows a spin on the GPU, during which the host
        # enqueues the call: the interval holds only the call's GPU work.
        torch.cuda._sleep(HOST_COVER_CYCLES)
        start.record()
        fn(*inputs[i % len(inputs)])
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
        if sum(times) > budget_ms and len(times) >= 3:
            break
    return statistics.median(times)


def rotated(fns, r):
    """Round r's order: each function takes each place in turn, so that what
    runs before it (cuDNN at full power lowers the clocks of what follows)
    weighs on all alike."""
    r %= len(fns)
    return fns[r:] + fns[:r]


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


def training_tensors(b, h, seq, d, dtype):
    q, k, v, do = (torch.randn(b, h, seq, d, device="cuda", dtype=dtype)
                   for _ in range(4))
    return dict(q=q, k=k, v=v, do=do, o=torch.empty_like(q),
                lse=torch.empty(b, h, seq, device="cuda"),
                dq=torch.empty_like(q), dk=torch.empty_like(k), dv=torch.empty_like(v))


def ours_training(forward, backward):
    def run(t):
        forward(q=t["q"], k=t["k"], v=t["v"], o=t["o"], lse=t["lse"])
        backward(**t)
    return run


def sdpa_training(backend, causal, scale):
    from torch.nn.attention import sdpa_kernel

    def run(t):
        q, k, v = (t[n].detach().requires_grad_() for n in ("q", "k", "v"))
        with sdpa_kernel(backend):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
        o.backward(t["do"])
    return run


def fa2_training(causal, scale):
    from torch.nn.attention import SDPBackend
    return sdpa_training(SDPBackend.FLASH_ATTENTION, causal, scale)


def bench_training(forward, backward, seqs, rows, alternative=None, rounds=ROUNDS):
    man = backward.manifest
    dtype, d, causal = DTYPES[man["dtype"]], man["head_dim"], man["causal"]
    for seq in seqs:
        b, h = 16384 // seq, 2048 // d
        inputs = [(training_tensors(b, h, seq, d, dtype),) for _ in range(2)]
        for (t,) in inputs:  # O and LSE for the backward-only timing
            forward(q=t["q"], k=t["k"], v=t["v"], o=t["o"], lse=t["lse"])
        flops = 4 * b * h * seq * seq * d / (2 if causal else 1)
        fa2_graphs = []
        from torch.nn.attention import SDPBackend, sdpa_kernel
        for (t,) in inputs:
            q, k, v = (t[n].detach().requires_grad_() for n in ("q", "k", "v"))
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                o = F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                   scale=man["scale"])
            fa2_graphs.append((o, q, k, v, t["do"]))
        step = {"i": 0}

        def fa2_backward(t):
            o, q, k, v, do = fa2_graphs[step["i"] % len(fa2_graphs)]
            step["i"] += 1
            torch.autograd.grad(o, (q, k, v), do, retain_graph=True)

        def ours_backward(t):
            backward(**t)
        fns = [("ours", ours_training(forward, backward), 3.5),
               ("fa2", fa2_training(causal, man["scale"]), 3.5),
               ("cudnn", sdpa_training(SDPBackend.CUDNN_ATTENTION, causal,
                                       man["scale"]), 3.5),
               ("ours_bwd", ours_backward, 2.5), ("fa2_bwd", fa2_backward, 2.5)]
        if alternative:
            alt_forward, alt_backward = alternative

            def alt_bwd(t):
                alt_backward(**t)
            fns += [("alt", ours_training(alt_forward, alt_backward), 3.5),
                    ("alt_bwd", alt_bwd, 2.5)]
        samples = {name: [] for name, _, _ in fns}
        for r in range(rounds):
            for name, fn, _ in rotated(fns, r):
                samples[name].append(time_ms(fn, inputs, warmup=1, reps=5,
                                             budget_ms=1500.0))
        tf = {name: factor * flops / (statistics.median(samples[name]) * 1e-3) / 1e12
              for name, _, factor in fns}
        row = (f"| {backward.name} | {man['dtype']} | {d} | {'yes' if causal else 'no'} | "
               f"{seq} | {tf['ours']:.1f} | {tf['fa2']:.1f} | {tf['ours'] / tf['fa2']:.3f} | "
               f"{tf['cudnn']:.1f} | {tf['ours'] / tf['cudnn']:.3f} | "
               f"{tf['ours_bwd']:.1f} | {tf['fa2_bwd']:.1f} | "
               f"{tf['ours_bwd'] / tf['fa2_bwd']:.3f} |")
        if alternative:
            row += (f" {tf['alt']:.1f} | {tf['alt'] / tf['ours']:.3f} | "
                    f"{tf['alt_bwd']:.1f} | {tf['alt_bwd'] / tf['ours_bwd']:.3f} |")
        print(row, flush=True)
        rows.append(row)


def peak_extra_memory(run, inputs, allocate_outputs):
    """Peak bytes allocated by one forward + backward beyond Q, K, V, dO:
    O, LSE, dQ, dK, dV and every workspace."""
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    t = dict(inputs)
    if allocate_outputs:
        q, k, v = inputs["q"], inputs["k"], inputs["v"]
        b, h, seq, _ = q.shape
        t.update(o=torch.empty_like(q), lse=torch.empty(b, h, seq, device="cuda"),
                 dq=torch.empty_like(q), dk=torch.empty_like(k), dv=torch.empty_like(v))
    run(t)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del t
    return peak


def bench_memory(forward, backward, max_seq):
    man = backward.manifest
    dtype, d, causal = DTYPES[man["dtype"]], man["head_dim"], man["causal"]
    print(f"\n| {backward.name}, B = 1, H = 16: seq | ours peak extra MiB | "
          "per token KiB | FA2 peak extra MiB | per token KiB | N x N f32 would be MiB |")
    print("|---|---|---|---|---|---|")
    seq = 4096
    while seq <= max_seq:
        inputs = {n: torch.randn(1, 16, seq, d, device="cuda", dtype=dtype)
                  for n in ("q", "k", "v", "do")}
        ours = peak_extra_memory(ours_training(forward, backward), inputs, True)
        fa2 = peak_extra_memory(fa2_training(causal, man["scale"]), inputs, False)
        square = 16 * seq * seq * 4
        print(f"| {seq} | {ours / 2**20:.1f} | {ours / seq / 1024:.2f} | "
              f"{fa2 / 2**20:.1f} | {fa2 / seq / 1024:.2f} | {square / 2**20:.0f} |",
              flush=True)
        del inputs
        seq *= 2


_flex = None


def flex(seq, causal, scale, window=None):
    """FlexAttention (Triton, through torch.compile) on the same inputs; one
    compiled function for all shapes, with room for a compile per shape."""
    global _flex
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    if _flex is None:
        for name in ("recompile_limit", "cache_size_limit"):
            if hasattr(torch._dynamo.config, name):
                setattr(torch._dynamo.config, name, 64)
        _flex = torch.compile(flex_attention, dynamic=False)
    compiled = _flex
    mask = None
    if window is not None:
        def sees(b, h, q, kv):
            inside = q - kv <= window
            return (q >= kv) & inside if causal else inside
        mask = create_block_mask(sees, None, None, seq, seq, device="cuda")
    elif causal:
        mask = create_block_mask(lambda b, h, q, kv: q >= kv, None, None, seq, seq,
                                 device="cuda")

    def run(q, k, v, o):
        o.copy_(compiled(q, k, v, block_mask=mask, scale=scale))
    return run


def plot(curves, path):
    """TFLOP/s against sequence length, one panel per kernel."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = sorted(curves)
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 4), squeeze=False)
    labels = {"ours": "flash-mlir", "fa2": "SDPA FlashAttention-2",
              "cudnn": "SDPA cuDNN", "flex": "FlexAttention"}
    for ax, name in zip(axes[0], names):
        seqs = sorted(curves[name])
        for key, label in labels.items():
            ys = [curves[name][s].get(key) for s in seqs]
            if any(y is not None for y in ys):
                ax.plot(seqs, [float("nan") if y is None else y for y in ys],
                        marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_xticks(seqs, [str(s) for s in seqs])
        ax.set_xlabel("sequence length (16k tokens per batch)")
        ax.set_ylabel("TFLOP/s")
        ax.set_title(name)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


def main(argv=None):
    from torch.nn.attention import SDPBackend
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("directory")
    p.add_argument("--seqs", default="1024,2048,4096,8192,16384")
    p.add_argument("--markdown")
    p.add_argument("--memory", type=int, default=0,
                   help="also measure fwd+bwd peak extra memory up to this seq")
    p.add_argument("--kernels", help="comma-separated kernel names to time")
    p.add_argument("--against", metavar="DIR2",
                   help="also time DIR2's kernels of the same names (B) in the "
                   "same rounds, with B / ours")
    p.add_argument("--flex", action="store_true",
                   help="also time FlexAttention (torch.compile'd flex_attention)")
    p.add_argument("--rounds", type=int, default=ROUNDS,
                   help="interleaved rounds per point (each takes every "
                   "backend's median of up to five calls; the table the median "
                   "of the rounds): more where long calls drift with the clocks")
    p.add_argument("--plot", help="draw TFLOP/s against sequence length per "
                   "kernel (ours, FA2, cuDNN, FlexAttention) into this PNG")
    args = p.parse_args(argv)
    wanted = set(args.kernels.split(",")) if args.kernels else None
    curves = {}
    seqs = [int(s) for s in args.seqs.split(",")]
    rows = []
    header = ("| kernel | dtype | D | causal | seq | ours TFLOP/s | SDPA FA2 | SDPA cuDNN "
              "| ours / FA2 | ours / cuDNN |" + (" FlexAttention |" if args.flex else "")
              + (" B TFLOP/s | B / ours |" if args.against else ""))
    columns = 10 + bool(args.flex) + 2 * bool(args.against)
    print(header)
    print("|" + "---|" * columns)
    warm_up_gpu()
    kernels = [k for k in load_all(args.directory, general=False)
               if wanted is None or k.name in wanted]
    by_name = {k.name: k for k in kernels}
    other = ({k.name: k for k in load_all(args.against, general=False)}
             if args.against else {})
    training = [(by_name.get(k.name[:-len("_backward")]), k) for k in kernels
                if k.backward and k.name.endswith("_backward")]
    for kernel in kernels:
        man = kernel.manifest
        if kernel.backward:
            continue
        if man["dtype"] not in DTYPES or man["has_bias"] or man["has_mask"]:
            continue
        dtype, d, causal = DTYPES[man["dtype"]], man["head_dim"], man["causal"]
        # SDPA has no sliding window: such kernels meet FlexAttention's (with
        # --flex) and the --against build's only.
        window = man["window"]
        for seq in seqs:
            b, h = 16384 // seq, 2048 // d
            inputs = []
            for _ in range(3):
                q, k, v = (torch.randn(b, h, seq, d, device="cuda", dtype=dtype)
                           for _ in range(3))
                inputs.append((q, k, v, torch.empty_like(q)))
            flops = forward_flops(b, h, seq, d, causal, window)
            lse = torch.empty(b, h, seq, device="cuda") if man.get("has_lse") else None

            def ours(q, k, v, o):
                if lse is None:
                    kernel(q=q, k=k, v=v, o=o)
                else:
                    kernel(q=q, k=k, v=v, o=o, lse=lse)
            # Rounds that interleave the three, so that clock and thermal drift
            # during the run hits them alike; the median of the rounds.
            fns = [("ours", ours)]
            if window is None:
                fns += [("fa2", sdpa(SDPBackend.FLASH_ATTENTION, causal, man["scale"])),
                        ("cudnn", sdpa(SDPBackend.CUDNN_ATTENTION, causal, man["scale"]))]
            if args.flex:
                fns.append(("flex", flex(seq, causal, man["scale"], window)))
            alt = other.get(kernel.name)
            if alt is not None:
                def alternative(q, k, v, o, alt=alt):
                    if lse is None:
                        alt(q=q, k=k, v=v, o=o)
                    else:
                        alt(q=q, k=k, v=v, o=o, lse=lse)
                fns.append(("alt", alternative))
            samples = {name: [] for name, _ in fns}
            for r in range(args.rounds):
                for name, fn in rotated(fns, r):
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
            result.setdefault("fa2", None)
            result.setdefault("cudnn", None)

            def fmt(x):
                return "n/a" if x is None else f"{x:.1f}"

            def ratio(a, b):
                return "n/a" if a is None or b is None else f"{a / b:.3f}"
            row = (f"| {kernel.name} | {man['dtype']} | {d} | {'yes' if causal else 'no'} | "
                   f"{seq} | {fmt(result['ours'])} | {fmt(result['fa2'])} | "
                   f"{fmt(result['cudnn'])} | {ratio(result['ours'], result['fa2'])} | "
                   f"{ratio(result['ours'], result['cudnn'])} |"
                   + (f" {fmt(result['flex'])} |" if args.flex else "")
                   + (f" {fmt(result.get('alt'))} | {ratio(result.get('alt'), result['ours'])} |"
                      if args.against else ""))
            print(row, flush=True)
            rows.append(row)
            curves.setdefault(kernel.name, {})[seq] = result
    if args.plot:
        plot(curves, args.plot)
    train_header = ("| backward | dtype | D | causal | seq | ours fwd+bwd TFLOP/s | "
                    "FA2 fwd+bwd | ours / FA2 | cuDNN fwd+bwd | ours / cuDNN | "
                    "ours bwd | FA2 bwd | ours / FA2 bwd |"
                    + (" B fwd+bwd | B / ours | B bwd | B / ours bwd |" if args.against
                       else ""))
    train_columns = 13 + 4 * bool(args.against)
    train_rows = []
    if training:
        print()
        print(train_header)
        print("|" + "---|" * train_columns)
    for forward, backward in training:
        if forward is None or not forward.manifest.get("has_lse"):
            print(f"   {backward.name}: no forward with LSE next to it", file=sys.stderr)
            continue
        pair = (other.get(forward.name), other.get(backward.name))
        bench_training(forward, backward, seqs, train_rows,
                       pair if all(pair) else None, args.rounds)
    if args.memory:
        for forward, backward in training:
            if forward is not None and backward.manifest["dtype"] == "bf16" and \
                    backward.manifest["head_dim"] == 128 and not backward.manifest["causal"]:
                bench_memory(forward, backward, args.memory)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(header + "\n|" + "---|" * columns + "\n" + "\n".join(rows) + "\n")
            if train_rows:
                f.write("\n" + train_header + "\n|" + "---|" * train_columns + "\n"
                        + "\n".join(train_rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
