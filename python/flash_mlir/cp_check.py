"""Checks context parallelism on GPUs (flash_mlir.context_parallel):

    torchrun --standalone --nproc-per-node N -m flash_mlir.cp_check  # N GPUs (NCCL), also 1
    python -m flash_mlir.cp_check --simulate W      # W ranks as threads on one GPU

- contract: the per-step kernel calls' contract, on one GPU: causal is
  bottom-right (M < N and M > N against float64), rows that see no key give
  O = 0 and LSE = -inf exactly, and a causal attention split into three
  calls (a diagonal block, a full block, and an M > N bottom-right block
  whose first rows see nothing) merged by LSE, then each call's backward
  given the merged O and LSE, equals the whole attention and its gradients;
- ring: ring_attention's O, LSE, dQ, dK, dV (bf16, D = 128, Hq = 16, Hkv =
  4 and 16) for sequences of 8k, 16k, 32k, causal (load-balanced and
  contiguous sharding) and not, against the single-GPU op on the whole
  sequence, and both against float64 attention of the same quantised inputs
  (blockwise, and the plain torch autograd reference on a small shape):
  relative error at most 1.6e-2 (torch_check's bf16 tolerance) and the
  ring's at most 2x the single-GPU op's, LSE within 1e-3;
- torch_cp (torchrun): F.scaled_dot_product_attention under PyTorch's
  context_parallel inside use_with_torch_cp(): our kernels run once per ring
  step, forward and backward, without fallback, the shards are ours
  (head-tail), and O and the gradients are as right as the single-GPU op's
  (PyTorch's stock FlashAttention-2 under the same CP alongside).

--simulate runs the ring's own step loops (context_parallel.ring_forward /
ring_backward, the kernel launches and merges of every rank) with the transfers
replaced by flash_mlir.ring.SimulatedRing. Kernels must be prebuilt (or
flash-compile installed) for bf16, D = 128, causal and not. Prints a table
and "N passed, M failed"; exit status 1 on any failure (every rank).
"""

import argparse
import math
import os
import sys
import traceback
from collections import Counter

import torch

from flash_mlir import context_parallel as cp
from flash_mlir import ring
from flash_mlir import torch as fm
from flash_mlir.check import reference

TOL = 1.6e-2      # bf16, relative to float64 (torch_check.TOL)
LSE_TOL = 1e-3    # absolute, natural log (torch_check)
RATIO = 2.0       # the ring's error against the single-GPU op's
D = 128

results = []      # (ok, name, detail)
RANK, WORLD = 0, 1


def say(*args):
    if RANK == 0:
        print(*args, flush=True)


def record(ok, name, detail=""):
    results.append((bool(ok), name, detail))
    if RANK == 0 or not ok:  # another rank's failure is printed too
        where = f"[rank {RANK}] " if RANK else ""
        print(f"{where}{'ok  ' if ok else 'FAIL'} {name:<44} {detail}", flush=True)


def attempt(name, fn, *args):
    try:
        fn(*args)
    except Exception:  # noqa: BLE001 (recorded)
        record(False, name, traceback.format_exc(limit=6).replace("\n", "\n     "))


def rel(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-30)).item()


