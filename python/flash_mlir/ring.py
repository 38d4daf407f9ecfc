"""Context parallelism's arithmetic, without torch or a GPU: how a sequence
sharded over `world` ranks is attended step by step in a ring, and how the
steps' partial results merge by their log-sum-exp.

Each rank holds query rows and key/value rows of the same positions. At step
s of the ring, rank r attends its queries to the keys and values of rank
(r - s) mod world. Per pair of chunks (query chunk, key chunk) the kernel is
called with one of three masks: `full` (every key precedes every query),
`causal` (the same positions: the diagonal block, bottom-right causal) or
`skip` (every key follows every query: no call). The per-call outputs merge
by `merge`, which needs exactly what the kernels return: O normalised per
call and the natural-log LSE, -inf for rows that saw no key.

The backward runs the same calls, each given the merged O and LSE of its
query rows (the kernels accept them from outside): dQ sums on the query's
rank, dK and dV on the key's (sent back around the ring).

`ring_plan` joins each step's calls into as few kernel calls as the local
layout allows (one per step for the load-balanced layout), and
`forward_steps` / `backward_steps` are the step loops themselves, on any
array namespace, with the kernel calls and the one communication (`shift`:
send to the next rank, receive from the previous) passed in: numpy and a
`SimulatedRing` of threads check them here, flash_mlir.context_parallel runs
them on the kernels and NCCL.

With `load_balanced` sharding (what PyTorch's context parallel calls the
head-tail layout) the sequence is cut into 2 * world chunks and rank r holds
chunks r and 2 * world - 1 - r, so that under a causal mask every rank does
the same work.

The array functions take an array namespace `xp` (numpy by default; torch
works the same: `logaddexp`, `exp`, `where`, `isneginf`, `zeros_like`).
"""

import itertools
import threading
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Chunk:
    """Positions [start, stop) of the sequence."""
    start: int
    stop: int

    def __len__(self):
        return self.stop - self.start


@dataclass(frozen=True)
class Call:
    """One kernel call of a ring step: the rank's query chunk `q` (an index
    into `shards(...)[rank]`) against key chunk `k` of the source rank, with
    mask `mask` ("full" or "causal")."""
    step: int
    source: int
    q: int
    k: int
    mask: str


def shards(seq, world, load_balanced=True):
    """The chunks each rank holds, in order: [[Chunk, ...], ...] per rank.
    `seq` must be a multiple of the chunk count (2 * world load-balanced,
    world otherwise), as the PyTorch sharding requires."""
    if world < 1:
        raise ValueError(f"world size must be positive, got {world}")
    parts = 2 * world if load_balanced else world
    if seq % parts:
        raise ValueError(f"sequence length {seq} is not a multiple of the "
                         f"{parts} chunks of {world} ranks")
    size = seq // parts
    chunk = [Chunk(i * size, (i + 1) * size) for i in range(parts)]
    if not load_balanced:
        return [[chunk[r]] for r in range(world)]
    return [[chunk[r], chunk[parts - 1 - r]] for r in range(world)]


def mask_between(q, k, causal):
    """The call for query chunk `q` against key chunk `k` (equal lengths):
    "full", "causal" (the same positions) or "skip"."""
    if not causal:
        return "full"
    if q == k:
        return "causal"
    if len(q) != len(k):
        raise ValueError("chunks of a causal ring must have equal lengths")
    if k.stop <= q.start:
        return "full"
    if k.start >= q.stop:
        return "skip"
    raise ValueError(f"chunks {q} and {k} overlap without being equal")


def ring_calls(rank, world, seq, causal, load_balanced=True):
    """The kernel calls rank `rank` makes, step by step (skipped pairs
    left out)."""
    held = shards(seq, world, load_balanced)
    calls = []
    for step in range(world):
        source = (rank - step) % world
        for qi, q in enumerate(held[rank]):
            for ki, k in enumerate(held[source]):
                mask = mask_between(q, k, causal)
                if mask != "skip":
                    calls.append(Call(step, source, qi, ki, mask))
    return calls


