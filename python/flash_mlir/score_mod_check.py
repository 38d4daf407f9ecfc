"""On the GPU machine: the score_mod kernels of examples/gpu/score-mod.mlir
(softcap, ALiBi, and the plain attention compiled the same way) against a
float32 torch reference, timed beside FlexAttention with the same score_mod and
SDPA's FlashAttention-2 backend on plain attention, in one run.

    python3 -m flash_mlir.score_mod_check DIR     # DIR: flash_mlir.gpu_module --out
    python3 -m flash_mlir.score_mod_check DIR --flash-compile   # DIR: flash-compile -o

With --flash-compile the kernels are flash-compile's (its tile choice, manifests with
the slopes as parameter mod0), launched through runtime.Kernel by name.

The shapes are those the example was compiled for (static): B 4, H 16, S 2048,
D 128, bf16. Prints one line per kernel and a markdown table; exit 1 when a
kernel's O is off the reference by more than bf16's tolerance.
"""

import argparse
import json
import math
import os
import sys

B, H, S, D = 4, 16, 2048, 128
CAP = 50.0
TOLERANCE = 1.6e-2  # cpu_check's bf16 tolerance (relative to max |O|)


def main(argv=None):
    import torch
    import torch.nn.functional as F
    from flash_mlir import runtime

    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--flash-compile", action="store_true",
                   help="DIR holds flash-compile's kernels and manifests")
    args = p.parse_args(argv)

    torch.manual_seed(0)
    dev = "cuda"
    q, k, v = (torch.randn(B, H, S, D, device=dev, dtype=torch.bfloat16) for _ in range(3))
    slopes = torch.exp2(-8.0 * (torch.arange(H, device=dev) + 1) / H).float()
    scale = 1.0 / math.sqrt(D)
    rel = (torch.arange(S, device=dev)[None, :] - torch.arange(S, device=dev)[:, None]).float()
    causal_keep = rel <= 0

    def reference(kind):
        out = torch.empty(B, H, S, D, device=dev, dtype=torch.float32)
        for b in range(B):  # one batch at a time: S x S f32 scores per head
            s = torch.einsum("hmd,hnd->hmn", q[b].float(), k[b].float()) * scale
            if kind == "softcap":
                s = CAP * torch.tanh(s / CAP)
            if kind == "alibi_causal":
                s = s + slopes[:, None, None] * rel
            if kind.endswith("causal"):
                s = s.masked_fill(~causal_keep, float("-inf"))
            out[b] = torch.einsum("hmn,hnd->hmd", torch.softmax(s, -1), v[b].float())
        return out

    def timed(fn):
        for _ in range(3):
            fn()
        start, end = torch.cuda.Event(True), torch.cuda.Event(True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(args.iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / args.iters

    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    flex = torch.compile(flex_attention)
    causal_mask = create_block_mask(lambda b, h, i, j: j <= i, None, None, S, S, device=dev)
    flex_mods = {
        "plain": (None, None),
        "softcap": (lambda s, b, h, i, j: CAP * torch.tanh(s / CAP), None),
        "plain_causal": (None, causal_mask),
        "alibi_causal": (lambda s, b, h, i, j: s + slopes[h] * (j - i), causal_mask),
    }

    failures = 0
    rows = []
    for kind in ("plain", "softcap", "plain_causal", "alibi_causal"):
        path = os.path.join(args.dir, kind + ".json")
        o = torch.empty_like(q)
        if args.flash_compile:
            kernel = runtime.Kernel.load(path)
            tensors = {"q": q, "k": k, "v": v, "o": o}
            if kind == "alibi_causal":
                tensors["mod0"] = slopes
            run = lambda: kernel(**tensors)  # noqa: E731
            print(f"{kind}: flash-compile tiles {kernel.manifest['block_rows']}x"
                  f"{kernel.manifest['block_cols']}, {kernel.manifest['registers']} "
                  f"registers, {kernel.manifest['spill_bytes']} spill bytes")
        else:
            with open(path) as f:
                entry = json.load(f)
            launch = runtime.Launch(entry, args.dir, kind, entry.get("chip"))
            operands = [q, k, v] + ([slopes] if kind == "alibi_causal" else []) + [o]
            tensors = {f"arg{i}": t for i, t in enumerate(operands)}
            stream = torch.cuda.current_stream().cuda_stream
            run = lambda: launch(stream, tensors)  # noqa: E731
        run()
        torch.cuda.synchronize()
        want = reference(kind)
        err = ((o.float() - want).abs().max() / want.abs().max()).item()
        ok = err <= TOLERANCE and bool(torch.isfinite(o).all())
        failures += not ok
        ours = timed(run)
        mod, mask = flex_mods[kind]
        flex_ms = timed(lambda: flex(q, k, v, score_mod=mod, block_mask=mask))
        causal = kind.endswith("causal")
        sdpa_ms = None
        if mod is None:
            from torch.nn.attention import SDPBackend, sdpa_kernel
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                sdpa_ms = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
        flops = 4 * B * H * S * S * D / (2 if causal else 1)
        tf = lambda ms: flops / ms / 1e9  # noqa: E731
        line = (f"{'PASS' if ok else 'FAIL'} {kind}: O rel err {err:.2e}; ours {ours:.3f} ms "
                f"({tf(ours):.0f} TFLOP/s), FlexAttention {flex_ms:.3f} ms ({tf(flex_ms):.0f})"
                + (f", SDPA FA2 {sdpa_ms:.3f} ms ({tf(sdpa_ms):.0f})" if sdpa_ms else ""))
        print(line, flush=True)
        rows.append((kind, ours, tf(ours), flex_ms, tf(flex_ms), sdpa_ms, err))
    print()
    print("| kernel | ours ms | TFLOP/s | FlexAttention ms | TFLOP/s | ours / Flex | SDPA FA2 ms | O rel err |")
    print("|---|---|---|---|---|---|---|---|")
    for kind, ours, t1, flex_ms, t2, sdpa_ms, err in rows:
        sd = f"{sdpa_ms:.3f}" if sdpa_ms else "-"
        print(f"| {kind} | {ours:.3f} | {t1:.0f} | {flex_ms:.3f} | {t2:.0f} | "
              f"{flex_ms / ours:.2f}x | {sd} | {err:.1e} |")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