def inputs(b, hq, hkv, seq, seed, dtype=torch.bfloat16):
    """Q, K, V, dO [B, H, S, D], the same on every rank (seeded on the GPU)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    return [torch.randn(b, h, seq, D, device="cuda", generator=g).to(dtype)
            for h in (hq, hkv, hkv, hq)]


def reference64(q, k, v, do, scale, causal, block=256):
    """float64 O, LSE, dQ, dK, dV of attention over the whole sequence
    (bottom-right causal), `block` query rows at a time so that 32k rows fit;
    GQA by repeating K/V heads and summing their gradients per group."""
    b, hq, m, _ = q.shape
    hkv, n = k.shape[1], k.shape[2]
    group = hq // hkv
    q, do = q.double(), do.double()
    k, v = (t.double().repeat_interleave(group, 1) for t in (k, v))
    o = torch.empty(b, hq, m, v.shape[-1], dtype=torch.float64, device=q.device)
    lse = torch.empty(b, hq, m, dtype=torch.float64, device=q.device)
    dq = torch.empty_like(q)
    dk, dv = torch.zeros_like(k), torch.zeros_like(v)
    cols = torch.arange(n, device=q.device)
    for start in range(0, m, block):
        rows = slice(start, min(start + block, m))
        s = q[:, :, rows] @ k.transpose(-1, -2) * scale
        if causal:
            i = torch.arange(rows.start, rows.stop, device=q.device)[:, None]
            s.masked_fill_(cols[None, :] > i + (n - m), -math.inf)
        l_ = torch.logsumexp(s, dim=-1)
        p = torch.exp(s - torch.where(torch.isinf(l_), torch.zeros_like(l_), l_)[..., None])
        ob = p @ v
        ds = p * (do[:, :, rows] @ v.transpose(-1, -2)
                  - (do[:, :, rows] * ob).sum(-1, keepdim=True))
        o[:, :, rows], lse[:, :, rows] = ob, l_
        dq[:, :, rows] = ds @ k * scale
        dk += ds.transpose(-1, -2) @ q[:, :, rows] * scale
        dv += p.transpose(-1, -2) @ do[:, :, rows]
        del s, p, ds
    dk, dv = (t.view(b, hkv, group, n, t.shape[-1]).sum(2) for t in (dk, dv))
    return o, lse, dq, dk, dv


def single(q, k, v, do, causal):
    """The single-GPU op on the whole sequence: O, LSE, dQ, dK, dV."""
    q, k, v = (t.detach().clone().requires_grad_() for t in (q, k, v))
    o, lse = fm.attention(q, k, v, causal=causal, return_lse=True)
    o.backward(do)
    return [o.detach(), lse, q.grad, k.grad, v.grad]


def ring_distributed(q, k, v, do, causal, balanced):
    """ring_attention over the process group, forward and backward through
    autograd, unsharded on every rank: O, LSE, dQ, dK, dV."""
    mine = [cp.shard(t, load_balanced=balanced).detach().requires_grad_()
            for t in (q, k, v)]
    o, lse = cp.ring_attention(*mine, causal=causal, load_balanced=balanced,
                               return_lse=True)
    o.backward(cp.shard(do, load_balanced=balanced))
    return [cp.unshard(t, load_balanced=balanced)  # LSE [B, H, S]: dim 2 too
            for t in (o.detach(), lse, *(t.grad for t in mine))]


def ring_simulated(world):
    def run(q, k, v, do, causal, balanced):
        """Every rank's step loops (context_parallel.ring_forward / ring_backward) on
        a SimulatedRing of `world` threads, unsharded: O, LSE, dQ, dK, dV."""
        scale = 1 / math.sqrt(D)

        def rank_fn(rank, shift):
            mine = [cp.shard_of(t, rank, world, 2, balanced) for t in (q, k, v, do)]
            o, lse = cp.ring_forward(*mine[:3], causal, scale, rank, world, shift, balanced)
            grads = cp.ring_backward(mine[3], *mine[:3], o, lse, causal, scale, rank,
                                world, shift, balanced)
            return o, lse, *grads

        parts = ring.SimulatedRing(world).run(rank_fn)
        return [cp.unshard_parts([p[i] for p in parts], 2, balanced) for i in range(5)]
    return run


def lse_error(got, want):
    """Largest |LSE - reference| where finite; inf if the -inf rows differ."""
    finite = torch.isfinite(want)
    if not torch.equal(torch.isfinite(got), finite):
        return math.inf
    if not finite.any():
        return 0.0
    return (got.double()[finite] - want[finite]).abs().max().item()


def judge(name, got, ours, ref):
    """Ring (`got`) against the single-GPU op (`ours`) and both against the
    float64 reference; lists of O, LSE, dQ, dK, dV."""
    ok, cells = True, []
    for i, label in ((0, "O"), (2, "dQ"), (3, "dK"), (4, "dV")):
        e_ring, e_ours, e_pair = rel(got[i], ref[i]), rel(ours[i], ref[i]), rel(got[i], ours[i])
        ok &= bool(torch.isfinite(got[i]).all()) and e_ring <= TOL and e_pair <= TOL \
            and e_ring <= RATIO * e_ours + 1e-12
        cells.append(f"{label} {e_ring:.1e}/{e_ours:.1e}/{e_pair:.1e}")
    e_lse = lse_error(got[1], ref[1])
    ok &= e_lse <= LSE_TOL
    cells.append(f"LSE {e_lse:.0e}")
    record(ok, name, "  ".join(cells))


def check_ring_case(run, world, seq, causal, balanced, hq, hkv, seed, b=1,
                    small=False):
    name = (f"ring W={world} S={seq} {'causal' if causal else 'full'}"
            f"{'' if not causal else ' balanced' if balanced else ' contiguous'}"
            f" H={hq}/{hkv}{f' B={b}' if b > 1 else ''}")
    q, k, v, do = inputs(b, hq, hkv, seq, seed)
    got = run(q, k, v, do, causal, balanced)
    if RANK != 0:
        return
    ours = single(q, k, v, do, causal)
    scale = 1 / math.sqrt(D)
    ref = list(reference64(q, k, v, do, scale, causal))
    if small:
        # The plain torch autograd reference on the small shape, and the
        # blockwise one against it.
        q64, k64, v64 = (t.double().requires_grad_() for t in (q, k, v))
        o64, lse64, _ = reference(q64, k64, v64, scale, causal, None)
        o64.backward(do.double())
        plain = [o64.detach(), lse64.detach(), q64.grad, k64.grad, v64.grad]
        gap = max((a - b_).abs().max().item() for a, b_ in zip(ref, plain))
        record(gap <= 1e-10, f"blockwise float64 reference, S={seq}", f"max gap {gap:.0e}")
        ref = plain
    judge(name, got, ours, ref)


def check_ring(run, world, seqs):
    say(f"\nring: per gradient ring/single-GPU error vs float64 / ring vs single-GPU "
        f"(tol {TOL}, ring <= {RATIO}x single)")
    small = 256 * 2 * world
    for causal in (False, True):
        attempt("ring small", check_ring_case, run, world, small, causal, True, 8, 2, 1, 2, True)
    for i, seq in enumerate(seqs):
        seq -= seq % (128 * world)  # whole chunks of 64 rows (3 ranks: 8064)
        for causal, balanced in ((False, True), (True, True), (True, False)):
            attempt(f"ring S={seq}", check_ring_case, run, world, seq, causal, balanced,
                    16, 4, 10 + i)
    seq = seqs[0] - seqs[0] % (128 * world)
    attempt("ring MHA", check_ring_case, run, world, seq, True, True, 16, 16, 20)


def check_contract():
    """The per-step calls' kernel contract (one GPU)."""
    say("\ncontract: the kernels as ring steps call them")
    scale = 1 / math.sqrt(D)
    # Bottom-right causal, both ways, and rows that see no key.
    for m, n in ((256, 1024), (1024, 256)):
        q, k, v, _ = inputs(1, 8, 2, max(m, n), 1)
        q = q[:, :, :m].contiguous()
        k, v = k[:, :, :n].contiguous(), v[:, :, :n].contiguous()
        o, lse = fm.attention(q, k, v, causal=True, return_lse=True)
        want, want_lse, hidden = reference(q, k, v, scale, True, None)
        empty = hidden.all(-1)  # [M]: rows with no key
        e, e_lse = rel(o, want), lse_error(lse, want_lse)
        ok = e <= TOL and e_lse <= LSE_TOL
        detail = f"O {e:.1e}  LSE {e_lse:.0e}"
        if empty.any():
            ok &= bool((o[:, :, empty] == 0).all()) and \
                bool(torch.isneginf(lse[:, :, empty]).all())
            detail += f"  {int(empty.sum())} rows without keys: O = 0, LSE = -inf"
        record(ok, f"bottom-right causal M={m} N={n}", detail)

    # A causal attention of 1024 positions as three calls: rows [0, 512)
    # against keys [0, 512) causal, rows [512, 1024) against them full, and
    # every row against keys [512, 1024) causal with M > N (the first 512
    # rows see none: LSE -inf), merged by LSE; then each call's backward
    # with the merged O and LSE of its rows.
    q, k, v, do = inputs(1, 8, 2, 1024, 2)
    h = 512
    calls = [(slice(0, h), slice(0, h), True), (slice(h, None), slice(0, h), False),
             (slice(None), slice(h, None), True)]
    o = torch.zeros(1, 8, 1024, D, device="cuda")
    lse = torch.full((1, 8, 1024), -math.inf, device="cuda")
    for rows, keys, causal in calls:
        o_c, lse_c = fm.attention(q[:, :, rows], k[:, :, keys], v[:, :, keys],
                                  causal=causal, return_lse=True)
        o[:, :, rows], lse[:, :, rows] = ring.merge(o[:, :, rows], lse[:, :, rows],
                                                    o_c.float(), lse_c, torch)
    o = o.bfloat16()
    grads = [torch.zeros(t.shape, device="cuda") for t in (q, k, v)]
    for rows, keys, causal in calls:
        g = fm.attention_backward(do[:, :, rows], q[:, :, rows], k[:, :, keys],
                                  v[:, :, keys], o[:, :, rows],
                                  lse[:, :, rows].contiguous(), None, None, causal,
                                  scale, None)
        grads[0][:, :, rows] += g[0]
        grads[1][:, :, keys] += g[1]
        grads[2][:, :, keys] += g[2]
    got = [o, lse, *grads]
    q64, k64, v64 = (t.double().requires_grad_() for t in (q, k, v))
    o64, lse64, _ = reference(q64, k64, v64, scale, True, None)
    o64.backward(do.double())
    judge("3 calls merged, backward with merged O/LSE", got, single(q, k, v, do, True),
          [o64.detach(), lse64.detach(), q64.grad, k64.grad, v64.grad])


