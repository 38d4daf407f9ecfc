"""Checks the PyTorch op on a GPU (flash_mlir.torch), in one run:

    python -m flash_mlir.torch_check [-v]

- forward and backward over a shape matrix (ragged M and N, M != N causal,
  GQA, [B, H, S, D] and [B, S, H, D] views, unaligned rows, fully masked
  rows; bias, mask, window, scale, Dv != D) against float64 references
  computed from the same quantised inputs, and against SDPA's
  FlashAttention-2 (our RMSE at most 1.25x its own where it runs the same
  function);
- the bad calls: each must raise TypeError/ValueError before any launch, and
  a good call after them must still be right;
- the backward's form: the atomic kernel by default, the deterministic pair
  (bitwise reproducible) under torch.use_deterministic_algorithms and for
  causal calls over few keys;
- torch.compile(fullgraph=True) of code calling the op, forward and
  backward, equal to eager, with our kernels counted as launched;
- SDPA's registration (flash_mlir.sdpa): F.scaled_dot_product_attention
  runs our kernels once activated, and falls back with a reason otherwise;
- the serving calls (varlen_attention, attention_with_kvcache:
  flash_mlir.torch_serving_check).

Kernels must be prebuilt for the variants used (scripts/gpu_build.sh does
it) unless flash-compile is installed. Exit status 1 on any failure.
"""

import argparse
import itertools
import math
import subprocess
import sys
import traceback

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from flash_mlir import torch as fm
from flash_mlir.check import random_input, reference, reference_grads

TOL = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}

# (B, Hq, Hkv, M, N)
SHAPES = [(2, 4, 4, 128, 128), (1, 4, 4, 77, 200), (2, 4, 4, 200, 77),
          (1, 8, 2, 130, 130), (3, 2, 1, 33, 1000), (1, 2, 2, 1, 257)]

failures = []


def record(ok, what, detail=""):
    if not ok:
        failures.append(what)
    print(("ok   " if ok else "FAIL ") + what + (f": {detail}" if detail else ""))


def make(shape, dtype, layout, g):
    """A random [B, H, S, D] tensor in `layout` (check.random_input)."""
    b, h, s, d = shape
    return random_input(g, b, h, s, d, layout, dtype)


def rel(a, b):
    return ((a.double() - b).norm() / b.norm().clamp_min(1e-30)).item()


def rmse(a, b):
    return ((a.double() - b) ** 2).mean().sqrt().item()


