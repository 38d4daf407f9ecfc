"""Checks flash-compile's KV-cache and packed-sequence kernels on a GPU.

    python -m flash_mlir.serving_check DIR [--kernels a,b] [-v]

For every forward kernel in DIR that takes `key_lengths` (a ragged KV
cache, with `block_table` a paged one) or `cu_seqlens_q`/`cu_seqlens_k`
(packed variable-length sequences), runs cases with edge lengths (0, the
whole cache, 1, random; empty sequences) into NaN-poisoned outputs, with
what the kernel must never read poisoned too (cache rows past each length,
unused pages, table entries past each sequence's last page, rows past the
last packed sequence), and compares O (and the LSE) with a float64 reference
computed sequence by sequence (flash_mlir.check's). Split-KV kernels run with
their own count of runs and with 1, 3 and 9. Backward kernels of packed
sequences run on the reference's O and LSE and are compared with float64
autograd per sequence (dQ, dK and dV; 0 where a row or key sees nothing).
Exit status 1 on any failure.
"""

import argparse
import sys

import torch

from flash_mlir.check import (DTYPES, SPLITS, TOLERANCE, print_kernel,
                              reference, reference_grads)
from flash_mlir.runtime import load_all
from flash_mlir.validate import manifest_params

# (B, Hq, Hkv, M, N): M query rows against caches of up to N keys.
CACHE_CASES = [(4, 8, 2, 1, 300), (3, 4, 4, 5, 1000), (5, 8, 1, 16, 4100),
               (8, 8, 2, 1, 400)]
# Lengths a batch starts with (the rest random): empty, full, one key, and
# lengths around the key blocks' edges (64, 128, 176 keys per block).
EDGE_LENGTHS = [0, None, 1, 63, 64, 65, 127, 177]
# (Hq, Hkv, query lengths, key lengths): packed sequences.
PACKED_CASES = [(4, 4, [5, 0, 130, 1, 77], [7, 3, 0, 200, 77]),
                (8, 2, [300, 64, 1000], [300, 1500, 1000]),
                (4, 2, [1, 64, 65, 127, 1], [1, 63, 129, 1, 177])]
PAD_ROWS = 3
INDEX_DTYPES = {"i32": torch.int32, "i64": torch.int64}


def compare(man, ours, ours_lse, ref, ref_lse):
    """(ok, text) of O and the LSE against the reference."""
    ours = ours.double()
    if torch.isnan(ours).any():
        return False, "NaN in O (unwritten, or a poisoned value read)"
    if ours_lse is not None:
        got = ours_lse.double()
        finite = torch.isfinite(ref_lse)
        if torch.isnan(got).any() or not torch.equal(torch.isfinite(got), finite) \
                or (finite.any() and (got[finite] - ref_lse[finite]).abs().max() > 1e-3):
            return False, "LSE differs from the reference"
    err = ((ours - ref).norm() / ref.norm().clamp_min(1e-30)).item()
    tol = TOLERANCE[man["dtype"]]
    return err <= tol, f"rel {err:.2e} (tol {tol:.0e})"


def empty_reference(man, rows, sinks):
    """O = 0 and LSE = -inf (the sink with sinks) for `rows` (B, H, M): the
    result of rows that see no key."""
    ref = torch.zeros(*rows, man["value_dim"], dtype=torch.float64, device="cuda")
    ref_lse = torch.full(rows, float("-inf"), dtype=torch.float64, device="cuda")
    if sinks is not None:
        ref_lse[:] = sinks.double()[None, :, None]
    return ref, ref_lse


