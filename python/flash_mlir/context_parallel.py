"""Context parallelism on flash-mlir's kernels: ring attention over
torch.distributed (NCCL), one GPU per rank.

    from flash_mlir.context_parallel import ring_attention, shard, unshard
    q, k, v = (shard(t) for t in (q_full, k_full, v_full))  # or your loader's shards
    o = ring_attention(q, k, v, causal=True)                 # this rank's rows of O
    o.backward(shard(grad_full))                             # grads of the local shards
    o_full = unshard(o)                                      # all_gather, in sequence order

Each rank passes its own rows of Q, K, V ([B, H, S_local, D], sequence dim 2,
any strides, GQA by head counts); with `load_balanced` (the default, and
PyTorch's head-tail layout) the local tensor is the concatenation of its two
chunks r and 2 * world - 1 - r of the sequence (flash_mlir.ring.shards), so
that every rank does the same causal work. The world is the process group's
(`group`, default the whole world; one rank without torch.distributed).

Per ring step the rank calls the single-GPU op (torch.ops.flash_mlir.
attention_forward / attention_backward) on the blocks of flash_mlir.ring.
ring_plan (causal on its own chunks, full against earlier ones, nothing
against later ones) and merges by LSE in float32; K and V travel to the next
rank by torch.distributed P2P (batch_isend_irecv), the transfer of the next
step overlapping this step's kernels. The backward runs the same calls with
the merged O and LSE: dQ sums locally, dK and dV sum in float32 in an
accumulator that travels with its K/V and arrives back at its owner. The
step loops are flash_mlir.ring's (checked there with numpy); this module
gives them the kernels and the communication.

`use_with_torch_cp()` runs our kernels inside PyTorch's own context parallel
(torch.distributed.tensor.experimental.context_parallel) instead.
"""

import contextlib
import math
import os

import torch
import torch.distributed as dist

from flash_mlir import ring
from flash_mlir import torch as fm


def _rank_world(group):
    if group is None and not dist.is_initialized():
        return 0, 1
    return dist.get_rank(group), dist.get_world_size(group)


class _Ring:
    """The ring of `group`: shift() sends to the next rank and receives from
    the previous one (P2P, asynchronous; wait() orders the current stream
    after the transfer)."""

    def __init__(self, group=None):
        self.rank, self.world = _rank_world(group)
        if self.world > 1:
            group = group or dist.group.WORLD
            self.group = group
            self.next = dist.get_global_rank(group, (self.rank + 1) % self.world)
            self.prev = dist.get_global_rank(group, (self.rank - 1) % self.world)

    def shift(self, tensors):
        if self.world == 1:
            return ring.Ready(tensors)
        tensors = [t.contiguous() for t in tensors]
        got = [torch.empty_like(t) for t in tensors]
        ops = [dist.P2POp(dist.isend, t, self.next, self.group) for t in tensors]
        ops += [dist.P2POp(dist.irecv, t, self.prev, self.group) for t in got]
        return _Transfer(dist.batch_isend_irecv(ops), got)


class _Transfer:
    def __init__(self, works, tensors):
        self.works, self.tensors = works, tensors

    def wait(self):
        for w in self.works:
            w.wait()
        return self.tensors


def _attend(scale):
    def attend(q, k, v, causal):
        o, lse = fm.attention_forward(q, k, v, None, None, causal, scale, None,
                                      True)
        return o.float(), lse
    return attend


def _attend_backward(scale):
    def attend_backward(do, q, k, v, o, lse, causal):
        grads = fm.attention_backward(do, q, k, v, o, lse.contiguous(), None,
                                      None, causal, scale, None)
        return [g.float() for g in grads]
    return attend_backward


def _plan(q, causal, rank, world, load_balanced):
    return ring.ring_plan(rank, world, q.shape[2] * world, causal,
                          load_balanced)


def ring_forward(q, k, v, causal, scale, rank, world, shift, load_balanced=True):
    """One rank's ring forward on the kernels, with `shift` the ring's only
    communication (flash_mlir.ring.forward_steps): O in Q's dtype and the
    float32 natural-log LSE [B, Hq, S_local]."""
    plan = _plan(q, causal, rank, world, load_balanced)
    o, lse = ring.forward_steps(q, k.contiguous(), v.contiguous(), plan,
                                _attend(scale), shift, torch)
    return o.to(q.dtype), lse


def ring_backward(do, q, k, v, o, lse, causal, scale, rank, world, shift,
                  load_balanced=True):
    """One rank's ring backward from the merged O and LSE of ring_forward:
    dQ, dK, dV of its shards (float32 sums, cast to the inputs' dtypes)."""
    plan = _plan(q, causal, rank, world, load_balanced)
    dq, dk, dv = ring.backward_steps(do, q, k.contiguous(), v.contiguous(),
                                     o, lse, plan, _attend_backward(scale),
                                     shift, torch)
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype)


