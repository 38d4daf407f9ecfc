"""flash_mlir.ring: a ring of per-chunk attentions, merged by LSE, equals
attention over the whole sequence (float64, numpy), for 1 to 4 ranks, causal
and not, load-balanced and contiguous sharding; the same calls' backward,
each given the merged O and LSE, sum to the whole sequence's gradients; and
the per-rank work of the load-balanced causal ring is even."""

import unittest

import numpy as np

from flash_mlir.ring import (Chunk, SimulatedRing, backward_steps, forward_steps,
                              gather_order, local_positions, mask_between,
                              merge, ring_calls, ring_plan, shards)


def t(x):
    return np.swapaxes(x, -1, -2)


def causal_mask(s):
    """Bottom-right causal: row i sees keys j <= i + N - M."""
    m, n = s.shape[-2:]
    return np.where(np.arange(n)[None, :] <= np.arange(m)[:, None] + n - m, s, -np.inf)


def attention(q, k, v, causal):
    """O and natural-log LSE of one call on [..., S, D]; causal is
    bottom-right aligned, fully masked rows O = 0, LSE = -inf."""
    s = q @ t(k) / np.sqrt(q.shape[-1])
    if causal:
        s = causal_mask(s)
    top = s.max(axis=-1, keepdims=True)
    top = np.where(np.isneginf(top), 0.0, top)
    p = np.exp(s - top)
    total = p.sum(axis=-1)
    with np.errstate(divide="ignore"):
        lse = np.log(total) + top[..., 0]
    o = np.where(total[..., None] > 0,
                 (p @ v) / np.maximum(total, 1e-300)[..., None], 0.0)
    return o, lse


def ring(q, k, v, world, causal, load_balanced):
    """Every rank's output rows, from its ring calls, placed back in order."""
    seq, d = q.shape
    held = shards(seq, world, load_balanced)
    o = np.zeros_like(q)
    lse = np.full(seq, -np.inf)
    for rank in range(world):
        parts = {qi: (np.zeros((len(c), d)), np.full(len(c), -np.inf))
                 for qi, c in enumerate(held[rank])}
        for call in ring_calls(rank, world, seq, causal, load_balanced):
            qc, kc = held[rank][call.q], held[call.source][call.k]
            got = attention(q[qc.start:qc.stop], k[kc.start:kc.stop],
                            v[kc.start:kc.stop], call.mask == "causal")
            parts[call.q] = merge(*parts[call.q], *got)
        for qi, c in enumerate(held[rank]):
            o[c.start:c.stop], lse[c.start:c.stop] = parts[qi]
    return o, lse


def attention_backward(q, k, v, o, lse, do, causal):
    """dQ, dK, dV of one call given the *global* O and LSE of its query rows
    (P = exp(S - LSE), D = rowsum(dO * O)): what each ring step's kernel
    call computes; the steps' sums are the whole sequence's gradients."""
    scale = 1 / np.sqrt(q.shape[-1])
    s = q @ t(k) * scale
    if causal:
        s = causal_mask(s)
    p = np.where(np.isneginf(lse)[..., None], 0.0, np.exp(s - lse[..., None]))
    dv = t(p) @ do
    dp = do @ t(v)
    ds = p * (dp - (do * o).sum(axis=-1, keepdims=True))
    return ds @ k * scale, t(ds) @ q * scale, dv


def ring_backward(q, k, v, do, world, causal, load_balanced):
    """Gradients from the ring's calls: dQ summed on the query's rank, dK and
    dV summed for the source rank's chunks (sent back around the ring)."""
    o, lse = ring(q, k, v, world, causal, load_balanced)
    held = shards(q.shape[0], world, load_balanced)
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    for rank in range(world):
        for call in ring_calls(rank, world, q.shape[0], causal, load_balanced):
            qc, kc = held[rank][call.q], held[call.source][call.k]
            rows, keys = slice(qc.start, qc.stop), slice(kc.start, kc.stop)
            g = attention_backward(q[rows], k[keys], v[keys], o[rows], lse[rows],
                                   do[rows], call.mask == "causal")
            dq[rows] += g[0]
            dk[keys] += g[1]
            dv[keys] += g[2]
    return dq, dk, dv


