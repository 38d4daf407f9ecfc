"""A split-KV decode kernel's arrival counters (a workspace zero between
calls) under CUDA graph capture and on a side stream: O and LSE of three
replays of a graph captured around the first call of a freshly loaded
kernel, and of three calls on a second stream, against the kernel's own
eager result (bit-equal expected: the same launches on the same inputs).

    python3 -m flash_mlir.graph_check MANIFEST.json
"""
import argparse

import torch

from flash_mlir.decode_bench import decode_tensors
from flash_mlir.runtime import Kernel


def graph_check(path):
    """Prints the largest differences; returns whether every one is 0."""
    same = True
    torch.manual_seed(0)
    for b, n in ((1, 8192), (8, 4096)):
        t = decode_tensors(b, n)
        eager = Kernel.load(path)
        ref = dict(t, o=torch.empty_like(t["o"]), lse=torch.empty_like(t["lse"]))
        eager.launch(ref)
        torch.cuda.synchronize()
        k = Kernel.load(path)  # fresh: no counters yet
        g = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            with torch.cuda.graph(g):
                k.launch(t)
        for _ in range(3):
            t["o"].zero_()
            g.replay()
            torch.cuda.synchronize()
            do = (t["o"].float() - ref["o"].float()).abs().max().item()
            dl = (t["lse"] - ref["lse"]).abs().max().item()
            same = same and do == 0 and dl == 0
            print(f"B {b} N {n} graph replay: max |O - eager| {do:.1e}, "
                  f"LSE {dl:.1e}")
        s2 = torch.cuda.Stream()
        out = dict(t, o=torch.empty_like(t["o"]), lse=torch.empty_like(t["lse"]))
        k2 = Kernel.load(path)
        for _ in range(3):
            k2.launch(out, stream=s2.cuda_stream)
        torch.cuda.synchronize()
        do = (out["o"].float() - ref["o"].float()).abs().max().item()
        same = same and do == 0
        print(f"B {b} N {n} side stream: max |O - eager| {do:.1e}")
    return same


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("manifest")
    args = p.parse_args(argv)
    return 0 if graph_check(args.manifest) else 1


if __name__ == "__main__":
    raise SystemExit(main())
