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

With `load_balanced` sharding (what PyTorch's context parallel calls the
head-tail layout) the sequence is cut into 2 * world chunks and rank r holds
chunks r and 2 * world - 1 - r, so that under a causal mask every rank does
the same work.

The array functions take an array namespace `xp` (numpy by default; torch
works the same: `logaddexp`, `exp`, `where`, `isneginf`, `zeros_like`).
"""

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