def sdpa_fa2(q, k, v, scale, causal, do=None):
    """SDPA's FlashAttention-2 on the same inputs where it computes the same
    function (M == N for causal), else None; with do, also its grads."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    m, n = q.shape[2], k.shape[2]
    if causal and m != n:
        return None
    group = q.shape[1] // k.shape[1]
    q, k, v = (t.detach().clone(memory_format=torch.contiguous_format)
               .requires_grad_(do is not None) for t in (q, k, v))
    try:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                               scale=scale,
                                               enable_gqa=group > 1)
            if do is None:
                return o, None
            # A fresh aligned dO: FA2's backward reads it 16 bytes at a time.
            o.backward(do.clone(memory_format=torch.contiguous_format))
    except RuntimeError:
        return None
    return o, (q.grad, k.grad, v.grad)


def check_case(dtype, d, dv, causal, shape, layout, seed, window=None,
               scale=None, bias_shape=None, mask_shape=None, grad=True,
               sinks_dtype=None):
    b, hq, hkv, m, n = shape
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = make((b, hq, m, d), dtype, layout, g)
    k = make((b, hkv, n, d), dtype, layout, g)
    v = make((b, hkv, n, dv), dtype, layout, g)
    bias = mask = None
    if bias_shape is not None:
        bias = torch.randn(*bias_shape, device="cuda", generator=g)
    if mask_shape is not None:
        mask = torch.rand(*mask_shape, device="cuda", generator=g) < 0.7
        mask[..., 0, :] = False  # a fully masked row
    sinks = sinks64 = None
    if sinks_dtype is not None:
        # Learned logits, some above every score of their rows.
        sinks = (torch.randn(hq, device="cuda", generator=g) * 2 + 1).to(sinks_dtype)
        sinks64 = sinks.detach().double().requires_grad_(grad)
        sinks = sinks.detach().requires_grad_(grad)
    eff_scale = scale if scale is not None else 1 / math.sqrt(d)
    name = (f"{str(dtype)[6:]} d{d}{'' if dv == d else f' dv{dv}'}"
            f"{' causal' if causal else ''}{f' w{window}' if window is not None else ''}"
            f"{' scale' if scale is not None else ''}{' bias' if bias is not None else ''}"
            f"{' mask' if mask is not None else ''}"
            f"{' sinks ' + str(sinks_dtype)[6:] if sinks is not None else ''} {shape} {layout}")
    qs, ks, vs = (t.detach().requires_grad_(grad) for t in (q, k, v))
    o, lse = fm.attention(qs, ks, vs, causal=causal, scale=scale, window=window,
                          bias=bias, mask=mask, sinks=sinks, return_lse=True)
    q64, k64, v64 = (t.detach().double().requires_grad_(grad) for t in (q, k, v))
    ref, ref_lse, hidden = reference(q64, k64, v64, eff_scale, causal, window,
                                     bias, mask, sinks64)
    if mask is not None:
        hidden = hidden | ~mask.expand(b, hq, m, n)
    tol = TOL[dtype]
    err = rel(o, ref)
    ok = not torch.isnan(o).any() and err <= tol
    finite = torch.isfinite(ref_lse)
    ok &= torch.equal(torch.isfinite(lse), finite) and \
        (lse[finite].double() - ref_lse[finite]).abs().max().item() <= 1e-3
    full = hidden.all(dim=-1) if hidden.dim() == 4 else hidden.all(dim=-1).expand(b, hq, m)
    if full.any():
        ok &= o[full].abs().max().item() == 0
        # With sinks such a row's LSE is its sink (checked against ref_lse).
        ok &= sinks is not None or bool(torch.isneginf(lse[full]).all())
    plain = window is None and bias is None and mask is None and sinks is None
    fa2 = sdpa_fa2(q, k, v, eff_scale, causal, None) if plain else None
    detail = f"O rel {err:.1e} (tol {tol:.0e})"
    if fa2 is not None:
        ours, theirs = rmse(o, ref), rmse(fa2[0], ref)
        ok &= ours <= 1.25 * theirs + 1e-12
        detail += f" rmse {ours:.2e} fa2 {theirs:.2e}"
    if grad:
        do = make((b, hq, m, dv), dtype, layout, g)
        o.backward(do)
        ref.backward(do.double())
        fa2g = sdpa_fa2(q, k, v, eff_scale, causal, do) if plain else None
        for i, (name_, ours_t, ref_t) in enumerate(
                (("dq", qs.grad, q64.grad), ("dk", ks.grad, k64.grad),
                 ("dv", vs.grad, v64.grad))):
            e = rel(ours_t, ref_t)
            ok &= not torch.isnan(ours_t).any() and e <= tol
            detail += f"; {name_} {e:.1e}"
            if fa2g is not None:
                ours, theirs = rmse(ours_t, ref_t), rmse(fa2g[1][i], ref_t)
                ok &= ours <= 1.25 * theirs + 1e-12
        if sinks is not None:
            e = rel(sinks.grad, sinks64.grad)
            ok &= not torch.isnan(sinks.grad).any() and e <= tol
            detail += f"; dsinks {e:.1e}"
    record(bool(ok), name, detail)


def check_matrix(quick):
    layouts = ("bhsd",) if quick else ("bhsd", "bshd", "offset")
    shapes = SHAPES[:2] if quick else SHAPES
    for dtype in (torch.bfloat16, torch.float16):
        for d in (64, 128):
            for causal in (False, True):
                for si, shape in enumerate(shapes):
                    for layout in layouts:
                        check_case(dtype, d, d, causal, shape, layout, seed=si)
    # Score operands and attributes (bf16, D = 64): bias [M, N] and
    # [B, 1, M, N], a mask with a fully masked row, window, scale, Dv != D.
    for shape in ((2, 4, 2, 77, 200), (1, 4, 4, 130, 130)):
        b, hq, hkv, m, n = shape
        check_case(torch.bfloat16, 64, 64, True, shape, "bhsd", 1, window=48)
        check_case(torch.bfloat16, 64, 64, False, shape, "bhsd", 2, scale=0.3)
        check_case(torch.bfloat16, 64, 64, False, shape, "bshd", 3,
                   bias_shape=(m, n))
        check_case(torch.bfloat16, 64, 64, False, shape, "bhsd", 4,
                   bias_shape=(b, 1, m, n))
        check_case(torch.bfloat16, 64, 64, False, shape, "bhsd", 5,
                   mask_shape=(b, 1, m, n))
        check_case(torch.float16, 64, 128, True, shape, "bhsd", 6)
        # Attention sinks (gpt-oss: bf16 parameters), with GQA, a window
        # and a fully masked row.
        check_case(torch.bfloat16, 64, 64, True, shape, "bshd", 8,
                   sinks_dtype=torch.bfloat16)
        check_case(torch.bfloat16, 64, 64, True, shape, "bhsd", 9, window=48,
                   sinks_dtype=torch.float32)
        check_case(torch.float16, 128, 128, False, shape, "bhsd", 10,
                   mask_shape=(b, 1, m, n), sinks_dtype=torch.float32)
    # Sinks where causal rows see no key (M > N): O = 0, LSE = the sink.
    check_case(torch.bfloat16, 64, 64, True, (2, 4, 4, 200, 77), "bhsd", 11,
               sinks_dtype=torch.bfloat16)
    # Decoding with grouped query heads: packed (the G heads of a KV head as
    # the rows of one) for M = 1 in either layout (under a window W, on the
    # last W + 1 keys) and M = 4 in [B, H, S, D]; not packed for M = 4 in
    # [B, S, H, D] or under a causal mask.
    for shape, causal, layout in (((4, 8, 2, 1, 1000), True, "bshd"),
                                  ((3, 8, 2, 1, 300), False, "bhsd"),
                                  ((2, 8, 2, 4, 300), False, "bhsd"),
                                  ((2, 8, 2, 4, 300), False, "bshd"),
                                  ((2, 8, 2, 4, 300), True, "bhsd")):
        check_case(torch.bfloat16, 128, 128, causal, shape, layout, 12)
    # (The forward only: packing is the forward's; a windowed backward is
    # the windowed family's.)
    check_case(torch.bfloat16, 128, 128, True, (4, 8, 2, 1, 1000), "bhsd", 14,
               window=100, grad=False)
    check_case(torch.bfloat16, 128, 128, False, (2, 8, 2, 1, 300), "bshd", 15,
               window=0, grad=False)
    g = torch.Generator(device="cuda").manual_seed(13)
    q = make((2, 8, 1, 128), torch.bfloat16, "bhsd", g)
    k = make((2, 2, 500, 128), torch.bfloat16, "bhsd", g)
    before = fm.launches.copy()
    o = fm.attention(q, k, k, causal=True)
    ran = fm.launches - before
    ref, _, _ = reference(q, k, k, 1 / math.sqrt(128), True, None)
    record(set(ran) == {"fm_bf16_d128_fwd"} and rel(o, ref) <= TOL[torch.bfloat16],
           "decode M = 1 causal GQA runs packed (the non-causal kernel)",
           f"{dict(ran)}, O rel {rel(o, ref):.1e}")
    # A window wider than the keys is no window (the plain kernels run).
    check_case(torch.bfloat16, 64, 64, True, (1, 2, 2, 100, 100), "bhsd", 7,
               window=1 << 40)


def expect_error(what, error, fn, report=None):
    """`fn` raises `error` and launches nothing (reported to `report`, by
    default this module's record)."""
    report = report or record
    launched = sum(fm.launches.values())
    try:
        fn()
    except error as e:
        ok = sum(fm.launches.values()) == launched
        report(ok, f"bad call rejected: {what}", f"{type(e).__name__}: {e}")
        return
    except Exception as e:  # noqa: BLE001
        report(False, f"bad call rejected: {what}",
               f"wrong error {type(e).__name__}: {e}")
        return
    report(False, f"bad call rejected: {what}", "no error")


def check_bad_calls():
    """The bad calls of the PyTorch issue (through the op and through the
    low-level Kernel), then a good call that must still be right."""
    from flash_mlir.kernels import Variant
    g = torch.Generator(device="cuda").manual_seed(0)
    bf = torch.bfloat16

    def r(*shape, dtype=bf, device="cuda"):
        return torch.randn(*shape, generator=g, device="cuda").to(dtype).to(device)

    q, k, v = r(2, 4, 256, 128), r(2, 4, 256, 128), r(2, 4, 256, 128)
    att = fm.attention
    expect_error("K head dim 64", ValueError, lambda: att(q, r(2, 4, 256, 64), v))
    expect_error("V head dim 72", ValueError, lambda: att(q, k, r(2, 4, 256, 72)))
    expect_error("Q float32", TypeError, lambda: att(q.float(), k, v))
    expect_error("K another batch", ValueError, lambda: att(q, r(3, 4, 256, 128), v))
    expect_error("3 KV heads for 4", ValueError,
                 lambda: att(q, r(2, 3, 256, 128), r(2, 3, 256, 128)))
    expect_error("V longer than K", ValueError, lambda: att(q, k, r(2, 4, 300, 128)))
    expect_error("CPU tensors", ValueError, lambda: att(q.cpu(), k.cpu(), v.cpu()))
    expect_error("rank 3", ValueError, lambda: att(q[0], k[0], v[0]))
    expect_error("bias not broadcastable", ValueError,
                 lambda: att(q, k, v, bias=r(256, 255, dtype=torch.float32)))
    expect_error("float mask", TypeError,
                 lambda: att(q, k, v, mask=r(256, 256, dtype=torch.float32)))
    expect_error("negative window", ValueError, lambda: att(q, k, v, window=-3))
    expect_error("NaN scale", ValueError, lambda: att(q, k, v, scale=float("nan")))
    expect_error("sinks per KV head", ValueError,
                 lambda: att(q, k, v, sinks=r(2, dtype=torch.float32)))
    expect_error("integer sinks", TypeError,
                 lambda: att(q, k, v, sinks=torch.zeros(4, dtype=torch.int32,
                                                         device="cuda")))
    # The low-level kernel: O of another dtype or half the rows.
    kern = fm.kernel_for(Variant.of("bf16", 128), "fwd", q.device)
    o = torch.empty_like(q)
    expect_error("Kernel: O float16", TypeError,
                 lambda: kern(q=q, k=k, v=v, o=o.half()))
    expect_error("Kernel: O half the rows", ValueError,
                 lambda: kern(q=q, k=k, v=v, o=o[:, :, :128]))
    expect_error("Kernel: K head dim 64", ValueError,
                 lambda: kern(q=q, k=r(2, 4, 256, 64), v=v, o=o))
    expect_error("Kernel: missing O", ValueError, lambda: kern(q=q, k=k, v=v))
    expect_error("Kernel: CPU tensors", ValueError,
                 lambda: kern(q=q.cpu(), k=k.cpu(), v=v.cpu(), o=o.cpu()))
    torch.cuda.synchronize()
    # Still healthy: a good call is right.
    ref, _, _ = reference(q, k, v, 1 / math.sqrt(128), False, None)
    err = rel(att(q, k, v), ref)
    kern(q=q, k=k, v=v, o=o)
    err2 = rel(o, ref)
    record(err <= TOL[bf] and err2 <= TOL[bf], "good calls after the bad ones",
           f"op {err:.1e}, kernel {err2:.1e}")


def check_compile():
    """torch.compile(fullgraph=True) traces the op (no graph break), and the
    compiled function equals eager, forward and backward."""
    torch._dynamo.reset()
    g = torch.Generator(device="cuda").manual_seed(3)

    def block(x, wq, wk, wv, causal):
        b, s, _ = x.shape
        q = (x @ wq).view(b, s, 4, 64).transpose(1, 2)
        k = (x @ wk).view(b, s, 2, 64).transpose(1, 2)
        v = (x @ wv).view(b, s, 2, 64).transpose(1, 2)
        o = fm.attention(q, k, v, causal=causal)
        return o.transpose(1, 2).reshape(b, s, 256).float().square().mean()

    x = torch.randn(2, 300, 256, device="cuda", generator=g).bfloat16()
    ws = [(torch.randn(256, n, device="cuda", generator=g) * 0.05).bfloat16()
          .requires_grad_() for n in (256, 128, 128)]
    for causal in (False, True):
        eager = block(x, *ws, causal)
        eager_grads = torch.autograd.grad(eager, ws)
        compiled = torch.compile(block, fullgraph=True)
        before = sum(fm.launches.values())
        try:
            got = compiled(x, *ws, causal)
            got_grads = torch.autograd.grad(got, ws)
        except Exception:  # noqa: BLE001
            record(False, f"torch.compile fullgraph (causal={causal})",
                   traceback.format_exc(limit=3))
            continue
        ran = sum(fm.launches.values()) - before
        errs = [rel(a, b_.double()) for a, b_ in zip(got_grads, eager_grads)]
        err = abs(got.item() - eager.item()) / abs(eager.item())
        record(err < 1e-2 and max(errs) < 2e-2 and ran >= 2,
               f"torch.compile fullgraph (causal={causal})",
               f"loss rel {err:.1e}, grads rel {max(errs):.1e}, {ran} launches")


def compiled_vs_eager(fn, args, inputs, g, compiled=None):
    """`fn(*args)` under torch.compile(backend="flash_mlir", fullgraph=True)
    (or `compiled(*args)`) against eager, forward and the gradients of
    `inputs`: (relative error of O, worst of the gradients, our launches,
    the compiled gradients)."""
    eager = fn(*args)
    do = torch.randn(eager.shape, device="cuda", generator=g).bfloat16()
    eager_grads = torch.autograd.grad(eager, inputs, do)
    before = sum(fm.launches.values())
    compiled = compiled or torch.compile(fn, backend="flash_mlir", fullgraph=True)
    got = compiled(*args)
    grads = torch.autograd.grad(got, inputs, do)
    ran = sum(fm.launches.values()) - before
    gerr = max(rel(a, b.double()) for a, b in zip(grads, eager_grads))
    return rel(got, eager.double()), gerr, ran, grads, do


def check_route():
    """torch.compile(backend="flash_mlir") on hand-written attention (the
    GPT-style block of flash_mlir.train_bench): the compiler's matcher finds
    it, our kernels run forward and backward, and the numbers equal eager;
    attention whose probabilities are also returned is left alone, with the
    reason."""
    import flash_mlir.compile as fc
    from flash_mlir.train_bench import handwritten_attention
    g = torch.Generator(device="cuda").manual_seed(5)

    def make(*shape):
        return (torch.randn(*shape, device="cuda", generator=g) * 0.5) \
            .bfloat16().requires_grad_()

    for causal in (True, False):
        torch._dynamo.reset()
        q, k, v = make(2, 4, 256, 64), make(2, 4, 256, 64), make(2, 4, 256, 64)

        def fn(q, k, v):
            return handwritten_attention(q, k, v, causal)

        del fc.reports[:]
        try:
            err, gerr, ran, _, do = compiled_vs_eager(fn, (q, k, v), (q, k, v), g)
        except Exception:  # noqa: BLE001
            record(False, f"compile route: hand-written causal={causal}",
                   traceback.format_exc(limit=4))
            continue
        fused = [r for r in fc.reports if r["fused"]]
        # Our kernels in a profile of the compiled step.
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            out = torch.compile(fn, backend="flash_mlir", fullgraph=True)(q, k, v)
            torch.autograd.grad(out, (q, k, v), do)
            torch.cuda.synchronize()
        ours = sorted({e.name for e in prof.events() if e.name.startswith("fm_")})
        record(err < 1.6e-2 and gerr < 3e-2 and ran >= 2 and len(fused) == 1
               and fused[0]["causal"] == causal and len(ours) >= 2,
               f"compile route: hand-written causal={causal}",
               f"O rel {err:.1e}, grads rel {gerr:.1e}, {ran} launches, "
               f"profiled kernels {ours}, reports {fc.reports}")
    # Dynamic sizes: a second batch and sequence length makes torch.compile
    # retrace with symbolic batch and sequence (automatic dynamic shapes;
    # M = N = one symbol); the compiler proves the tril mask causal from the
    # symbols, and every later size runs on the same graph and our kernels.
    torch._dynamo.reset()
    del fc.reports[:]

    def causal_fn(q, k, v):
        return handwritten_attention(q, k, v, True)

    compiled = torch.compile(causal_fn, backend="flash_mlir", fullgraph=True)
    results = []
    try:
        for b, s in ((2, 256), (3, 320), (4, 200)):  # B = 1 would specialise
            q, k, v = make(b, 4, s, 64), make(b, 4, s, 64), make(b, 4, s, 64)
            err, gerr, ran, _, _ = compiled_vs_eager(causal_fn, (q, k, v), (q, k, v),
                                                     g, compiled)
            results.append((b, s, err, gerr, ran))
        fused = [r for r in fc.reports if r["fused"]]
        record(all(e < 1.6e-2 and ge < 3e-2 and r >= 2 for _, _, e, ge, r in results)
               and len(fused) == 2 and all(r["causal"] for r in fused)
               and len(fc.reports) == 2,
               "compile route: dynamic batch and sequence (static, then one "
               "dynamic graph)",
               f"(B, S, O rel, grads rel, launches) {results}, reports {fc.reports}")
    except Exception:  # noqa: BLE001
        record(False, "compile route: dynamic batch and sequence",
               traceback.format_exc(limit=4))

    # bmm-style attention on [B*H, S, D] (Megatron, older GPT-2 code).
    torch._dynamo.reset()
    del fc.reports[:]

    def bmm_style(q, k, v):
        w = torch.bmm(q, k.transpose(1, 2)) * 0.125
        return torch.bmm(torch.softmax(w, dim=-1), v)

    q, k, v = make(6, 192, 64), make(6, 224, 64), make(6, 224, 64)
    try:
        err, gerr, ran, grads, _ = compiled_vs_eager(bmm_style, (q, k, v), (q, k, v), g)
        fused = [r for r in fc.reports if r["fused"]]
        record(err < 1.6e-2 and gerr < 3e-2 and ran >= 2 and len(fused) == 1
               and tuple(grads[1].shape) == (6, 224, 64),
               "compile route: bmm on [B*H, S, D]",
               f"O rel {err:.1e}, grads rel {gerr:.1e}, {ran} launches, reports {fc.reports}")
    except Exception:  # noqa: BLE001
        record(False, "compile route: bmm on [B*H, S, D]", traceback.format_exc(limit=4))

    # Llama-style grouped-query attention (transformers' eager attention:
    # repeat_kv, "* scaling", an additive mask, softmax(dtype=float32),
    # dropout(p=0)), with a float32 additive mask and with a causal tril.
    def repeat_kv(x, n_rep):
        b, h, s, d = x.shape
        return x[:, :, None, :, :].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)

    def llama(q, k, v, mask):
        key, value = repeat_kv(k, 4), repeat_kv(v, 4)
        w = torch.matmul(q, key.transpose(2, 3)) * 0.125
        if mask is None:
            n = w.shape[-1]
            keep = torch.tril(torch.ones(n, n, dtype=torch.bool, device=w.device))
            w = w.masked_fill(~keep, float("-inf"))
        else:
            w = w + mask
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        w = F.dropout(w, p=0.0, training=True)
        return torch.matmul(w, value)

    for masked in (False, True):
        torch._dynamo.reset()
        del fc.reports[:]
        q, k, v = make(2, 8, 160, 64), make(2, 2, 160, 64), make(2, 2, 160, 64)
        mask = None
        if masked:
            mask = torch.zeros(2, 1, 160, 160, device="cuda")
            mask.masked_fill_(torch.rand(2, 1, 160, 160, device="cuda", generator=g) < 0.2,
                              float("-inf"))
            mask[..., 0] = 0.0  # no fully masked row: eager softmax would be NaN
        try:
            err, gerr, ran, grads, _ = compiled_vs_eager(llama, (q, k, v, mask),
                                                         (q, k, v), g)
        except Exception:  # noqa: BLE001
            record(False, f"compile route: Llama GQA mask={masked}",
                   traceback.format_exc(limit=4))
            continue
        fused = [r for r in fc.reports if r["fused"]]
        record(err < 1.6e-2 and gerr < 3e-2 and ran >= 2 and len(fused) == 1
               and tuple(grads[1].shape) == (2, 2, 160, 64),
               f"compile route: Llama GQA (repeat_kv) {'additive mask' if masked else 'causal'}",
               f"O rel {err:.1e}, grads rel {gerr:.1e}, {ran} launches, reports {fc.reports}")

    torch._dynamo.reset()
    del fc.reports[:]
    q, k, v = make(1, 2, 128, 64), make(1, 2, 128, 64), make(1, 2, 128, 64)

    def probs_too(q, k, v):
        p = torch.softmax(q @ k.transpose(-1, -2) / 8.0, dim=-1)
        return p @ v, p

    before = sum(fm.launches.values())
    o, p = torch.compile(probs_too, backend="flash_mlir")(q, k, v)
    reasons = [r.get("reason", "") for r in fc.reports]
    record(sum(fm.launches.values()) == before and any("outside" in r for r in reasons),
           "compile route: leaves attention whose probabilities are used", str(reasons))


