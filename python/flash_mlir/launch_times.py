"""Per-launch times of backward kernels (which of the pre-pass, dQ, dK/dV
or last-pass launches takes the time), on the benchmark's shapes: 16k tokens,
model width 2048, random inputs, O and LSE from the kernel's own forward.

    python3 -m flash_mlir.launch_times DIR FORWARD_NAME... [--seq 4096]

FORWARD_NAME is a forward kernel of DIR whose backward is
FORWARD_NAME_backward (flash-compile's training pair). Each launch runs
repeatedly on its own, so the gradients it leaves are not meaningful (the
atomic form's sums keep growing): timing only; `flash_mlir.check` checks.
"""

import argparse

import torch

from flash_mlir import validate
from flash_mlir.runtime import Kernel

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


def launch_times(directory, name, seq, reps=10):
    """[(launch index, milliseconds)] of NAME_backward's launches."""
    forward = Kernel.load(f"{directory}/{name}.json")
    backward = Kernel.load(f"{directory}/{name}_backward.json")
    man = backward.manifest
    d, dtype = man["head_dim"], DTYPES[man["dtype"]]
    b, h = 16384 // seq, 2048 // d
    t = {n: torch.randn(b, h, seq, d, device="cuda", dtype=dtype)
         for n in ("q", "k", "v", "do")}
    t.update(o=torch.empty_like(t["q"]), lse=torch.empty(b, h, seq, device="cuda"),
             dq=torch.empty_like(t["q"]), dk=torch.empty_like(t["k"]),
             dv=torch.empty_like(t["v"]))
    forward(q=t["q"], k=t["k"], v=t["v"], o=t["o"], lse=t["lse"])
    for w in man.get("workspace", []):
        shape = validate.workspace_shape(w, {w["like"]: t[w["like"]].shape})
        t[w["name"]] = torch.empty(shape, dtype=torch.float32, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    times = []
    # In order, each after the ones before it: every launch reads what the
    # earlier ones wrote.
    for i, launch in enumerate(backward.launches):
        for _ in range(3):
            launch(stream, t)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            launch(stream, t)
        end.record()
        torch.cuda.synchronize()
        times.append((i, start.elapsed_time(end) / reps))
    return times


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("directory")
    p.add_argument("names", nargs="+")
    p.add_argument("--seq", type=int, default=4096)
    args = p.parse_args(argv)
    for name in args.names:
        for i, ms in launch_times(args.directory, name, args.seq):
            print(f"{name}_backward launch {i}: {ms:.3f} ms", flush=True)


if __name__ == "__main__":
    main()