def merge(o_a, lse_a, o_b, lse_b, xp=np):
    """Two partial attentions of the same query rows over disjoint keys, as
    one: LSE = log(e^a + e^b), O = O_a e^(a - LSE) + O_b e^(b - LSE). O is
    [..., M, D], LSE [..., M] in natural log; rows with LSE = -inf on both
    sides stay O = 0, LSE = -inf."""
    lse = xp.logaddexp(lse_a, lse_b)
    empty = xp.isneginf(lse)
    safe = xp.where(empty, xp.zeros_like(lse), lse)
    w_a = xp.where(empty, xp.zeros_like(lse), xp.exp(lse_a - safe))
    w_b = xp.where(empty, xp.zeros_like(lse), xp.exp(lse_b - safe))
    return o_a * w_a[..., None] + o_b * w_b[..., None], lse


@dataclass(frozen=True)
class Block:
    """One kernel call of a ring step in local rows: this rank's query rows
    [q_start, q_stop) against rows [k_start, k_stop) of the K/V that the
    source rank holds, `causal` (bottom-right; only on the rank's own
    chunks, where M == N) or full."""
    step: int
    source: int
    q_start: int
    q_stop: int
    k_start: int
    k_stop: int
    causal: bool

    @property
    def q_rows(self):
        return slice(self.q_start, self.q_stop)

    @property
    def k_rows(self):
        return slice(self.k_start, self.k_stop)


def ring_plan(rank, world, seq, causal, load_balanced=True):
    """`ring_calls` as few kernel calls as possible: [[Block, ...] per step].

    Chunks sit side by side in a rank's local tensor, so calls of one step
    join into rectangles: every later step is one block of full pairs or
    none (load-balanced: both query chunks against the source's first
    chunk, or the second query chunk against both; contiguous and causal:
    none from a source after the rank); the
    first step, the rank against its own chunks, is one causal block, since
    the local positions increase and causal over the concatenation hides
    exactly the pairs where a key follows its query. Step 0 always covers
    every local row once (the forward starts its accumulators from it)."""
    held = shards(seq, world, load_balanced)
    size = len(held[0][0])
    plan = [[] for _ in range(world)]
    by_step = {}
    for c in ring_calls(rank, world, seq, causal, load_balanced):
        by_step.setdefault(c.step, []).append(c)
    for step, calls in sorted(by_step.items()):
        source = calls[0].source
        if any(c.mask == "causal" for c in calls):
            # The rank's own chunks (step 0): the pairs are exactly
            # {(i, j): j <= i}, causal on the diagonal.
            rows = len(held[rank]) * size
            plan[step].append(Block(step, source, 0, rows, 0, rows, True))
            continue
        # Full pairs: per query chunk its runs of consecutive key chunks,
        # then consecutive query chunks with the same runs as one block.
        runs = {}
        for c in calls:
            runs.setdefault(c.q, []).append(c.k)
        per_q = []
        for qi in sorted(runs):
            ks = sorted(runs[qi])
            start = prev = ks[0]
            for k in ks[1:] + [None]:
                if k != prev + 1:
                    per_q.append((qi, start, prev + 1))
                    start = k
                prev = k
        merged = []
        for qi, k0, k1 in per_q:
            last = merged[-1] if merged else None
            if last and last[1] == qi and last[2:] == (k0, k1):
                merged[-1] = (last[0], qi + 1, k0, k1)
            else:
                merged.append((qi, qi + 1, k0, k1))
        plan[step] += [Block(step, source, q0 * size, q1 * size, k0 * size,
                             k1 * size, False) for q0, q1, k0, k1 in merged]
    return plan


def local_positions(rank, world, seq, load_balanced=True):
    """The sequence positions of a rank's local rows, in order."""
    return [p for c in shards(seq, world, load_balanced)[rank]
            for p in range(c.start, c.stop)]


def gather_order(seq, world, load_balanced=True):
    """Where each piece of the whole sequence lies after an all-gather of the
    ranks' local tensors: (rank, local start, length) in sequence order."""
    held = shards(seq, world, load_balanced)
    pieces = [(c.start, r, i * len(c), len(c))
              for r, chunks in enumerate(held) for i, c in enumerate(chunks)]
    return [p[1:] for p in sorted(pieces)]


# The step loops. Arrays are [..., S, D] (O, dQ, ...) and [..., S] (LSE) with
# the sequence second to last; `attend(q, k, v, causal)` is one kernel call
# returning float32 O and LSE, `attend_backward(do, q, k, v, o, lse, causal)`
# its backward (float32 dQ, dK, dV) given the merged O and LSE of its rows;
# `shift(arrays)` sends arrays to the next rank and returns a handle whose
# wait() gives the previous rank's (the only communication). Nothing sent or
# received is written afterwards, so a transfer may still be reading it.

