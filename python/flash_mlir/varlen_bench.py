"""Times packed variable-length batches against dense batches of the same
total tokens (issue 15's varlen bar: mixed lengths at no less than 90% of an
equal-length batch's TFLOP/s, forward and forward + backward).

    python -m flash_mlir.varlen_bench DIR [--against DIR2] [--dtype bf16]
        [--dim 128] [--heads 16] [--markdown FILE]

DIR holds the families of `python -m flash_mlir.kernels -o DIR DT:dD
DT:dD:causal DT:dD:varlen DT:dD:causal:varlen`. For each of causal and not,
times the packed kernels on a mix of lengths (2048, 512, 8192, 1024, 512,
4096: 16k tokens), on 4 x 4096 and 8 x 2048 packed, and the dense kernels on
4 x 4096 and 8 x 2048, with bench.py's method (CUDA events behind a GPU
spin, rounds that rotate the order, medians). TFLOP/s counts each
sequence's own work (4 H D L^2, halved for causal; forward + backward 3.5x
the forward). --against DIR2 times the same kernel names from DIR2 (another
build) in the same rounds.
"""

import argparse
import statistics
import sys

import torch

from flash_mlir.bench import ROUNDS, rotated, time_ms, warm_up_gpu
from flash_mlir.check import DTYPES
from flash_mlir.flops import forward_flops
from flash_mlir.runtime import Kernel

MIXED = [2048, 512, 8192, 1024, 512, 4096]
BATCHES = [("mixed", MIXED), ("4 x 4096", [4096] * 4), ("8 x 2048", [2048] * 8)]


def flops(lengths, heads, dim, causal):
    return sum(forward_flops(1, heads, n, dim, causal) for n in lengths)


def packed_tensors(lengths, heads, dim, dtype):
    total = sum(lengths)
    q, k, v, do = (torch.randn(1, heads, total, dim, device="cuda", dtype=dtype)
                   for _ in range(4))
    cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)),
                      dtype=torch.int32, device="cuda")
    return dict(q=q, k=k, v=v, do=do, o=torch.empty_like(q),
                lse=torch.empty(1, heads, total, device="cuda"),
                dq=torch.empty_like(q), dk=torch.empty_like(k),
                dv=torch.empty_like(v), cu_seqlens_q=cu, cu_seqlens_k=cu)


def dense_tensors(batch, seq, heads, dim, dtype):
    q, k, v, do = (torch.randn(batch, heads, seq, dim, device="cuda", dtype=dtype)
                   for _ in range(4))
    return dict(q=q, k=k, v=v, do=do, o=torch.empty_like(q),
                lse=torch.empty(batch, heads, seq, device="cuda"),
                dq=torch.empty_like(q), dk=torch.empty_like(k),
                dv=torch.empty_like(v))


def subset(t, names):
    return {n: t[n] for n in names}


def forward_call(kernel, scalars):
    names = [p["name"] for p in kernel.params]

    def run(t):
        tensors = subset(t, [n for n in names if n in t])
        kernel.launch(tensors, None, kernel.check(tensors), None, scalars)
    return run


def training_call(forward, backward, scalars):
    fwd = forward_call(forward, scalars)
    names = [p["name"] for p in backward.params]
    workspace = {w["name"] for w in backward.manifest.get("workspace", [])}

    def run(t):
        fwd(t)
        tensors = subset(t, [n for n in names if n in t and n not in workspace])
        backward.launch(tensors, None, backward.check(tensors), None, scalars)
    return run


def load(directory, name):
    try:
        return Kernel.load(f"{directory}/{name}.json")
    except FileNotFoundError:
        return None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("directory")
    p.add_argument("--against", metavar="DIR2")
    p.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--rounds", type=int, default=ROUNDS)
    p.add_argument("--markdown")
    args = p.parse_args(argv)
    dtype = DTYPES[args.dtype]
    h, d = args.heads, args.dim
    header = ("| causal | pass | batch | kernel | TFLOP/s | / dense 4 x 4096 |"
              + (" B TFLOP/s | B / ours |" if args.against else ""))
    rows = [header, "|" + "---|" * (header.count("|") - 1)]
    print(rows[0])
    print(rows[1])
    warm_up_gpu()
    # (batch label, layout, lengths, tensors, grid scalars), allocated once.
    inputs = [(label, "varlen", lengths, packed_tensors(lengths, h, d, dtype),
               {"max_seqlen_q": max(lengths), "max_seqlen_k": max(lengths)})
              for label, lengths in BATCHES]
    inputs += [(f"{batch} x {seq}", "dense", [seq] * batch,
                dense_tensors(batch, seq, h, d, dtype), None)
               for batch, seq in ((4, 4096), (8, 2048))]
    for causal in (False, True):
        family = f"fm_{args.dtype}_d{d}" + ("_causal" if causal else "")
        for kind in ("fwd", "fwd+bwd"):
            results = []
            for label, what, lengths, t, scalars in inputs:
                base = family + ("_varlen" if what == "varlen" else "")
                work = flops(lengths, h, d, causal)
                fns = []
                for tag, directory in (("ours", args.directory),
                                       ("alt", args.against)):
                    if directory is None:
                        continue
                    if kind == "fwd":
                        k = load(directory, f"{base}_fwd")
                        if k is not None:
                            fns.append((tag, forward_call(k, scalars)))
                    else:
                        f = load(directory, f"{base}_train")
                        b = load(directory, f"{base}_train_backward")
                        if f is not None and b is not None:
                            fns.append((tag, training_call(f, b, scalars)))
                if not fns:
                    print(f"   {base}: no {kind} kernels", file=sys.stderr)
                    continue
                samples = {tag: [] for tag, _ in fns}
                for r in range(args.rounds):
                    for tag, fn in rotated(fns, r):
                        samples[tag].append(time_ms(fn, [(t,)], warmup=1, reps=5,
                                                    budget_ms=1500.0))
                scale = 3.5 if kind == "fwd+bwd" else 1.0
                tf = {tag: scale * work / (statistics.median(s) * 1e-3) / 1e12
                      for tag, s in samples.items()}
                results.append((label, what, tf))
            dense = next((tf.get("ours") for label, what, tf in results
                          if what == "dense" and label == "4 x 4096"), None)
            for label, what, tf in results:
                ours = tf.get("ours")
                if ours is None:
                    print(f"   {label} {what}: no {kind} kernels in "
                          f"{args.directory}", file=sys.stderr)
                    continue
                ratio = f"{ours / dense:.3f}" if dense else "n/a"
                row = (f"| {'yes' if causal else 'no'} | {kind} | {label} | {what} | "
                       f"{ours:.1f} | {ratio} |")
                if args.against:
                    alt = tf.get("alt")
                    row += (f" {alt:.1f} | {alt / ours:.3f} |" if alt
                            else " n/a | n/a |")
                print(row, flush=True)
                rows.append(row)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
