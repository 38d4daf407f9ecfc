"""Checks the PyTorch op's serving calls on a GPU (flash_mlir.torch):

    python -m flash_mlir.torch_serving_check [-v]

- varlen_attention (packed sequences, FlashAttention's
  flash_attn_varlen_func) forward and backward against float64 references
  and autograd computed sequence by sequence: ragged and empty sequences,
  GQA, causal (bottom-right per sequence), window, sinks, rows past the last
  sequence; varlen_attn (PyTorch's signature); torch.compile(fullgraph=True);
- attention_with_kvcache (FlashAttention's flash_attn_with_kvcache) against
  float64 references over each sequence's cached keys: contiguous and paged
  caches (pages of 16, 64 and 128 behind a shuffled block table), new keys
  appended in place, M = 1 and a chunk of M > 1, GQA (the packed decode),
  split-KV (long caches, batch 1), causal, window, sinks (folded in after
  a packed decode), NaN in the cache past each sequence's keys;
- softcap through attention, varlen_attention and a paged decode;
- bad calls: each must raise TypeError/ValueError before any launch.

Called by flash_mlir.torch_check (part `serving`). Exit status 1 on any
failure.
"""

import argparse
import math
import sys

import torch

from flash_mlir import torch as fm
from flash_mlir.check import reference
from flash_mlir.torch_check import expect_error

TOL = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


class Report:
    def __init__(self, record=None):
        self.failures = []
        self._record = record

    def __call__(self, ok, what, detail=""):
        if self._record is not None:
            self._record(ok, what, detail)
            return
        if not ok:
            self.failures.append(what)
        print(("ok   " if ok else "FAIL ") + what + (f": {detail}" if detail else ""))


def rel(a, b):
    return ((a.double() - b).norm() / b.norm().clamp_min(1e-30)).item()


def _offsets(lengths, device="cuda"):
    return torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)),
                        dtype=torch.int32, device=device)


def varlen_reference(q, k, v, queries, keys, scale, causal, window,
                     sinks=None, do=None, softcap=None):
    """float64 O [Tq, Hq, Dv], LSE [Hq, Tq] and, with `do`, the gradients
    of packed sequences, one sequence at a time (rows in no sequence: O = 0,
    LSE = -inf or the sink, gradients 0)."""
    tq, hq = q.shape[:2]
    o = torch.zeros(tq, hq, v.shape[2], dtype=torch.float64, device=q.device)
    lse = torch.full((hq, tq), -math.inf, dtype=torch.float64, device=q.device)
    if sinks is not None:
        lse[:] = sinks.double()[:, None]
    grads = [torch.zeros(t.shape, dtype=torch.float64, device=q.device)
             for t in (q, k, v)] + [torch.zeros(hq, dtype=torch.float64,
                                                device=q.device)]
    q0 = k0 = 0
    for mq, nk in zip(queries, keys):
        if mq and nk:
            parts = [t[a:a + n].transpose(0, 1)[None].double().requires_grad_()
                     for t, a, n in ((q, q0, mq), (k, k0, nk), (v, k0, nk))]
            s64 = None if sinks is None else sinks.double().requires_grad_()
            o_s, lse_s, _ = reference(*parts, scale, causal, window, sinks=s64,
                                      softcap=softcap)
            o[q0:q0 + mq] = o_s[0].transpose(0, 1).detach()
            lse[:, q0:q0 + mq] = lse_s[0].detach()
            if do is not None:
                o_s.backward(do[q0:q0 + mq].transpose(0, 1)[None].double())
                for grad, part, a, n in zip(grads, parts, (q0, k0, k0),
                                            (mq, nk, nk)):
                    grad[a:a + n] = part.grad[0].transpose(0, 1)
                if s64 is not None:
                    grads[3] += s64.grad
        q0, k0 = q0 + mq, k0 + nk
    return o, lse, grads


# (Hq, Hkv, D, query lengths, key lengths, extra rows past the last)
VARLEN_CASES = [
    (4, 4, 64, [5, 0, 130, 1, 77], [7, 3, 0, 200, 77], 0),
    (8, 2, 128, [300, 64, 1000], [300, 1500, 1000], 0),
    (4, 1, 128, [129, 17], [129, 255], 5),
]