def run_torch_cp(mesh, ours, q, k, v, do, causal, gqa):
    """F.scaled_dot_product_attention under PyTorch's context_parallel (our
    kernels through use_with_torch_cp, or the stock FlashAttention-2),
    forward and backward: (O, dQ, dK, dV unsharded, (our forward steps,
    backward steps, fallbacks), whether torch's shards equal ours)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F
    from torch.distributed.tensor.experimental import context_parallel
    from flash_mlir import sdpa
    bufs = [t.clone() for t in (q, k, v, do)]
    before = Counter(sdpa.handled), Counter(sdpa.fallbacks)
    use = cp.use_with_torch_cp() if ours else sdpa_kernel(SDPBackend.FLASH_ATTENTION)
    with use, context_parallel(mesh, buffers=bufs, buffer_seq_dims=[2] * 4,
                               no_restore_buffers=set(bufs)):
        cq, ck, cv, cdo = bufs
        layout = torch.equal(cq, cp.shard(q, load_balanced=causal))
        for t in (cq, ck, cv):
            t.requires_grad_()
        out = F.scaled_dot_product_attention(cq, ck, cv, is_causal=causal,
                                             enable_gqa=gqa)
        out.backward(cdo)
        local = [out.detach(), cq.grad, ck.grad, cv.grad]
    steps = (sdpa.handled[sdpa.FORWARD] - before[0][sdpa.FORWARD],
             sdpa.handled[sdpa.BACKWARD] - before[0][sdpa.BACKWARD],
             sum((sdpa.fallbacks - before[1]).values()))
    return [cp.unshard(t, load_balanced=causal) for t in local], steps, layout


def check_torch_cp_case(mesh, seq, causal, hq, hkv, rotate, seed):
    from torch.distributed.tensor.experimental import _attention as tcp
    # PyTorch's CP refuses non-causal attention with its load balancing on
    # (its default): a private option.
    tcp._cp_options.enable_load_balance = causal
    tcp.set_rotate_method(rotate)
    q, k, v, do = inputs(1, hq, hkv, seq, seed)
    runs = {}
    for impl in ("stock FA2", "ours"):
        try:
            runs[impl] = run_torch_cp(mesh, impl == "ours", q, k, v, do, causal, hq != hkv)
        except Exception as e:  # noqa: BLE001
            if impl == "ours":
                raise
            runs[impl] = f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
    if RANK != 0:
        return
    ours_single = single(q, k, v, do, causal)
    ref = reference64(q, k, v, do, 1 / math.sqrt(D), causal)
    got, (fwd, bwd, fell), layout = runs["ours"]
    stock = runs["stock FA2"]
    ok = layout and fwd == WORLD and bwd == WORLD and fell == 0
    cells = [f"steps fwd {fwd} bwd {bwd} (want {WORLD}), fallbacks {fell}, "
             f"shards {'ours' if layout else 'DIFFER'}"]
    for i, (label, j) in enumerate((("O", 0), ("dQ", 2), ("dK", 3), ("dV", 4))):
        e, e_single = rel(got[i], ref[j]), rel(ours_single[j], ref[j])
        ok &= e <= TOL and e <= RATIO * e_single + 1e-12
        e_stock = f"{rel(stock[0][i], ref[j]):.1e}" if not isinstance(stock, str) else "n/a"
        cells.append(f"{label} {e:.1e} (1 GPU {e_single:.1e}, stock CP {e_stock})")
    if isinstance(stock, str):
        cells.append(f"stock FA2 under CP: {stock}")
    record(ok, f"torch CP W={WORLD} S={seq} {'causal balanced' if causal else 'full'} "
           f"H={hq}/{hkv} {rotate}", "  ".join(cells))


def check_torch_cp(seq):
    from torch.distributed.device_mesh import init_device_mesh
    say("\ntorch_cp: SDPA under PyTorch's context_parallel, our kernels per step")
    mesh = init_device_mesh("cuda", (WORLD,))
    for causal, hq, hkv, rotate in ((True, 16, 16, "allgather"), (True, 16, 4, "allgather"),
                                    (True, 16, 16, "alltoall"), (False, 16, 16, "allgather"),
                                    (False, 16, 4, "allgather")):
        attempt(f"torch CP causal={causal} H={hq}/{hkv} {rotate}", check_torch_cp_case,
                mesh, seq, causal, hq, hkv, rotate, 30)


def preload():
    """Loads the kernels the ring uses before threads race for them."""
    for causal in (False, True):
        single(*inputs(1, 2, 2, 256, 0), causal)


def main(argv=None):
    global RANK, WORLD
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--simulate", type=int, metavar="WORLD",
                   help="WORLD ranks as threads on one GPU, no torch.distributed")
    p.add_argument("--seqs", default="8192,16384,32768")
    p.add_argument("--only", default="contract,ring,torch_cp")
    args = p.parse_args(argv)
    parts = args.only.split(",")
    seqs = [int(s) for s in args.seqs.split(",")]
    distributed = args.simulate is None and "WORLD_SIZE" in os.environ
    if distributed:
        RANK, WORLD = cp.init_from_torchrun(timeout_minutes=20)
        run = ring_distributed
    else:
        WORLD = args.simulate or 1
        run = ring_simulated(WORLD)
    say(f"cp_check: {WORLD} rank(s){' simulated on one GPU' if not distributed else ''}, "
        f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    preload()
    if "contract" in parts and RANK == 0:
        attempt("contract", check_contract)
    if "ring" in parts:
        check_ring(run, WORLD, seqs)
    if "torch_cp" in parts and distributed:
        check_torch_cp(seqs[0])
    failed = sum(not ok for ok, _, _ in results)
    passed = len(results) - failed
    if distributed:
        import torch.distributed as dist
        count = torch.tensor([failed], device="cuda")
        dist.all_reduce(count)
        failed = int(count.item())
        dist.destroy_process_group()
    say(f"kernels launched: {dict(fm.launches)}")
    say(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