class _RingAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal, scale, comm, load_balanced):
        k, v = k.contiguous(), v.contiguous()  # what travels the ring
        o, lse = ring_forward(q, k, v, causal, scale, comm.rank, comm.world,
                              comm.shift, load_balanced)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.args = causal, scale, comm, load_balanced
        ctx.mark_non_differentiable(lse)
        return o, lse

    @staticmethod
    def backward(ctx, grad_o, grad_lse):
        # grad_o is materialised (zeros if O got no gradient): every rank
        # takes part in the backward's ring.
        q, k, v, o, lse = ctx.saved_tensors
        causal, scale, comm, load_balanced = ctx.args
        dq, dk, dv = ring_backward(grad_o, q, k, v, o, lse, causal, scale,
                                   comm.rank, comm.world, comm.shift, load_balanced)
        return dq, dk, dv, None, None, None, None


def ring_attention(q, k, v, *, causal=False, scale=None, group=None,
                   load_balanced=True, return_lse=False):
    """Attention of this rank's query rows to the whole sequence, whose rows
    are spread over the ranks of `group` (see the module docstring). Returns
    this rank's O [B, Hq, S_local, Dv], or (O, LSE) with return_lse (LSE is
    not differentiable). Every rank of the group must call it (and its
    backward) with the same shapes and flags."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise ValueError(f"{name}: expected a rank-4 tensor [B, H, S, D]")
    if k.shape[2] != q.shape[2] or v.shape[2] != q.shape[2]:
        raise ValueError("q, k, v: ring attention needs the same local "
                         f"sequence length, got {q.shape[2]}, {k.shape[2]}, "
                         f"{v.shape[2]}")
    comm = _Ring(group)
    if load_balanced and q.shape[2] % 2:
        raise ValueError(f"q: a load-balanced shard holds two equal chunks, "
                         f"got an odd local length {q.shape[2]}")
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    o, lse = _RingAttention.apply(q, k, v, bool(causal), float(scale), comm,
                                  bool(load_balanced))
    return (o, lse) if return_lse else o


def init_from_torchrun(timeout_minutes=30):
    """The NCCL process group of a torchrun launch, one GPU per rank (the
    local rank's): returns (rank, world size)."""
    import datetime
    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local),
                            timeout=datetime.timedelta(minutes=timeout_minutes))
    return dist.get_rank(), dist.get_world_size()


def shard_of(x, rank, world, seq_dim=2, load_balanced=True):
    """Rank `rank`'s part of the whole-sequence `x` (differentiable)."""
    chunks = ring.shards(x.shape[seq_dim], world, load_balanced)[rank]
    return torch.cat([x.narrow(seq_dim, c.start, len(c)) for c in chunks],
                     dim=seq_dim)


def unshard_parts(parts, seq_dim=2, load_balanced=True):
    """The whole sequence from the ranks' parts, by rank."""
    world = len(parts)
    seq = parts[0].shape[seq_dim] * world
    return torch.cat([parts[r].narrow(seq_dim, start, n) for r, start, n
                      in ring.gather_order(seq, world, load_balanced)],
                     dim=seq_dim)


def shard(x, group=None, seq_dim=2, load_balanced=True):
    """This rank's part of `x`, the whole sequence (which every rank holds;
    no communication): its chunks of ring.shards, concatenated."""
    rank, world = _rank_world(group)
    return shard_of(x, rank, world, seq_dim, load_balanced)


def unshard(x, group=None, seq_dim=2, load_balanced=True):
    """The whole sequence from every rank's `x` (all_gather, not
    differentiable), in sequence order."""
    rank, world = _rank_world(group)
    x = x.contiguous()
    parts = [x]
    if world > 1:
        parts = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(parts, x, group=group)
    return unshard_parts(parts, seq_dim, load_balanced)


@contextlib.contextmanager
def use_with_torch_cp():
    """Inside, F.scaled_dot_product_attention under PyTorch's context_parallel
    runs our kernels at every ring step, forward and backward:

        from torch.distributed.tensor.experimental import context_parallel
        with use_with_torch_cp(), context_parallel(mesh, buffers=[q, k, v, ...],
                                                   buffer_seq_dims=[2, 2, 2, ...]):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)

    PyTorch's CP calls aten::_scaled_dot_product_flash_attention (and its
    backward, with the merged O and LSE) once per step on the local tensors,
    and that op's CUDA kernel is what flash_mlir.sdpa overrides. This
    activates flash_mlir.sdpa (torch.nn.attention's flash registry) and
    restricts SDPA to the flash backend while inside, then restores what
    was active. Yields flash_mlir.sdpa, whose `handled` and `fallbacks`
    count the per-step calls. PyTorch's CP refuses non-causal attention
    with its load balancing on (its default); see README."""
    import torch.nn.attention as tna
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from flash_mlir import sdpa
    current = getattr(tna, "current_flash_attention_impl", lambda: None)()
    if current != sdpa.NAME:
        sdpa.activate()
    try:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            yield sdpa
    finally:
        if current is None:
            sdpa.restore()
        elif current != sdpa.NAME:
            tna.activate_flash_attention_impl(current)