def check_varlen(report, dtype=torch.bfloat16):
    for ci, (hq, hkv, d, queries, keys, extra) in enumerate(VARLEN_CASES):
        for causal, window, with_sinks in ((False, None, False),
                                           (True, None, False),
                                           (True, 48, True)):
            g = torch.Generator(device="cuda").manual_seed(ci)
            tq, tk = sum(queries) + extra, sum(keys) + extra

            def randn(*shape):
                return torch.randn(*shape, generator=g, device="cuda").to(dtype)

            q, k, v = randn(tq, hq, d), randn(tk, hkv, d), randn(tk, hkv, d)
            do = randn(tq, hq, d)
            sinks = (torch.randn(hq, generator=g, device="cuda") + 1) \
                if with_sinks else None
            cq, ck = _offsets(queries), _offsets(keys)
            max_q, max_k = max(queries + [extra]), max(keys + [extra])
            scale = 1 / math.sqrt(d)
            o_ref, lse_ref, grads_ref = varlen_reference(
                q, k, v, queries, keys, scale, causal, window, sinks, do)
            leaves = [t.clone().requires_grad_() for t in (q, k, v)]
            s_leaf = None if sinks is None else sinks.clone().requires_grad_()
            what = (f"varlen {dtype} Hq {hq} Hkv {hkv} D {d} q {queries} "
                    f"k {keys} +{extra} causal {causal} window {window} "
                    f"sinks {with_sinks}")
            try:
                o, lse = fm.varlen_attention(
                    *leaves, cq, ck, max_q, max_k, causal=causal,
                    window=window, sinks=s_leaf, return_lse=True)
                o.backward(do)
            except Exception as e:  # noqa: BLE001
                report(False, what, f"{type(e).__name__}: {e}")
                continue
            torch.cuda.synchronize()
            finite = torch.isfinite(lse_ref)
            lse_ok = torch.equal(torch.isfinite(lse), finite) and (
                not finite.any() or
                (lse[finite].double() - lse_ref[finite]).abs().max() < 1e-3)
            errs = [rel(o, o_ref)] + [rel(t.grad, r) for t, r in
                                       zip(leaves, grads_ref[:3])]
            names = ["O", "dQ", "dK", "dV"]
            if s_leaf is not None:
                errs.append(rel(s_leaf.grad, grads_ref[3]))
                names.append("d sinks")
            tol = TOL[dtype]
            # Gradients of what no sequence holds are exactly 0.
            stray = max(leaf.grad[rows].abs().max().item() if rows.numel() else 0
                        for leaf, rows in ((leaves[0], torch.arange(sum(queries), tq)),
                                           (leaves[1], torch.arange(sum(keys), tk))))
            ok = lse_ok and all(e <= tol for e in errs) and stray == 0 and \
                not torch.isnan(o).any()
            report(ok, what, ", ".join(f"{n} {e:.1e}" for n, e in zip(names, errs))
                   + ("" if lse_ok else ", LSE differs")
                   + (f", {stray:.1e} in padding gradients" if stray else ""))
    # PyTorch's signature, and torch.compile of a call.
    g = torch.Generator(device="cuda").manual_seed(9)
    q = torch.randn(200, 4, 64, generator=g, device="cuda").to(dtype)
    cq = _offsets([120, 80])

    class Aux:
        lse = True
    o, lse = fm.varlen_attn(q, q, q, cq, cq, 120, 120, window_size=(-1, 0),
                            return_aux=Aux())
    ref, lse_ref, _ = varlen_reference(q, q, q, [120, 80], [120, 80],
                                       1 / 8, True, None)
    report(rel(o, ref) <= TOL[dtype] and tuple(lse.shape) == (4, 200),
           "varlen_attn (PyTorch's signature), window_size (-1, 0)",
           f"O {rel(o, ref):.1e}")
    torch._dynamo.reset()

    def step(q):
        return fm.varlen_attention(q, q, q, cq, cq, 120, 120, causal=True).float().sum()
    leaf = q.clone().requires_grad_()
    compiled = torch.compile(step, fullgraph=True)
    try:
        before = sum(fm.launches.values())
        compiled(leaf).backward()
        ran = sum(fm.launches.values()) - before
        eager = q.clone().requires_grad_()
        step(eager).backward()
        # Q is also K and V: its gradient is dQ + dK + dV, which the
        # compiled graph may add in another order (a few units in the last
        # place), so not bitwise.
        err = rel(leaf.grad, eager.grad)
        report(err <= 1e-3 and ran >= 2,
               "varlen_attention under torch.compile(fullgraph=True)",
               f"grad rel {err:.1e} to eager, {ran} launches")
    except Exception as e:  # noqa: BLE001
        report(False, "varlen_attention under torch.compile(fullgraph=True)",
               f"{type(e).__name__}: {e}")


