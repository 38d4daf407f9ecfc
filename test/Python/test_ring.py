"""flash_mlir.ring: a ring of per-chunk attentions, merged by LSE, equals
attention over the whole sequence (float64, numpy), for 1 to 4 ranks, causal
and not, load-balanced and contiguous sharding; the same calls' backward,
each given the merged O and LSE, sum to the whole sequence's gradients; and
the per-rank work of the load-balanced causal ring is even."""

import unittest

import numpy as np

from flash_mlir.ring import merge, mask_between, ring_calls, shards, Chunk


def attention(q, k, v, causal):
    """O and natural-log LSE of one call; causal is bottom-right aligned
    (row i sees keys j <= i + N - M), fully masked rows O = 0, LSE = -inf."""
    s = q @ k.T / np.sqrt(q.shape[-1])
    if causal:
        m, n = s.shape
        rows = np.arange(m)[:, None]
        cols = np.arange(n)[None, :]
        s = np.where(cols <= rows + n - m, s, -np.inf)
    top = s.max(axis=-1, keepdims=True)
    top = np.where(np.isneginf(top), 0.0, top)
    p = np.exp(s - top)
    total = p.sum(axis=-1)
    with np.errstate(divide="ignore"):
        lse = np.log(total) + top[:, 0]
    o = np.where(total[:, None] > 0, (p @ v) / np.maximum(total, 1e-300)[:, None], 0.0)
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
    s = q @ k.T * scale
    if causal:
        m, n = s.shape
        s = np.where(np.arange(n)[None, :] <= np.arange(m)[:, None] + n - m, s, -np.inf)
    p = np.where(np.isneginf(lse)[:, None], 0.0, np.exp(s - lse[:, None]))
    dv = p.T @ do
    dp = do @ v.T
    ds = p * (dp - (do * o).sum(axis=-1, keepdims=True))
    return ds @ k * scale, ds.T @ q * scale, dv


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

    def test_bad_shapes(self):
        with self.assertRaisesRegex(ValueError, "not a multiple of the 4 chunks"):
            shards(10, 2)
        with self.assertRaisesRegex(ValueError, "world size must be positive"):
            shards(8, 0)
        with self.assertRaisesRegex(ValueError, "overlap"):
            mask_between(Chunk(0, 8), Chunk(4, 12), causal=True)


if __name__ == "__main__":
    unittest.main()