def forward_steps(q, k, v, plan, attend, shift, xp=np):
    """One rank's ring forward: float32 O and LSE of its query rows. The
    transfer of the next step's K/V overlaps this step's calls."""
    o = lse = None
    for step, blocks in enumerate(plan):
        pending = shift([k, v]) if step < len(plan) - 1 else None
        for b in blocks:
            o_b, lse_b = attend(q[..., b.q_rows, :], k[..., b.k_rows, :],
                                v[..., b.k_rows, :], b.causal)
            if step == 0:  # covers every row (ring_plan)
                o, lse = o_b, lse_b
                continue
            rows = b.q_rows
            if b.q_start == 0 and b.q_stop == o.shape[-2]:
                o, lse = merge(o, lse, o_b, lse_b, xp)
            else:
                o[..., rows, :], lse[..., rows] = merge(
                    o[..., rows, :], lse[..., rows], o_b, lse_b, xp)
        if pending is not None:
            k, v = pending.wait()
    return o, lse


def backward_steps(do, q, k, v, o, lse, plan, attend_backward, shift, xp=np):
    """One rank's ring backward, in ring FlashAttention's order: the same
    calls as the forward, each with the merged O and LSE of its rows; dQ
    sums here, dK and dV sum in an accumulator that travels with the K/V it
    belongs to and, after a full turn, arrives back at its owner. Returns
    float32 dQ, dK, dV of this rank's rows."""
    world = len(plan)
    dq = acc = pending_acc = like = None  # like: K/V's shapes, float32
    for step, blocks in enumerate(plan):
        pending_kv = shift([k, v]) if step < world - 1 else None
        part = None  # this step's dK, dV of the source's rows
        for b in blocks:
            rows = b.q_rows
            g_q, g_k, g_v = attend_backward(
                do[..., rows, :], q[..., rows, :], k[..., b.k_rows, :],
                v[..., b.k_rows, :], o[..., rows, :], lse[..., rows], b.causal)
            if step == 0:  # covers every row and key (ring_plan)
                dq, part = g_q, [g_k, g_v]
                continue
            dq[..., rows, :] += g_q
            if part is None and b.k_start == 0 and b.k_stop == k.shape[-2]:
                part = [g_k, g_v]
                continue
            if part is None:
                part = [xp.zeros_like(t) for t in like]
            part[0][..., b.k_rows, :] += g_k
            part[1][..., b.k_rows, :] += g_v
        if step == 0:
            acc = like = part
        else:
            acc = pending_acc.wait()
            if part is not None:
                acc = [a + p for a, p in zip(acc, part)]
        pending_acc = shift(acc)
        if pending_kv is not None:
            k, v = pending_kv.wait()
    dk, dv = pending_acc.wait()
    return dq, dk, dv


class Ready:
    """A transfer that has already happened (one rank, or a simulation)."""

    def __init__(self, arrays):
        self.arrays = list(arrays)

    def wait(self):
        return self.arrays


class SimulatedRing:
    """A ring of `world` ranks as threads of one process, for checking the
    step loops without a process group: `run(fn)` calls fn(rank, shift) on
    every rank at once and returns the results by rank; `shift` hands each
    rank's arrays to the next rank (all ranks shift the same number of times,
    as on a real ring)."""

    def __init__(self, world, timeout=600.0):
        self.world = world
        self.timeout = timeout

    def run(self, fn):
        barrier = threading.Barrier(self.world, timeout=self.timeout)
        slots, results, errors = {}, [None] * self.world, []

        def body(rank):
            count = itertools.count()

            def shift(arrays):
                n = next(count)
                slots[n, rank] = list(arrays)
                barrier.wait()
                return Ready(slots.pop((n, (rank - 1) % self.world)))

            try:
                results[rank] = fn(rank, shift)
            except BaseException as e:  # noqa: BLE001 (re-raised below)
                errors.append(e)
                barrier.abort()

        threads = [threading.Thread(target=body, args=(r,))
                   for r in range(self.world)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise next((e for e in errors
                        if not isinstance(e, threading.BrokenBarrierError)),
                       errors[0])
        return results