# (B, Hq, Hkv, D, M, cache capacity N, new keys Mk, page size or 0)
KVCACHE_CASES = [
    (4, 8, 2, 128, 1, 300, 0, 0),
    (3, 8, 2, 128, 1, 1024, 1, 64),
    (2, 4, 4, 64, 5, 1008, 5, 16),
    (1, 32, 8, 128, 1, 32768, 1, 128),   # split-KV with packed heads
    (1, 8, 8, 128, 1, 16384, 0, 64),     # split-KV
    (64, 32, 8, 128, 1, 4096, 0, 0),     # the split kernel at one run
]


def check_kvcache(report, dtype=torch.bfloat16):
    for ci, (b, hq, hkv, d, m, n, mk, page) in enumerate(KVCACHE_CASES):
        for causal, window, with_sinks in ((True, None, False),
                                           (False, None, False),
                                           (True, None, True),
                                           (True, 100, True)):
            g = torch.Generator(device="cuda").manual_seed(ci)

            def randn(*shape):
                return torch.randn(*shape, generator=g, device="cuda").to(dtype)

            q = randn(b, m, hq, d)
            lengths = torch.randint(0, n - mk + 1, (b,), generator=g,
                                    device="cuda")
            lengths[0] = n - mk
            if b > 1:
                lengths[1] = 0
            k_dense, v_dense = randn(b, n, hkv, d), randn(b, n, hkv, d)
            k_new = randn(b, mk, hkv, d) if mk else None
            v_new = randn(b, mk, hkv, d) if mk else None
            for i in range(b):  # stale cache past each sequence: never read
                k_dense[i, lengths[i]:] = float("nan")
                v_dense[i, lengths[i]:] = float("nan")
            table = None
            if page:
                per = n // page
                pool = b * per + 3
                table = torch.randperm(pool, generator=g, device="cuda")[:b * per]
                table = table.view(b, per).to(torch.int32)
                k_cache = torch.full((pool, page, hkv, d), float("nan"),
                                     dtype=dtype, device="cuda")
                v_cache = k_cache.clone()
                for i in range(b):
                    for s in range(per):
                        k_cache[table[i, s]] = k_dense[i, s * page:(s + 1) * page]
                        v_cache[table[i, s]] = v_dense[i, s * page:(s + 1) * page]
            else:
                k_cache, v_cache = k_dense.clone(), v_dense.clone()
            sinks = (torch.randn(hq, generator=g, device="cuda") + 1) \
                if with_sinks else None
            what = (f"kvcache {dtype} B {b} Hq {hq} Hkv {hkv} D {d} M {m} N {n} "
                    f"+{mk} page {page} causal {causal} window {window} "
                    f"sinks {with_sinks}")
            launched = dict(fm.launches)
            try:
                o, lse = fm.attention_with_kvcache(
                    q, k_cache, v_cache, lengths.to(torch.int32), k_new, v_new,
                    block_table=table, causal=causal, window=window,
                    sinks=sinks, return_lse=True)
            except Exception as e:  # noqa: BLE001
                report(False, what, f"{type(e).__name__}: {e}")
                continue
            torch.cuda.synchronize()
            ran = [name for name in fm.launches
                   if fm.launches[name] != launched.get(name, 0)]
            # The reference over each sequence's keys, the new ones appended.
            ok, errs = True, []
            total = lengths + mk
            for i in range(b):
                keys = int(total[i])
                kk, vv = k_dense[i].clone(), v_dense[i].clone()
                if mk:
                    kk[int(lengths[i]):keys] = k_new[i]
                    vv[int(lengths[i]):keys] = v_new[i]
                    # The cache now holds them.
                    got = k_cache[table[i].long()].flatten(0, 1) if page \
                        else k_cache[i]
                    ok &= torch.equal(got[int(lengths[i]):keys], k_new[i])
                ref, ref_lse, _ = reference(
                    q[i].transpose(0, 1)[None], kk[:keys].transpose(0, 1)[None],
                    vv[:keys].transpose(0, 1)[None], 1 / math.sqrt(d), causal,
                    window, sinks=sinks)
                ours = o[i].transpose(0, 1)[None]
                if torch.isnan(ours).any():
                    ok = False
                    errs.append("NaN")
                    continue
                if ref.norm() > 0:
                    e = rel(ours, ref)
                    errs.append(f"{e:.1e}")
                    ok &= e <= TOL[dtype]
                else:
                    ok &= ours.abs().max().item() == 0
                finite = torch.isfinite(ref_lse)
                ok &= torch.equal(torch.isfinite(lse[i][None]), finite)
                if finite.any():
                    ok &= (lse[i][None][finite].double()
                           - ref_lse[finite]).abs().max().item() < 1e-3
            report(ok, what, " ".join(errs) + f" [{', '.join(ran)}]")


