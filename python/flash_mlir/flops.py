"""FLOP counts of the benchmarks (no torch: CI tests this module).

FlashAttention's convention: a square attention's forward is 4 * D flops per
(query, key) pair it computes, all seq^2 pairs, or half of them under a
causal mask; forward + backward 3.5x the forward, the backward alone 2.5x.
"""


def visible_pairs(seq, causal, window=None):
    """(query, key) pairs a square attention computes: all of them, half
    under a causal mask (the convention, diagonal included), and with a
    sliding window only key j >= i - window of row i (flash.attention's
    window: row i sees keys i - window ... i when causal)."""
    if window is None:
        return seq * seq / (2 if causal else 1)
    w = min(window, seq)
    # Rows i < w see keys 0 ... i (causal) or all of them; the others w + 1
    # keys (causal) or seq - (i - w).
    if causal:
        return w * (w + 1) / 2 + (seq - w) * (w + 1)
    rest = seq - w
    return w * seq + rest * seq - rest * (rest - 1) / 2


def forward_flops(batch, heads, seq, head_dim, causal, window=None):
    return 4 * batch * heads * head_dim * visible_pairs(seq, causal, window)
