"""Float64 reference of flash.attention and flash.attention_backward.

Independent of the compiler: plain numpy on the rank-4 layout
Q [B, Hq, M, D], K/V [B, Hkv, N, D/Dv]. Inputs of any floating dtype are
taken at their exact values and computed in float64.
"""

import numpy as np


def _scores(q, k, scale, causal, bias, mask, window=None, softcap=None,
            alibi=None, batch_bias=None):
    b, hq, m, d = q.shape
    hkv, n = k.shape[1], k.shape[2]
    group = hq // hkv
    k_rep = np.repeat(k.astype(np.float64), group, axis=1)
    s = scale * np.einsum("bhmd,bhnd->bhmn", q.astype(np.float64), k_rep)
    # The score modifications of score_mod, before the bias and the masks.
    if softcap is not None:
        s = softcap * np.tanh(s / softcap)
    if alibi is not None:
        rel = np.arange(n)[None, :] - np.arange(m)[:, None]
        s = s + alibi.astype(np.float64)[None, :, None, None] * rel
    if batch_bias is not None:
        s = s + batch_bias.astype(np.float64)[:, None, None, None]
    if bias is not None:
        s = s + np.broadcast_to(bias.astype(np.float64), s.shape)
    hidden = np.zeros(s.shape, dtype=bool)
    i = np.arange(m)[:, None]
    j = np.arange(n)[None, :]
    if causal:
        hidden |= np.broadcast_to(j > i + (n - m), s.shape)
    if window is not None:
        # A window past M + N hides nothing more; clamped, i + (N - M) - window
        # cannot wrap around in int64 (window = INT64_MAX did).
        window = min(int(window), m + n)
        hidden |= np.broadcast_to(j < i + (n - m) - window, s.shape)
    if mask is not None:
        hidden |= ~np.broadcast_to(mask.astype(bool), s.shape)
    s = np.where(hidden, -np.inf, s)
    return s


def _softmax(s, sinks=None):
    """Returns (P, LSE, P of the sinks or None). `sinks` (one logit per query
    head) join each row as one more score whose value row is zero."""
    if sinks is not None:
        column = np.broadcast_to(
            sinks.astype(np.float64)[None, :, None, None], s.shape[:-1] + (1,))
        p, lse, _ = _softmax(np.concatenate([s, column], axis=-1))
        return p[..., :-1], lse, p[..., -1]
    # N = 0: every row is fully masked.
    mx = s.max(axis=-1, keepdims=True, initial=-np.inf)
    safe = np.where(np.isneginf(mx), 0.0, mx)
    e = np.exp(s - safe)
    l = e.sum(axis=-1, keepdims=True)
    p = np.where(l == 0.0, 0.0, e / np.where(l == 0.0, 1.0, l))
    with np.errstate(divide="ignore"):
        lse = (safe + np.log(l))[..., 0]
    return p, lse, None


def default_scale(d):
    # D = 0: the scores are all 0 and any scale leaves them so (1/sqrt(0) =
    # inf would make them NaN); flash.attention takes 1.
    return 1.0 / np.sqrt(d) if d else 1.0


def attention(q, k, v, scale=None, causal=False, bias=None, mask=None,
              window=None, softcap=None, alibi=None, sinks=None,
              key_lengths=None, batch_bias=None):
    """Returns (O, LSE) in float64. `softcap` c rewrites each scaled score s
    to c tanh(s / c); `alibi` (one slope per query head) adds
    slope[h] (j - i); `sinks` (one logit per query head) join every row's
    softmax. `key_lengths` [B]: sequence b is attention over its first
    key_lengths[b] keys alone (clamped to [0, N]), each computed on its own
    (the bias and mask cut to those keys)."""
    if scale is None:
        scale = default_scale(q.shape[-1])
    if key_lengths is not None:
        b, hq, m, _ = q.shape
        n = k.shape[2]
        o = np.zeros(q.shape[:3] + (v.shape[3],))
        lse = np.zeros(q.shape[:3])
        for i in range(b):
            length = min(max(int(key_lengths[i]), 0), n)

            def cut(t):
                if t is None:
                    return None
                full = np.broadcast_to(t, (b, hq, m, n))
                return full[i:i + 1, :, :, :length]
            o[i:i + 1], lse[i:i + 1] = attention(
                q[i:i + 1], k[i:i + 1, :, :length], v[i:i + 1, :, :length],
                scale, causal, cut(bias), cut(mask), window, softcap, alibi,
                sinks, batch_bias=None if batch_bias is None else batch_bias[i:i + 1])
        return o, lse
    s = _scores(q, k, scale, causal, bias, mask, window, softcap, alibi,
                batch_bias)
    p, lse, _ = _softmax(s, sinks)
    group = q.shape[1] // k.shape[1]
    v_rep = np.repeat(v.astype(np.float64), group, axis=1)
    o = np.einsum("bhmn,bhnd->bhmd", p, v_rep)
    return o, lse