def check_deterministic():
    """The backward's form: the atomic kernel (dQ by f32 atomics) by default
    for a plain dense call, the deterministic pair under
    torch.use_deterministic_algorithms (whose gradients are then bitwise the
    same run to run) and for a causal call over few keys
    (kernels.backward_variant); each against a float64 reference."""
    g = torch.Generator(device="cuda").manual_seed(9)
    shape = (2, 4, 333, 128)
    q, k, v, do = (torch.randn(*shape, device="cuda", generator=g)
                   .bfloat16() for _ in range(4))

    def grads(causal):
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        before = dict(fm.launches)
        fm.attention(*leaves, causal=causal).backward(do)
        ran = {n for n, c in fm.launches.items() if c > before.get(n, 0)}
        return [t.grad for t in leaves], ran

    def worst(got, causal):
        *_, ref = reference_grads(q, k, v, do, 1 / math.sqrt(shape[-1]),
                                  causal=causal, window=None)
        return max(((a.double() - r).norm() / r.norm()).item()
                   for a, r in zip(got, ref))

    def pair(ran):
        return any(n.endswith("_train_backward") and "_atomic" not in n
                   for n in ran)

    atomic, ran_atomic = grads(causal=False)
    short_causal, ran_causal = grads(causal=True)
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        first, ran_first = grads(causal=False)
        second, _ = grads(causal=False)
    finally:
        torch.use_deterministic_algorithms(previous)
    record(any(n.endswith("_atomic_train_backward") for n in ran_atomic),
           "backward: the atomic kernel by default", str(sorted(ran_atomic)))
    record(pair(ran_causal), "backward: the pair for causal over few keys",
           str(sorted(ran_causal)))
    record(pair(ran_first),
           "backward: the deterministic pair under use_deterministic_algorithms",
           str(sorted(ran_first)))
    record(all(torch.equal(a, b) for a, b in zip(first, second)),
           "backward: deterministic gradients bitwise equal run to run")
    errs = (worst(atomic, False), worst(first, False), worst(short_causal, True))
    record(max(errs) < 1.6e-2, "backward: each form against float64",
           "relative errors atomic {:.1e}, deterministic {:.1e}, "
           "causal {:.1e}".format(*errs))

    # Packed sequences without a causal mask take the atomic kernel too;
    # each sequence's gradients against its own float64 reference.
    lengths = [130, 7, 300]
    heads, d = 4, 128
    total = sum(lengths)
    cu = torch.tensor([0] + list(itertools.accumulate(lengths)),
                      device="cuda", dtype=torch.int32)
    pq, pk, pv, pdo = (torch.randn(total, heads, d, device="cuda", generator=g)
                       .bfloat16() for _ in range(4))
    leaves = [t.clone().requires_grad_() for t in (pq, pk, pv)]
    before = dict(fm.launches)
    fm.varlen_attention(*leaves, cu, cu, max(lengths), max(lengths)) \
        .backward(pdo)
    ran = {n for n, c in fm.launches.items() if c > before.get(n, 0)}
    err = 0.0
    for s_, e_ in zip(cu[:-1].tolist(), cu[1:].tolist()):
        def seq(t):
            return t[s_:e_].transpose(0, 1).unsqueeze(0)
        *_, ref = reference_grads(seq(pq), seq(pk), seq(pv), seq(pdo),
                                  1 / math.sqrt(d), causal=False, window=None)
        for a, r in zip(leaves, ref):
            err = max(err, ((seq(a.grad).double() - r).norm() /
                            r.norm()).item())
    record(any(n.endswith("_varlen_atomic_train_backward") for n in ran)
           and err < 1.6e-2,
           "backward: packed sequences, the atomic kernel against float64",
           f"{sorted(ran)}, relative error {err:.1e}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only",
                   default="matrix,bad,deterministic,compile,sdpa,route,serving")
    args = p.parse_args(argv)
    parts = args.only.split(",")
    if "matrix" in parts:
        check_matrix(args.quick)
    if "bad" in parts:
        check_bad_calls()
    if "deterministic" in parts:
        check_deterministic()
    if "compile" in parts:
        check_compile()
    if "route" in parts:
        check_route()
    if "serving" in parts:
        from flash_mlir import torch_serving_check
        torch_serving_check.run(record)
    if "sdpa" in parts:
        # Activation as the first thing a process does (torch settles its
        # SDPA priority order at the first call), then after all the above.
        fresh = subprocess.run([sys.executable, "-m", "flash_mlir.sdpa_check"],
                               capture_output=True, text=True)
        print(fresh.stdout, end="")
        record(fresh.returncode == 0, "SDPA checks in a fresh process",
               fresh.stderr[-2000:] if fresh.returncode else "")
        try:
            from flash_mlir import sdpa_check
            sdpa_check.run(record)
        except ImportError as e:
            record(False, "SDPA registration", str(e))
    print("kernels launched:", dict(fm.launches))
    print(f"torch_check: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