SOFTCAP = 30.0


def check_softcap(report, dtype=torch.bfloat16):
    """Softcapping (c tanh(s / c)) through each call: the dense op forward
    and backward, packed sequences forward and backward, a paged decode."""
    g = torch.Generator(device="cuda").manual_seed(11)

    def randn(*shape):
        # Scores of a few units, where the cap bends them.
        return (torch.randn(*shape, generator=g, device="cuda") * 2).to(dtype)

    scale = 1 / math.sqrt(128)
    q, k, v, do = (randn(2, 4, 300, 128) for _ in range(4))
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    fm.attention(*leaves, causal=True, softcap=SOFTCAP).backward(do)
    refs = [t.double().requires_grad_() for t in (q, k, v)]
    ref, _, _ = reference(*refs, scale, True, None, softcap=SOFTCAP)
    ref.backward(do.double())
    with torch.no_grad():
        o = fm.attention(q, k, v, causal=True, softcap=SOFTCAP)
    errs = [rel(o, ref.detach())] + [rel(a.grad, b.grad) for a, b in zip(leaves, refs)]
    report(all(e <= TOL[dtype] for e in errs), "softcap: attention fwd+bwd",
           ", ".join(f"{e:.1e}" for e in errs))
    queries, keys = [300, 64, 1000], [300, 1500, 1000]
    q, k, v, do = randn(1364, 8, 128), randn(2800, 2, 128), randn(2800, 2, 128), \
        randn(1364, 8, 128)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    o = fm.varlen_attention(*leaves, _offsets(queries), _offsets(keys), 1000,
                            1500, causal=True, softcap=SOFTCAP)
    o.backward(do)
    o_ref, _, grads = varlen_reference(q, k, v, queries, keys, scale, True,
                                       None, do=do, softcap=SOFTCAP)
    errs = [rel(o, o_ref)] + [rel(a.grad, b) for a, b in zip(leaves, grads)]
    report(all(e <= TOL[dtype] for e in errs), "softcap: varlen_attention fwd+bwd",
           ", ".join(f"{e:.1e}" for e in errs))
    b, page, per = 3, 64, 16
    q = randn(b, 1, 8, 128)
    k_cache, v_cache = randn(b * per, page, 2, 128), randn(b * per, page, 2, 128)
    table = torch.randperm(b * per, generator=g, device="cuda").view(b, per).int()
    lengths = torch.tensor([1024, 1, 700], dtype=torch.int32, device="cuda")
    o = fm.attention_with_kvcache(q, k_cache, v_cache, lengths,
                                  block_table=table, softcap=SOFTCAP)
    errs = []
    for i in range(b):
        n = int(lengths[i])
        keys = k_cache[table[i].long()].flatten(0, 1)[:n].transpose(0, 1)[None]
        vals = v_cache[table[i].long()].flatten(0, 1)[:n].transpose(0, 1)[None]
        ref, _, _ = reference(q[i].transpose(0, 1)[None], keys, vals, scale,
                              False, None, softcap=SOFTCAP)
        errs.append(rel(o[i].transpose(0, 1)[None], ref))
    report(all(e <= TOL[dtype] for e in errs), "softcap: paged decode",
           ", ".join(f"{e:.1e}" for e in errs))


