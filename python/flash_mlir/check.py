"""Checks flash-compile's kernels on a GPU.

    python -m flash_mlir.check DIR

For every kernel in DIR (forward, and backward: gradients against float64
autograd and SDPA FlashAttention-2's) and every case of a shape matrix (ragged M and N,
M != N causal, GQA, BHSD and BSHD layouts, and unaligned rows that take the
element-copy path, fully masked rows), runs the
kernel on random inputs into a NaN-poisoned output and compares it with a
float64 reference computed from the same quantised inputs; also times
nothing. Prints, per kernel, the worst relative error, and the RMSE of our
output and of torch SDPA's FlashAttention-2 backend against float64 (ours
must not be worse than 1.25x FA2's). Exit status 1 on any failure.

A persistent kernel launches as many CTAs as stay resident, more than these
shapes have tiles; the check launches at most `--ctas N` (3 unless given; 0:
as many as fit), so that each CTA walks several tiles (and its barriers run
through several phases).
"""

import argparse
import math
import sys

import torch
import torch.nn.functional as F

from flash_mlir.runtime import load_all
from flash_mlir.validate import manifest_params

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


def reference(q, k, v, scale, causal, window, bias=None, mask=None,
              sinks=None, softcap=None):
    """float64 attention on [B, H, M, D] tensors; fully masked rows are 0.
    `sinks` [H] join each row's softmax as one more score (differentiable);
    `softcap` c makes each scaled score s c tanh(s / c).
    Returns (O, LSE, hidden) with hidden the causal/window mask."""
    q, k, v = (t.double() for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    s = torch.einsum("bhmd,bhnd->bhmn", q, k) * scale
    if softcap is not None:
        s = softcap * torch.tanh(s / softcap)
    m, n = q.shape[2], k.shape[2]
    i = torch.arange(m, device=q.device)[:, None]
    j = torch.arange(n, device=q.device)[None, :]
    hidden = torch.zeros(m, n, dtype=torch.bool, device=q.device)
    if causal:
        hidden |= j > i + (n - m)
    if window is not None:
        hidden |= j < i + (n - m) - window
    if bias is not None:
        s = s + bias.double()
    s = s.masked_fill(hidden, -math.inf)
    if mask is not None:
        s = s.masked_fill(~mask, -math.inf)
    if sinks is not None:
        column = sinks.double()[None, :, None, None].expand(
            s.shape[0], s.shape[1], s.shape[2], 1)
        s = torch.cat([s, column], dim=-1)
    if s.shape[-1]:
        mx = s.amax(dim=-1, keepdim=True)
        mx = torch.where(torch.isinf(mx), torch.zeros_like(mx), mx)
    else:  # no keys (and no sinks): every row fully masked
        mx = s.new_zeros(s.shape[:-1] + (1,))
    e = torch.exp(s - mx)
    l = e.sum(dim=-1, keepdim=True)
    p = torch.where(l == 0, torch.zeros_like(e), e / l.clamp_min(1e-300))
    lse = (mx + torch.log(l))[..., 0]
    if sinks is not None:
        p = p[..., :-1]
    return torch.einsum("bhmn,bhnd->bhmd", p, v), lse, hidden


def sdpa_flash(q, k, v, scale, hidden):
    """SDPA's FlashAttention-2 on the same inputs (None if unsupported)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    m, n = q.shape[2], k.shape[2]
    causal_top_left = hidden.any() and m == n
    if hidden.any() and not causal_top_left:
        return None  # FA2 takes only is_causal (top-left) masks
    try:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(
                q, k, v, is_causal=bool(causal_top_left), scale=scale)
    except RuntimeError:
        return None


CASES = [
    # (B, Hq, Hkv, M, N)
    (2, 4, 4, 128, 128),
    (1, 4, 4, 77, 200),
    (2, 4, 4, 200, 77),
    (1, 8, 2, 130, 130),
    (3, 2, 1, 33, 1000),
    (1, 2, 2, 1, 257),
]


def random_input(g, b, h, s, width, layout, dtype):
    """A random [B, H, S, D] tensor in `layout`: contiguous (bhsd), a view of
    [B, S, H, D] memory (bshd), or one element past an aligned start so that
    rows are not 16-byte aligned and the kernels take their general
    (element-copy) path (offset)."""
    t = torch.randn(b, s, h, width, device="cuda", generator=g)
    if layout == "bshd":
        return t.to(dtype).transpose(1, 2)
    if layout == "offset":
        flat = torch.empty(b * h * s * width + 1, device="cuda", dtype=dtype)
        view = flat[1:].view(b, h, s, width)
        view.copy_(t.transpose(1, 2))
        return view
    return t.transpose(1, 2).contiguous().to(dtype)


def case_inputs(kernel, case, layout, seed):
    """Random Q, K, V for `case` (B, Hq, Hkv, M, N) in `layout`, the seeded
    generator, and `make` for more [B, H, S, width] tensors of the kernel's
    dtype."""
    man = kernel.manifest
    dtype = DTYPES[man["dtype"]]
    b, hq, hkv, m, n = case
    g = torch.Generator(device="cuda").manual_seed(seed)

    def make(h, s, width):
        return random_input(g, b, h, s, width, layout, dtype)

    q = make(hq, m, man["head_dim"])
    k = make(hkv, n, man["head_dim"])
    v = make(hkv, n, man["value_dim"])
    return g, make, q, k, v


# Key splits a split-KV kernel is checked with (None: its own choice).
SPLITS = (None, 1, 3, 9)

# Relative error allowed against float64, per dtype.
TOLERANCE = {"f32": 1e-5, "f16": 2e-3, "bf16": 1.6e-2}


def run_case(kernel, case, layout, seed, splits=None):
    """One forward case; a split-KV kernel cuts the keys into `splits` runs
    (None: its own choice)."""
    man = kernel.manifest
    b, hq, hkv, m, n = case
    g, make, q, k, v = case_inputs(kernel, case, layout, seed)
    o = make(hq, m, man["value_dim"])
    o.fill_(float("nan"))
    tensors = dict(q=q, k=k, v=v, o=o)
    params = {p["name"]: p for p in manifest_params(man)}
    logical = [b, hq, m, n]  # the score shape bias and mask broadcast to
    for name in ("bias", "mask"):
        if name in params:
            p = params[name]
            shape = [1 if s == 1 else logical[4 - p["rank"] + i]
                     for i, s in enumerate(p["shape"])]
            if name == "bias":
                tensors[name] = torch.randn(*shape, device="cuda", generator=g).to(
                    DTYPES[p["dtype"]])
            else:
                tensors[name] = torch.rand(*shape, device="cuda", generator=g) < 0.8
    if "sinks" in params:
        # Some above every score of their rows.
        tensors["sinks"] = (torch.randn(hq, device="cuda", generator=g) * 2 + 1).to(
            DTYPES[params["sinks"]["dtype"]])
    if "lse" in params:
        tensors["lse"] = torch.full((b, hq, m), float("nan"), device="cuda")
    kernel.launch(tensors, None, kernel.check(tensors), splits)
    torch.cuda.synchronize()
    ref, ref_lse, hidden = reference(q, k, v, man["scale"], man["causal"],
                                     man["window"], tensors.get("bias"),
                                     tensors.get("mask"), tensors.get("sinks"))
    ours = o.double()
    if torch.isnan(ours).any():
        return False, f"{case} {layout}: NaN in output (unwritten or invalid)", None
    if "lse" in tensors:
        got = tensors["lse"].double()
        finite = torch.isfinite(ref_lse)
        if torch.isnan(got).any() or not torch.equal(torch.isfinite(got), finite) \
                or (got[finite] - ref_lse[finite]).abs().max() > 1e-3:
            return False, f"{case} {layout}: LSE differs from the reference", None
    err = (ours - ref).norm() / ref.norm().clamp_min(1e-30)
    rmse = ((ours - ref) ** 2).mean().sqrt().item()
    # FA2 through SDPA has no sliding window: compare only where it can run
    # the same function.
    fa2 = None if (man["window"] is not None or "bias" in tensors
                   or "mask" in tensors or "sinks" in tensors) else sdpa_flash(
        *(t.clone(memory_format=torch.contiguous_format) for t in (q, k, v)),
        man["scale"], hidden)
    fa2_rmse = None if fa2 is None else ((fa2.double() - ref) ** 2).mean().sqrt().item()
    tol = TOLERANCE[man["dtype"]]
    ok = err.item() <= tol
    if fa2_rmse is not None and rmse > 1.25 * fa2_rmse + 1e-12:
        ok = False
    masked_rows = hidden.all(dim=-1)
    if masked_rows.any() and ours[..., masked_rows, :].abs().max() != 0:
        ok = False
    fa2_text = "n/a" if fa2_rmse is None else f"{fa2_rmse:.2e}"
    return ok, (f"{case} {layout}: rel {err.item():.2e} (tol {tol:.0e}), rmse ours "
                f"{rmse:.2e} fa2 {fa2_text}"), (rmse, fa2_rmse)


def reference_grads(q, k, v, do, scale, causal, window, bias=None, mask=None):
    """float64 autograd of `reference` on the same quantised inputs; also
    returns O and LSE (the backward kernel's inputs)."""
    q64, k64, v64 = (t.double().requires_grad_() for t in (q, k, v))
    o, lse, hidden = reference(q64, k64, v64, scale, causal, window, bias, mask)
    o.backward(do.double())
    return o.detach(), lse.detach(), hidden, (q64.grad, k64.grad, v64.grad)


def sdpa_flash_grads(q, k, v, do, scale, hidden):
    """SDPA FlashAttention-2's gradients on the same inputs (None if it
    cannot run the same function)."""
    q, k, v = (t.detach().clone().requires_grad_() for t in (q, k, v))
    o = sdpa_flash(q, k, v, scale, hidden)
    if o is None:
        return None
    o.backward(do)
    return q.grad, k.grad, v.grad


def run_backward_case(kernel, case, layout, seed):
    man = kernel.manifest
    dtype = DTYPES[man["dtype"]]
    b, hq, hkv, m, n = case
    _, make, q, k, v = case_inputs(kernel, case, layout, seed)
    do = make(hq, m, man["value_dim"])
    o_ref, lse_ref, hidden, grads_ref = reference_grads(
        q, k, v, do, man["scale"], man["causal"], man["window"])
    o = o_ref.to(dtype)
    if layout == "bshd":
        o = o.transpose(1, 2).contiguous().transpose(1, 2)
    tensors = dict(q=q, k=k, v=v, o=o, do=do, lse=lse_ref.float().contiguous())
    outs = {}
    for name, like in (("dq", q), ("dk", k), ("dv", v)):
        outs[name] = torch.full_like(like, float("nan"))
    tensors.update(outs)
    kernel(**tensors)
    torch.cuda.synchronize()
    fa2 = None
    if man["window"] is None:
        # Fresh, aligned copies: FA2 reads 16 bytes at a time.
        fa2 = sdpa_flash_grads(
            *(t.clone(memory_format=torch.contiguous_format) for t in (q, k, v, do)),
            man["scale"], hidden)
    tol = TOLERANCE[man["dtype"]]
    ok, parts = True, []
    for i, name in enumerate(("dq", "dk", "dv")):
        ours, ref = outs[name].double(), grads_ref[i]
        if torch.isnan(ours).any():
            return False, f"{case} {layout}: NaN in {name} (unwritten or invalid)"
        err = ((ours - ref).norm() / ref.norm().clamp_min(1e-30)).item()
        rmse = ((ours - ref) ** 2).mean().sqrt().item()
        fa2_rmse = None if fa2 is None else \
            ((fa2[i].double() - ref) ** 2).mean().sqrt().item()
        ok &= err <= tol
        if fa2_rmse is not None and rmse > 1.25 * fa2_rmse + 1e-12:
            ok = False
        parts.append(f"{name} rel {err:.2e} rmse {rmse:.2e} fa2 "
                     + ("n/a" if fa2_rmse is None else f"{fa2_rmse:.2e}"))
    masked_rows = hidden.all(dim=-1)
    if masked_rows.any() and outs["dq"][..., masked_rows, :].abs().max() != 0:
        ok = False
        parts.append("dq of fully masked rows is not 0")
    return ok, f"{case} {layout}: " + "; ".join(parts) + f" (tol {tol:.0e})"


def print_kernel(ok, title, lines, verbose):
    """A kernel's PASS/FAIL line, then its cases' lines (`ok ...` only when
    verbose)."""
    print(f"{'PASS' if ok else 'FAIL'} {title}")
    for line in lines:
        if verbose or not line.startswith("ok"):
            print("   " + line)


def limit_ctas(kernel, ctas):
    """Launches `kernel`'s persistent launches (and its general kernel's)
    with at most `ctas` CTAs."""
    while kernel is not None:
        for launch in kernel.launches:
            if launch.max_ctas:
                launch.max_ctas = min(launch.max_ctas, ctas)
        kernel = kernel.general


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("directory")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("--quick", action="store_true",
                   help="one small ragged case per kernel (for compute-sanitizer)")
    p.add_argument("--shape", metavar="B,HQ,HKV,M,N",
                   help="with --quick, this case instead (a backward whose LSE "
                        "rows are TMA-loaded needs M %% 4 == 0 to take its fast "
                        "kernel; the default M = 77 takes the general one)")
    p.add_argument("--kernels", help="comma-separated kernel names to check")
    p.add_argument("--ctas", type=int, default=3,
                   help="persistent kernels launch at most this many CTAs, so "
                        "that each walks several tiles (0: as many as fit)")
    args = p.parse_args(argv)
    quick = (1, 2, 2, 77, 100)
    if args.shape:
        quick = tuple(int(x) for x in args.shape.split(","))
        if len(quick) != 5 or min(quick) < 1:
            p.error("--shape takes five positive sizes: B,HQ,HKV,M,N")
    cases = [quick] if args.quick else CASES
    layouts = ("bhsd",) if args.quick else ("bhsd", "bshd", "offset")
    wanted = set(args.kernels.split(",")) if args.kernels else None
    failures = 0
    for kernel in load_all(args.directory):
        if wanted and kernel.name not in wanted:
            continue
        if {p["name"] for p in manifest_params(kernel.manifest)} & {
                "key_lengths", "cu_seqlens_q"}:
            print(f"SKIP {kernel.name}: a KV-cache or packed-sequence kernel "
                  "(python -m flash_mlir.serving_check checks those)")
            continue
        if kernel.manifest.get("score_mod"):
            # Its region is not something this reference evaluates.
            print(f"SKIP {kernel.name}: a score_mod kernel (python -m "
                  "flash_mlir.score_mod_check checks those)")
            continue
        if args.ctas > 0:
            limit_ctas(kernel, args.ctas)
        # The check's grids are short enough to take a persistent form,
        # which is a kernel of DIR checked on its own.
        kernel.persistent_form = None
        worst, lines, kernel_ok = 0.0, [], True
        for ci, case in enumerate(cases):
            for layout in layouts:
                if kernel.backward:
                    ok, msg = run_backward_case(kernel, case, layout, seed=ci)
                    kernel_ok &= ok
                    lines.append(("ok   " if ok else "FAIL ") + msg)
                    continue
                # A split-KV kernel: its own number of runs, one (the
                # merge of a single run), and more runs than some cases have
                # key blocks (empty runs).
                for splits in SPLITS if kernel.manifest.get("key_splits") \
                        else (None,):
                    ok, msg, _ = run_case(kernel, case, layout, seed=ci,
                                          splits=splits)
                    if splits is not None:
                        msg += f" ({splits} key splits)"
                    kernel_ok &= ok
                    lines.append(("ok   " if ok else "FAIL ") + msg)
        failures += 0 if kernel_ok else 1
        print_kernel(kernel_ok, f"{kernel.name} ({kernel.manifest.get('chip', '?')}, "
                     f"loaded from {kernel.loaded})", lines, args.verbose)
    print(f"check: {failures} kernel(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
