"""flash_mlir.context_parallel on CPU torch (skipped without torch): the
ring's torch side (autograd Function, slicing, LSE merge, shard/unshard, the
P2P ring over gloo) with the two kernels replaced by float64 torch math of
the same contract (bottom-right causal, natural-log LSE, a backward from an
external O and LSE), against that math on the whole sequence: one rank in
process, a simulated ring of threads, and 3 ranks over torch.distributed."""

import math
import os
import socket
import subprocess
import sys
import types
import unittest

try:
    import torch
    import torch.distributed as dist
except ImportError:  # CI without torch: the ring's logic is test_ring's
    torch = None


def _scores(q, k, causal, scale):
    group = q.shape[1] // k.shape[1]
    s = q.double() @ k.double().repeat_interleave(group, 1).transpose(-1, -2) * scale
    if causal:
        m, n = s.shape[-2:]
        keep = torch.arange(n)[None, :] <= torch.arange(m)[:, None] + n - m
        s = s.masked_fill(~keep, -math.inf)
    return s, group


def attention_forward(q, k, v, bias, mask, causal, scale, window, compute_lse):
    s, group = _scores(q, k, causal, scale)
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - torch.where(torch.isinf(lse), torch.zeros_like(lse), lse)[..., None])
    o = p @ v.double().repeat_interleave(group, 1)
    return o.to(q.dtype), lse.float()


def attention_backward(do, q, k, v, o, lse, bias, mask, causal, scale, window):
    s, group = _scores(q, k, causal, scale)
    lse = lse.double()[..., None]
    p = torch.where(torch.isinf(lse), torch.zeros_like(s), torch.exp(s - lse))
    do = do.double()
    ds = p * (do @ v.double().repeat_interleave(group, 1).transpose(-1, -2)
              - (do * o.double()).sum(-1, keepdim=True))
    dq = ds @ k.double().repeat_interleave(group, 1) * scale
    dk = ds.transpose(-1, -2) @ q.double() * scale
    dv = p.transpose(-1, -2) @ do
    b, hkv = k.shape[:2]
    dk, dv = (g.view(b, hkv, group, *g.shape[2:]).sum(2) for g in (dk, dv))
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype)


def install_fake_kernels():
    """flash_mlir.torch replaced by the math above (before importing
    flash_mlir.context_parallel); returns what to restore."""
    import flash_mlir
    fake = types.ModuleType("flash_mlir.torch")
    fake.attention_forward, fake.attention_backward = attention_forward, attention_backward
    saved = {n: sys.modules.pop(n, None)
             for n in ("flash_mlir.torch", "flash_mlir.context_parallel")}
    sys.modules["flash_mlir.torch"] = fake
    flash_mlir.torch = fake
    return saved


def restore(saved):
    import flash_mlir
    for name, mod in saved.items():
        sys.modules.pop(name, None)
        if mod is not None:
            sys.modules[name] = mod
    if saved["flash_mlir.torch"] is not None:
        flash_mlir.torch = saved["flash_mlir.torch"]
    elif hasattr(flash_mlir, "torch"):
        del flash_mlir.torch


def inputs(seq, hq=4, hkv=2, d=8):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(2, h, seq, d, generator=g, dtype=torch.float64)
            for h in (hq, hkv, hkv, hq)]


def whole(q, k, v, do, causal):
    """O, dQ, dK, dV of the whole sequence (one call of the math)."""
    scale = 1 / math.sqrt(q.shape[-1])
    o, lse = attention_forward(q, k, v, None, None, causal, scale, None, True)
    return [o, *attention_backward(do, q, k, v, o, lse, None, None, causal, scale, None)]


def ring_run(seq, causal, balanced):
    """This rank's ring_attention, forward and backward, unsharded: O, dQ,
    dK, dV of the whole sequence."""
    from flash_mlir import context_parallel as cp
    q, k, v, do = inputs(seq)
    mine = [cp.shard(t, load_balanced=balanced).detach().requires_grad_()
            for t in (q, k, v)]
    o = cp.ring_attention(*mine, causal=causal, load_balanced=balanced)
    o.backward(cp.shard(do, load_balanced=balanced))
    return [cp.unshard(t, load_balanced=balanced)
            for t in (o.detach(), *(t.grad for t in mine))]


def close(got, want):
    return all(torch.allclose(g, w, rtol=1e-5, atol=1e-6) for g, w in zip(got, want))


@unittest.skipIf(torch is None, "no torch")
class ContextParallelCPU(unittest.TestCase):
    def setUp(self):
        self.saved = install_fake_kernels()

    def tearDown(self):
        restore(self.saved)

    def test_one_rank(self):
        for causal in (False, True):
            got = ring_run(16, causal, True)
            self.assertTrue(close(got, whole(*inputs(16), causal)), causal)

    def test_simulated_ring(self):
        from flash_mlir import context_parallel as cp
        from flash_mlir.ring import SimulatedRing
        for world in (2, 3):
            for causal in (False, True):
                for balanced in (False, True):
                    seq = 8 * world
                    q, k, v, do = inputs(seq)
                    scale = 1 / math.sqrt(q.shape[-1])

                    def rank_fn(rank, shift):
                        mine = [cp.shard_of(t, rank, world, 2, balanced)
                                for t in (q, k, v, do)]
                        o, lse = cp.ring_forward(*mine[:3], causal, scale, rank, world,
                                                 shift, balanced)
                        grads = cp.ring_backward(mine[3], *mine[:3], o, lse, causal, scale,
                                                 rank, world, shift, balanced)
                        return (o, *grads)

                    parts = SimulatedRing(world).run(rank_fn)
                    got = [cp.unshard_parts([p[i] for p in parts], 2, balanced)
                           for i in range(4)]
                    with self.subTest(world=world, causal=causal, balanced=balanced):
                        self.assertTrue(close(got, whole(q, k, v, do, causal)))

    @unittest.skipIf(torch is not None and not dist.is_available(), "no torch.distributed")
    def test_three_ranks_over_gloo(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        procs = []
        for rank in range(3):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE="3",
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
            procs.append(subprocess.Popen([sys.executable, __file__, "--rank"], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                          text=True))
        try:
            outs = [p.communicate(timeout=120)[0] for p in procs]
        finally:
            for p in procs:  # a hung ring must not outlive the test
                p.kill()
        self.assertEqual([p.returncode for p in procs], [0] * 3, "\n".join(outs))


def rank_main():
    """One rank of test_three_ranks_over_gloo: every case, exit 1 on a miss."""
    install_fake_kernels()
    dist.init_process_group("gloo")
    bad = [(c, b) for c in (False, True) for b in (False, True)
           if not close(ring_run(24, c, b), whole(*inputs(24), c))]
    dist.destroy_process_group()
    if bad:
        print("mismatch (causal, balanced):", bad)
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--rank"]:
        sys.exit(rank_main())
    unittest.main()