def cache_case(kernel, case, seed, splits):
    """A ragged (or paged) cache: sequence b has key_lengths[b] keys."""
    man = kernel.manifest
    params = {p["name"]: p for p in manifest_params(man)}
    dtype = DTYPES[man["dtype"]]
    b, hq, hkv, m, n = case
    g = torch.Generator(device="cuda").manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, device="cuda", generator=g).to(dtype)

    q = randn(b, hq, m, man["head_dim"])
    k = randn(b, hkv, n, man["head_dim"])
    v = randn(b, hkv, n, man["value_dim"])
    lengths = torch.randint(0, n + 1, (b,), generator=g, device="cuda")
    edges = [n if e is None else min(e, n) for e in EDGE_LENGTHS][:b]
    lengths[:len(edges)] = torch.tensor(edges, device="cuda")
    for i in range(b):
        k[i, :, lengths[i]:] = float("nan")
        v[i, :, lengths[i]:] = float("nan")
    tensors = dict(q=q, key_lengths=lengths.to(torch.int32))
    if "block_table" in params:
        page = params["k"]["shape"][2]
        per = -(-n // page)
        pool_pages = b * per + 3
        table = torch.randperm(pool_pages, generator=g, device="cuda")[:b * per]
        table = table.view(b, per).to(torch.int32)
        pools = []
        for dense in (k, v):
            pool = torch.full((pool_pages, hkv, page, dense.shape[3]), float("nan"),
                              device="cuda", dtype=dtype)
            padded = torch.full((b, hkv, per * page, dense.shape[3]), float("nan"),
                                device="cuda", dtype=dtype)
            padded[:, :, :n] = dense
            for i in range(b):
                for s in range(per):
                    pool[table[i, s]] = padded[i, :, s * page:(s + 1) * page]
            pools.append(pool)
        for i in range(b):
            table[i, -(-int(lengths[i]) // page):] = 2 ** 30
        tensors.update(k=pools[0], v=pools[1], block_table=table)
    else:
        tensors.update(k=k, v=v)
    o = torch.full((b, hq, m, man["value_dim"]), float("nan"), device="cuda",
                   dtype=dtype)
    tensors["o"] = o
    if "lse" in params:
        tensors["lse"] = torch.full((b, hq, m), float("nan"), device="cuda")
    if "sinks" in params:
        tensors["sinks"] = (torch.randn(hq, device="cuda", generator=g) * 2 + 1).to(
            DTYPES[params["sinks"]["dtype"]])
    kernel.launch(tensors, None, kernel.check(tensors), splits)
    torch.cuda.synchronize()
    ref, ref_lse = empty_reference(man, (b, hq, m), tensors.get("sinks"))
    for i in range(b):
        length = int(lengths[i])
        if length:
            ref[i:i + 1], ref_lse[i:i + 1], _ = reference(
                q[i:i + 1], k[i:i + 1, :, :length], v[i:i + 1, :, :length],
                man["scale"], man["causal"], man["window"],
                sinks=tensors.get("sinks"))
    return compare(man, o, tensors.get("lse"), ref, ref_lse)


def packed_inputs(man, case, seed):
    """Packed Q [1, Hq, Tq, D], K/V [1, Hkv, Tk, D] with NaN in the rows
    past the last sequence, the offsets in the kernel's index type, and the
    generator that made them."""
    params = {p["name"]: p for p in manifest_params(man)}
    dtype = DTYPES[man["dtype"]]
    hq, hkv, queries, keys = case
    g = torch.Generator(device="cuda").manual_seed(seed)
    tq, tk = sum(queries) + PAD_ROWS, sum(keys) + PAD_ROWS

    def randn(*shape):
        return torch.randn(*shape, device="cuda", generator=g).to(dtype)

    q = randn(1, hq, tq, man["head_dim"])
    k = randn(1, hkv, tk, man["head_dim"])
    v = randn(1, hkv, tk, man["value_dim"])
    for t, total in ((q, tq - PAD_ROWS), (k, tk - PAD_ROWS), (v, tk - PAD_ROWS)):
        t[:, :, total:] = float("nan")

    def offsets(lengths, name):
        return torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)),
                            dtype=INDEX_DTYPES[params[name]["dtype"]],
                            device="cuda")

    cq, ck = offsets(queries, "cu_seqlens_q"), offsets(keys, "cu_seqlens_k")
    return q, k, v, cq, ck, g


def packed_scalars(case):
    """The grid's bounds on a sequence's rows (the padding rows past the
    last sequence are one more problem)."""
    _, _, queries, keys = case
    return {"max_seqlen_q": max(queries + [PAD_ROWS]),
            "max_seqlen_k": max(keys + [PAD_ROWS])}


def packed_case(kernel, case, seed):
    """Packed sequences: Q [1, Hq, Tq, D], K/V [1, Hkv, Tk, D] cut by
    cu_seqlens, the caller's max_seqlen_q for the grid."""
    man = kernel.manifest
    params = {p["name"]: p for p in manifest_params(man)}
    dtype = DTYPES[man["dtype"]]
    hq, hkv, queries, keys = case
    q, k, v, cq, ck, g = packed_inputs(man, case, seed)
    tq = q.shape[2]
    o = torch.full((1, hq, tq, man["value_dim"]), float("nan"), device="cuda",
                   dtype=dtype)
    tensors = dict(q=q, k=k, v=v, o=o, cu_seqlens_q=cq, cu_seqlens_k=ck)
    if "lse" in params:
        tensors["lse"] = torch.full((1, hq, tq), float("nan"), device="cuda")
    if "sinks" in params:
        tensors["sinks"] = (torch.randn(hq, device="cuda", generator=g) * 2 + 1).to(
            DTYPES[params["sinks"]["dtype"]])
    scalars = {"max_seqlen_q": packed_scalars(case)["max_seqlen_q"]}
    kernel.launch(tensors, None, kernel.check(tensors), None, scalars)
    torch.cuda.synchronize()
    ref, ref_lse = empty_reference(man, (1, hq, tq), tensors.get("sinks"))
    for s in range(len(queries)):
        q0, q1, k0, k1 = int(cq[s]), int(cq[s + 1]), int(ck[s]), int(ck[s + 1])
        if k0 == k1:
            continue
        ref[:, :, q0:q1], ref_lse[:, :, q0:q1], _ = reference(
            q[:, :, q0:q1], k[:, :, k0:k1], v[:, :, k0:k1], man["scale"],
            man["causal"], man["window"], sinks=tensors.get("sinks"))
    return compare(man, o, tensors.get("lse"), ref, ref_lse)