def check_packed_sinks(report, dtype=torch.bfloat16):
    """A dense decode with sinks and grouped query heads: packed, the sinks
    folded into O and the LSE after the kernel (torch.fold_sinks)."""
    g = torch.Generator(device="cuda").manual_seed(12)
    q = torch.randn(2, 8, 1, 128, generator=g, device="cuda").to(dtype)
    k, v = (torch.randn(2, 2, 3000, 128, generator=g, device="cuda").to(dtype)
            for _ in range(2))
    sinks = torch.randn(8, generator=g, device="cuda") * 3
    launched = dict(fm.launches)
    o, lse = fm.attention(q, k, v, causal=True, sinks=sinks, return_lse=True)
    ran = [n for n in fm.launches if fm.launches[n] != launched.get(n, 0)]
    ref, ref_lse, _ = reference(q, k, v, 1 / math.sqrt(128), True, None,
                                sinks=sinks)
    err = rel(o, ref)
    lse_err = (lse.double() - ref_lse).abs().max().item()
    report(err <= TOL[dtype] and lse_err < 1e-3 and
           not any("sinks" in n for n in ran),
           "attention: GQA decode with sinks, packed and folded",
           f"O {err:.1e}, LSE {lse_err:.1e} [{', '.join(ran)}]")


def check_bad_calls(report):
    g = torch.Generator(device="cuda").manual_seed(0)
    bf = torch.bfloat16

    def r(*shape, dtype=bf):
        return torch.randn(*shape, generator=g, device="cuda").to(dtype)

    def expect(what, error, fn):
        expect_error(what, error, fn, report)

    q, k = r(100, 4, 64), r(120, 2, 64)
    cu = _offsets([60, 40])
    cuk = _offsets([60, 60])
    expect("varlen: int64 offsets", TypeError, lambda: fm.varlen_attention(
        q, k, k, cu.long(), cuk, 60, 60))
    expect("varlen: offsets on the CPU", ValueError, lambda: fm.varlen_attention(
        q, k, k, cu.cpu(), cuk, 60, 60))
    expect("varlen: rank-4 Q", ValueError, lambda: fm.varlen_attention(
        q[None], k, k, cu, cuk, 60, 60))
    expect("varlen: negative max_seqlen_q", ValueError, lambda: fm.varlen_attention(
        q, k, k, cu, cuk, -1, 60))
    expect("varlen: softcap 0", ValueError, lambda: fm.varlen_attention(
        q, k, k, cu, cuk, 60, 60, softcap=0.0))
    expect("varlen_attn: right window 5", ValueError, lambda: fm.varlen_attn(
        q, k, k, cu, cuk, 60, 60, window_size=(-1, 5)))
    qc, cache = r(2, 1, 8, 128), r(2, 512, 2, 128)
    lengths = torch.tensor([10, 20], dtype=torch.int32, device="cuda")
    expect("kvcache: int64 lengths", TypeError, lambda: fm.attention_with_kvcache(
        qc, cache, cache, lengths.long()))
    expect("kvcache: pages of 24", ValueError, lambda: fm.attention_with_kvcache(
        qc, r(10, 24, 2, 128), r(10, 24, 2, 128), lengths,
        block_table=torch.zeros(2, 4, dtype=torch.int32, device="cuda")))
    expect("kvcache: k without v", ValueError, lambda: fm.attention_with_kvcache(
        qc, cache, cache, lengths, r(2, 1, 2, 128)))
    expect("kvcache: more new keys than the cache holds", ValueError,
           lambda: fm.attention_with_kvcache(qc, cache, cache, lengths,
                                             r(2, 513, 2, 128), r(2, 513, 2, 128)))


def run(record=None):
    report = Report(record)
    check_bad_calls(report)
    check_varlen(report)
    check_varlen(report, torch.float16)
    check_kvcache(report)
    check_softcap(report)
    check_packed_sinks(report)
    return report


def main(argv=None):
    argparse.ArgumentParser(description=__doc__).parse_args(argv)
    report = run()
    print("kernels launched:", dict(fm.launches))
    print(f"torch_serving_check: {len(report.failures)} failed")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