def covered(world, seq, causal, load_balanced):
    """How often ring_plan's blocks cover each (query, key) position pair."""
    count = np.zeros((seq, seq), dtype=int)
    for rank in range(world):
        rows = np.array(local_positions(rank, world, seq, load_balanced))
        for step in ring_plan(rank, world, seq, causal, load_balanced):
            for b in step:
                keys = np.array(local_positions(b.source, world, seq, load_balanced))
                hit = np.ones((b.q_stop - b.q_start, b.k_stop - b.k_start))
                if b.causal:
                    hit = np.isfinite(causal_mask(hit))
                count[np.ix_(rows[b.q_rows], keys[b.k_rows])] += hit.astype(int)
    return count


class Recorded:
    """A ring whose shift remembers what it sent and received, to check that
    the step loops never write an array a transfer may still be reading."""

    def __init__(self, shift):
        self.shift, self.seen = shift, []

    def __call__(self, arrays):
        self.seen += [(a, a.copy()) for a in arrays]
        handle = self.shift(arrays)
        got = handle.wait()
        self.seen += [(a, a.copy()) for a in got]
        return handle

    def untouched(self):
        return all(np.array_equal(a, c) for a, c in self.seen)


def ring_steps(q, k, v, do, world, causal, load_balanced):
    """The step loops on a simulated ring: (O, LSE, dQ, dK, dV) of the whole
    sequence, placed back in order (gather_order), and whether every array
    sent or received stayed untouched."""
    seq = q.shape[-2]

    def local(x, rank):
        return x[..., local_positions(rank, world, seq, load_balanced), :]

    def rank_fn(rank, shift):
        shift = Recorded(shift)
        plan = ring_plan(rank, world, seq, causal, load_balanced)
        mine = [local(x, rank) for x in (q, k, v, do)]
        o, lse = forward_steps(*mine[:3], plan, attention, shift)
        grads = backward_steps(mine[3], *mine[:3], o, lse, plan,
                               lambda do_, *a: attention_backward(*a[:5], do_, a[5]),
                               shift)
        return (o, lse[..., None]) + grads, shift.untouched()

    results = SimulatedRing(world).run(rank_fn)
    whole = []
    for i in range(5):
        pieces = [results[r][0][i][..., start:start + n, :]
                  for r, start, n in gather_order(seq, world, load_balanced)]
        whole.append(np.concatenate(pieces, axis=-2))
    whole[1] = whole[1][..., 0]
    return whole, all(r[1] for r in results)