def attention_backward(q, k, v, do, scale=None, causal=False, bias=None,
                       mask=None, window=None, o=None, softcap=None, alibi=None,
                       sinks=None, batch_bias=None):
    """Returns (dQ, dK, dV) in float64, the gradient of attention(), and
    d sinks after them when `sinks` is given."""
    if scale is None:
        scale = default_scale(q.shape[-1])
    s = _scores(q, k, scale, causal, bias, mask, window, softcap, alibi,
                batch_bias)
    p, _, p_sink = _softmax(s, sinks)
    b, hq, m, d = q.shape
    hkv, n = k.shape[1], k.shape[2]
    group = hq // hkv
    k_rep = np.repeat(k.astype(np.float64), group, axis=1)
    v_rep = np.repeat(v.astype(np.float64), group, axis=1)
    do = do.astype(np.float64)
    if o is None:
        o = np.einsum("bhmn,bhnd->bhmd", p, v_rep)
    o = o.astype(np.float64)
    dv_rep = np.einsum("bhmn,bhmd->bhnd", p, do)
    dp = np.einsum("bhmd,bhnd->bhmn", do, v_rep)
    di = (do * o).sum(axis=-1, keepdims=True)
    ds = p * (dp - di)
    if softcap is not None:
        # d/ds c tanh(s / c) = 1 - tanh(s / c)^2 at the scaled scores.
        raw = scale * np.einsum("bhmd,bhnd->bhmn", q.astype(np.float64), k_rep)
        ds = ds * (1.0 - np.tanh(raw / softcap) ** 2)
    dq = scale * np.einsum("bhmn,bhnd->bhmd", ds, k_rep)
    dk_rep = scale * np.einsum("bhmn,bhmd->bhnd", ds, q.astype(np.float64))
    dk = dk_rep.reshape(b, hkv, group, n, d).sum(axis=2)
    dv = dv_rep.reshape(b, hkv, group, n, v.shape[-1]).sum(axis=2)
    if sinks is not None:
        # The sink's dP is 0 (its value row is zero): dS = P (0 - Di).
        dsinks = -(p_sink * di[..., 0]).sum(axis=(0, 2))
        return dq, dk, dv, dsinks
    return dq, dk, dv


def _spans(cu, tokens):
    """(first, end) of each sequence of the offsets `cu`, clamped to
    [0, tokens]."""
    cu = np.clip(np.asarray(cu, dtype=np.int64), 0, tokens)
    return [(int(cu[s]), max(int(cu[s + 1]), int(cu[s])))
            for s in range(len(cu) - 1)]


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, key_lengths=None,
                     sinks=None, batch_bias=None, **kw):
    """attention() of packed variable-length sequences: Q [1, Hq, Tq, D],
    K/V [1, Hkv, Tk, D/Dv]; sequence s is rows [cu_q[s], cu_q[s + 1]) of Q
    against rows [cu_k[s], cu_k[s + 1]) of K and V (the first
    key_lengths[s] of them when given), computed on its own. Rows in no
    sequence give O = 0 and LSE = -inf (the sink with sinks)."""
    _, hq, tq, _ = q.shape
    o = np.zeros((1, hq, tq, v.shape[3]))
    lse = np.full((1, hq, tq), -np.inf)
    if sinks is not None:
        lse[:] = sinks.astype(np.float64)[None, :, None]
    for s, ((q0, q1), (k0, k1)) in enumerate(zip(_spans(cu_seqlens_q, tq),
                                                  _spans(cu_seqlens_k, k.shape[2]))):
        if key_lengths is not None:
            k1 = k0 + min(max(int(key_lengths[s]), 0), k1 - k0)
        o[:, :, q0:q1], lse[:, :, q0:q1] = attention(
            q[:, :, q0:q1], k[:, :, k0:k1], v[:, :, k0:k1], sinks=sinks,
            batch_bias=None if batch_bias is None else batch_bias[s:s + 1], **kw)
    return o, lse


def attention_backward_varlen(q, k, v, do, cu_seqlens_q, cu_seqlens_k, o=None,
                              sinks=None, batch_bias=None, **kw):
    """attention_backward() of packed sequences (attention_varlen's layout):
    each sequence on its own; the rows in no sequence get zero gradients."""
    tq, tk = q.shape[2], k.shape[2]
    dq, dk, dv = (np.zeros(t.shape) for t in (q, k, v))
    dsinks = np.zeros(q.shape[1]) if sinks is not None else None
    for s, ((q0, q1), (k0, k1)) in enumerate(zip(_spans(cu_seqlens_q, tq),
                                                  _spans(cu_seqlens_k, tk))):
        grads = attention_backward(
            q[:, :, q0:q1], k[:, :, k0:k1], v[:, :, k0:k1], do[:, :, q0:q1],
            o=None if o is None else o[:, :, q0:q1], sinks=sinks,
            batch_bias=None if batch_bias is None else batch_bias[s:s + 1], **kw)
        dq[:, :, q0:q1], dk[:, :, k0:k1], dv[:, :, k0:k1] = grads[:3]
        if sinks is not None:
            dsinks += grads[3]
    if sinks is not None:
        return dq, dk, dv, dsinks
    return dq, dk, dv