def packed_backward_case(kernel, case, seed):
    """The backward of packed sequences: O and LSE from the float64
    reference (O rounded to the kernel's type), dO random, NaN in every row
    past the last sequence; dQ, dK and dV against float64 autograd per
    sequence, 0 for rows and keys that see nothing."""
    man = kernel.manifest
    dtype = DTYPES[man["dtype"]]
    hq, _, queries, _ = case
    q, k, v, cq, ck, g = packed_inputs(man, case, seed)
    tq = q.shape[2]
    do = torch.randn(1, hq, tq, man["value_dim"], device="cuda",
                     generator=g).to(dtype)
    do[:, :, tq - PAD_ROWS:] = float("nan")
    o = torch.full_like(do, float("nan"))
    lse = torch.full((1, hq, tq), float("nan"), device="cuda")
    grads = [torch.zeros(t.shape, dtype=torch.float64, device="cuda")
             for t in (q, k, v)]
    # The rows that see no key and the keys that no row sees (empty
    # sequences, causal/window masks, the padding past the last sequence):
    # their gradients are exactly 0. (A row that sees one key has a zero
    # dQ in exact arithmetic only: its D comes from the rounded O.)
    blind_rows = torch.ones(tq, dtype=torch.bool, device="cuda")
    blind_keys = torch.ones(k.shape[2], dtype=torch.bool, device="cuda")
    for s in range(len(queries)):
        q0, q1, k0, k1 = int(cq[s]), int(cq[s + 1]), int(ck[s]), int(ck[s + 1])
        if q0 == q1:
            continue
        if k0 == k1:
            o[:, :, q0:q1] = 0
            lse[:, :, q0:q1] = float("-inf")
            continue
        o_s, lse_s, hidden, grads_s = reference_grads(
            q[:, :, q0:q1], k[:, :, k0:k1], v[:, :, k0:k1], do[:, :, q0:q1],
            man["scale"], man["causal"], man["window"])
        blind_rows[q0:q1] = hidden.all(dim=1)
        blind_keys[k0:k1] = hidden.all(dim=0)
        o[:, :, q0:q1], lse[:, :, q0:q1] = o_s.to(dtype), lse_s.float()
        for grad, part, (a, z) in zip(grads, grads_s,
                                      ((q0, q1), (k0, k1), (k0, k1))):
            grad[:, :, a:z] = part
    tensors = dict(q=q, k=k, v=v, o=o, do=do, lse=lse, cu_seqlens_q=cq,
                   cu_seqlens_k=ck)
    outs = {name: torch.full_like(like, float("nan"))
            for name, like in (("dq", q), ("dk", k), ("dv", v))}
    tensors.update(outs)
    kernel.launch(tensors, None, kernel.check(tensors), None,
                  packed_scalars(case))
    torch.cuda.synchronize()
    tol = TOLERANCE[man["dtype"]]
    ok, parts = True, []
    for name, ref, nothing in zip(("dq", "dk", "dv"), grads,
                                  (blind_rows, blind_keys, blind_keys)):
        ours = outs[name].double()
        if torch.isnan(ours).any():
            return False, f"NaN in {name} (unwritten, or a poisoned value read)"
        err = ((ours - ref).norm() / ref.norm().clamp_min(1e-30)).item()
        stray = ours[:, :, nothing].abs().max().item() if nothing.any() else 0.0
        ok &= err <= tol and stray == 0
        parts.append(f"{name} rel {err:.2e}" + (f", {stray:.1e} where 0"
                                                 if stray else ""))
    return ok, "; ".join(parts) + f" (tol {tol:.0e})"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("directory")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("--kernels", help="comma-separated kernel names to check")
    args = p.parse_args(argv)
    wanted = set(args.kernels.split(",")) if args.kernels else None
    failures = checked = 0
    for kernel in load_all(args.directory):
        names = {p["name"] for p in manifest_params(kernel.manifest)}
        if (wanted and kernel.name not in wanted) or \
                not names & {"key_lengths", "cu_seqlens_q"}:
            continue
        if kernel.manifest.get("score_mod"):
            # The reference here knows no score_mod (torch_serving_check
            # runs softcap through the op).
            print(f"skip {kernel.name}: a score_mod")
            continue
        checked += 1
        # (what, run) per case: run() -> (ok, message).
        if "cu_seqlens_q" in names:
            case_fn = packed_backward_case if kernel.backward else packed_case
            runs = [(f"{case}", lambda c=case, i=ci: case_fn(kernel, c, i))
                    for ci, case in enumerate(PACKED_CASES)]
        else:
            splits_list = SPLITS if kernel.manifest.get("key_splits") else (None,)
            runs = [(f"{case} ({s} splits)",
                     lambda c=case, i=ci, s=s: cache_case(kernel, c, i, s))
                    for ci, case in enumerate(CACHE_CASES) for s in splits_list]
        lines, kernel_ok = [], True
        for what, run in runs:
            ok, msg = run()
            kernel_ok &= ok
            lines.append(("ok   " if ok else "FAIL ") + f"{what}: {msg}")
        failures += 0 if kernel_ok else 1
        print_kernel(kernel_ok, kernel.name, lines, args.verbose)
    print(f"serving_check: {checked} kernel(s), {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