class RingTest(unittest.TestCase):
    def test_backward_equals_whole_sequence(self):
        rng = np.random.default_rng(1)
        for world in (1, 2, 3):
            for causal in (False, True):
                seq = 8 * world * 2
                q, k, v, do = (rng.standard_normal((seq, 16)) for _ in range(4))
                o, lse = attention(q, k, v, causal)
                want = attention_backward(q, k, v, o, lse, do, causal)
                got = ring_backward(q, k, v, do, world, causal, load_balanced=True)
                for name, g, w in zip(("dq", "dk", "dv"), got, want):
                    with self.subTest(world=world, causal=causal, grad=name):
                        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)

    def test_equals_whole_sequence(self):
        rng = np.random.default_rng(0)
        for world in (1, 2, 3, 4):
            for causal in (False, True):
                for balanced in (False, True):
                    seq = 8 * world * 3
                    q, k, v = (rng.standard_normal((seq, 16)) for _ in range(3))
                    want_o, want_lse = attention(q, k, v, causal)
                    got_o, got_lse = ring(q, k, v, world, causal, balanced)
                    with self.subTest(world=world, causal=causal, balanced=balanced):
                        np.testing.assert_allclose(got_o, want_o, rtol=1e-12, atol=1e-12)
                        np.testing.assert_allclose(got_lse, want_lse, rtol=1e-12)

    def test_balanced_causal_work_is_even(self):
        for world in (2, 4, 8):
            work = [sum(2 if c.mask == "full" else 1
                        for c in ring_calls(r, world, 64 * world, causal=True))
                    for r in range(world)]
            self.assertEqual(len(set(work)), 1, work)
        # Contiguous sharding is not: the last rank does the most.
        work = [len(ring_calls(r, 4, 256, causal=True, load_balanced=False))
                for r in range(4)]
        self.assertEqual(work, [1, 2, 3, 4])

    def test_merge_of_empty_rows(self):
        o = np.ones((2, 3, 4))
        lse = np.array([[-np.inf, 0.5, -np.inf]] * 2)
        none = np.full((2, 3), -np.inf)
        got_o, got_lse = merge(o, lse, np.zeros_like(o), none)
        self.assertTrue(np.isneginf(got_lse[:, 0]).all())
        np.testing.assert_array_equal(got_o[:, 0], 0.0)
        np.testing.assert_allclose(got_o[:, 1], 1.0)
        np.testing.assert_allclose(got_lse[:, 1], 0.5)

    def test_plan_covers_each_visible_pair_once(self):
        for world in (1, 2, 3, 4):
            for causal in (False, True):
                for balanced in (False, True):
                    seq = 4 * world * 2
                    want = np.ones((seq, seq), dtype=int)
                    if causal:
                        want = np.tril(want)
                    with self.subTest(world=world, causal=causal, balanced=balanced):
                        np.testing.assert_array_equal(
                            covered(world, seq, causal, balanced), want)

    def test_plan_shape(self):
        for world in (1, 2, 3, 4, 8):
            seq = 16 * world
            rows = seq // world
            for causal in (False, True):
                for balanced in (False, True):
                    for rank in range(world):
                        plan = ring_plan(rank, world, seq, causal, balanced)
                        with self.subTest(world=world, causal=causal,
                                          balanced=balanced, rank=rank):
                            # Step 0: one block over every local row and key.
                            (first,) = plan[0]
                            self.assertEqual((first.q_start, first.q_stop,
                                              first.k_start, first.k_stop),
                                             (0, rows, 0, rows))
                            self.assertEqual(first.causal, causal)
                            self.assertTrue(all(not b.causal for step in plan[1:]
                                                for b in step))
                            self.assertEqual([b.source for step in plan for b in step],
                                             [(rank - s) % world for s, step in
                                              enumerate(plan) for _ in step])
                            # One call per step, but for the contiguous causal
                            # ring's skipped steps (keys after every query).
                            calls = [len(step) for step in plan]
                            if causal and not balanced:
                                want = [1 if (rank - s) % world <= rank else 0
                                        for s in range(world)]
                            else:
                                want = [1] * world
                            self.assertEqual(calls, want)

    def test_step_loops_equal_whole_sequence(self):
        rng = np.random.default_rng(2)
        for world in (1, 2, 3, 4):
            for causal in (False, True):
                for balanced in (False, True):
                    seq = 4 * world * 2
                    q, k, v, do = (rng.standard_normal((2, seq, 8)) for _ in range(4))
                    o, lse = attention(q, k, v, causal)
                    want = [o, lse, *attention_backward(q, k, v, o, lse, do, causal)]
                    got, untouched = ring_steps(q, k, v, do, world, causal, balanced)
                    with self.subTest(world=world, causal=causal, balanced=balanced):
                        self.assertTrue(untouched, "an array was written after "
                                        "it was sent or received")
                        for name, g, w in zip(("o", "lse", "dq", "dk", "dv"), got, want):
                            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12,
                                                       err_msg=name)

    def test_gather_order(self):
        for world in (1, 2, 3):
            for balanced in (False, True):
                seq = 6 * world * 2
                local = [local_positions(r, world, seq, balanced) for r in range(world)]
                got = [p for r, start, n in gather_order(seq, world, balanced)
                       for p in local[r][start:start + n]]
                self.assertEqual(got, list(range(seq)))

    def test_simulated_ring(self):
        def fn(rank, shift):
            first = shift([rank])
            second = shift(first.wait())
            return first.wait()[0], second.wait()[0]

        self.assertEqual(SimulatedRing(3).run(fn), [(2, 1), (0, 2), (1, 0)])
        self.assertEqual(SimulatedRing(1).run(fn), [(0, 0)])

        def failing(rank, shift):
            if rank == 1:
                raise KeyError("rank 1 failed")
            shift([rank])

        with self.assertRaisesRegex(KeyError, "rank 1 failed"):
            SimulatedRing(3, timeout=30).run(failing)

    def test_bad_shapes(self):
        with self.assertRaisesRegex(ValueError, "not a multiple of the 4 chunks"):
            shards(10, 2)
        with self.assertRaisesRegex(ValueError, "world size must be positive"):
            shards(8, 0)
        with self.assertRaisesRegex(ValueError, "overlap"):
            mask_between(Chunk(0, 8), Chunk(4, 12), causal=True)


if __name__ == "__main__":
    unittest.main()
