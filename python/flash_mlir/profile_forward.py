"""A few forward calls per backend on the benchmark's shapes, for a profiler
to capture (ncu, nsys): our kernel, SDPA's FlashAttention-2 and cuDNN.

    ncu -k regex:'attn_|flash_fwd|cudnn|fmha' --launch-skip 1 ... \\
        python3 -m flash_mlir.profile_forward DIR NAME [--seq 4096] \\
        [--backends ours,fa2,cudnn] [--calls 2]

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
    args = p.parse_args(argv)
    kernel = Kernel.load(f"{args.directory}/{args.name}.json")
    man = kernel.manifest
    d, dtype, causal = man["head_dim"], DTYPES[man["dtype"]], man["causal"]
    b, h = 16384 // args.seq, 2048 // d
    q, k, v = (torch.randn(b, h, args.seq, d, device="cuda", dtype=dtype)
               for _ in range(3))
    o = torch.empty_like(q)
    for backend in args.backends.split(","):
        for _ in range(args.calls):
            if backend == "ours":
                kernel(q=q, k=k, v=v, o=o)
            else:
                with sdpa_kernel(BACKENDS[backend]):
                    F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        torch.cuda.synchronize()
        print(backend, "done", flush=True)


if __name__ == "__main__":
    main()
