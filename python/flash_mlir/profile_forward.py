"""A few forward calls per backend on the benchmark's shapes, for a profiler
to capture (ncu, nsys): our kernel, SDPA's FlashAttention-2 and cuDNN; with
--backward, forward and backward calls (our NAME_backward's launches, SDPA's
autograd backward).

    ncu -k regex:'attn_|train_|flash_|cudnn|fmha' --launch-skip 1 ... \\
        python3 -m flash_mlir.profile_forward DIR NAME [--seq 4096] \\
        [--backends ours,fa2,cudnn] [--calls 2] [--backward]

NAME is a forward kernel of DIR (its manifest gives dtype, D and the causal
flag); 16k tokens in total, model width 2048, as flash_mlir.bench. Each
backend runs --calls times in a row, so that a profiler can skip the first.
"""

import argparse

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from flash_mlir.runtime import Kernel

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}
BACKENDS = {"fa2": SDPBackend.FLASH_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION}


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("directory")
    p.add_argument("name")
    p.add_argument("--seq", type=int, default=4096)
    p.add_argument("--backends", default="ours,fa2,cudnn")
    p.add_argument("--calls", type=int, default=2)
    p.add_argument("--backward", action="store_true",
                   help="forward and backward calls (NAME_backward for ours)")
    args = p.parse_args(argv)
    kernel = Kernel.load(f"{args.directory}/{args.name}.json")
    backward = (Kernel.load(f"{args.directory}/{args.name}_backward.json")
                if args.backward and "ours" in args.backends.split(",") else None)
    man = kernel.manifest
    d, dtype, causal = man["head_dim"], DTYPES[man["dtype"]], man["causal"]
    b, h = 16384 // args.seq, 2048 // d
    q, k, v = (torch.randn(b, h, args.seq, d, device="cuda", dtype=dtype)
               for _ in range(3))
    o = torch.empty_like(q)
    do = torch.randn_like(q)
    lse = torch.empty(b, h, args.seq, device="cuda")
    grads = {n: torch.empty_like(q) for n in ("dq", "dk", "dv")}
    for backend in args.backends.split(","):
        for _ in range(args.calls):
            if backend == "ours":
                # A training forward (or one for a backward) writes the LSE.
                if man.get("has_lse") or backward is not None:
                    kernel(q=q, k=k, v=v, o=o, lse=lse)
                else:
                    kernel(q=q, k=k, v=v, o=o)
                if backward is not None:
                    backward(q=q, k=k, v=v, o=o, lse=lse, do=do, **grads)
            elif not args.backward:
                with sdpa_kernel(BACKENDS[backend]):
                    F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            else:
                leaves = [t.detach().requires_grad_() for t in (q, k, v)]
                with sdpa_kernel(BACKENDS[backend]):
                    F.scaled_dot_product_attention(
                        *leaves, is_causal=causal).backward(do)
        torch.cuda.synchronize()
        print(backend, "done", flush=True)


if __name__ == "__main__":
    main()
