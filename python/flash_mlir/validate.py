"""Argument checks of the PyTorch op, written without torch so that CI (which
has no GPU and no recent torch) runs them.

Every check works on `TensorInfo`, a plain description of a tensor (name,
shape, element strides, dtype name, device, data pointer). `flash_mlir.torch`
describes its tensors this way and calls these functions before it launches
anything: a failure is a `TypeError` (wrong kind of value, wrong dtype) or a
`ValueError` (wrong device, rank, shape, value) that names the tensor and
the expected and actual value. Nothing is launched on input that fails.
"""

import math
from dataclasses import dataclass, field
from typing import Optional, Sequence, Tuple

# Element types the kernels take for Q, K, V (and so O, dO, dQ, dK, dV).
KERNEL_DTYPES = ("float16", "bfloat16")
BIAS_DTYPES = ("float16", "bfloat16", "float32")
MASK_DTYPE = "bool"
LSE_DTYPE = "float32"
ELEMENT_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8,
                 "bool": 1}
# The compiler takes any head dimension that is a multiple of 16 up to 256.
HEAD_DIM_MULTIPLE = 16
MAX_HEAD_DIM = 256


@dataclass(frozen=True)
class TensorInfo:
    """What the checks need to know of a tensor."""
    name: str
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]
    dtype: str            # "float16", "bfloat16", "float32", "bool", ...
    device: str           # "cuda:0", "cpu", "meta", ...
    data_ptr: int = 0

    @property
    def rank(self):
        return len(self.shape)

    @property
    def element_bytes(self):
        return ELEMENT_BYTES.get(self.dtype, 0)


@dataclass(frozen=True)
class AttentionShape:
    """The sizes of one attention call, agreed by all its tensors."""
    batch: int
    query_heads: int
    kv_heads: int
    queries: int          # M
    keys: int             # N
    head_dim: int         # D
    value_dim: int        # Dv
    dtype: str
    device: str

    @property
    def group(self):
        return self.query_heads // self.kv_heads

    def output_shape(self):
        return (self.batch, self.query_heads, self.queries, self.value_dim)

    def lse_shape(self):
        return (self.batch, self.query_heads, self.queries)

    def score_shape(self):
        return (self.batch, self.query_heads, self.queries, self.keys)


def _fmt(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _require_tensor(t, name):
    if not isinstance(t, TensorInfo):
        raise TypeError(f"{name}: expected a tensor, got {type(t).__name__}")


def check_device(tensors: Sequence[TensorInfo]):
    """All tensors on one CUDA device."""
    first = None
    for t in tensors:
        if not t.device.startswith("cuda"):
            raise ValueError(f"{t.name}: expected a CUDA tensor, got one on "
                             f"'{t.device}'")
        if first is None:
            first = t
        elif t.device != first.device:
            raise ValueError(f"{t.name}: on {t.device}, but {first.name} is on "
                             f"{first.device}; all tensors must be on one "
                             "device")


def check_dtype(t: TensorInfo, allowed, what=""):
    if t.dtype not in allowed:
        names = " or ".join(allowed)
        raise TypeError(f"{t.name}: expected {what}{names}, got {t.dtype}")


def check_rank(t: TensorInfo, rank, layout):
    if t.rank != rank:
        raise ValueError(f"{t.name}: expected a rank-{rank} tensor {layout}, "
                         f"got shape {_fmt(t.shape)}")


def _check_dim(t, dim, expected, what, against):
    if t.shape[dim] != expected:
        raise ValueError(f"{t.name}: {what} is {t.shape[dim]} but {against} "
                         f"(expected shape with {what} = {expected}, got "
                         f"{_fmt(t.shape)})")


def check_broadcastable(t: TensorInfo, target, what):
    """`t` broadcasts right-aligned to `target` (each dim equal or 1)."""
    if t.rank > len(target):
        raise ValueError(f"{t.name}: a {what} of rank {t.rank} cannot "
                         f"broadcast to [B, Hq, M, N] = {_fmt(target)}")
    for i, size in enumerate(reversed(t.shape)):
        want = target[len(target) - 1 - i]
        if size != want and size != 1:
            raise ValueError(f"{t.name}: shape {_fmt(t.shape)} does not "
                             f"broadcast to [B, Hq, M, N] = {_fmt(target)} "
                             f"(dim {t.rank - 1 - i} is {size}, expected "
                             f"{want} or 1)")


def check_scale(scale):
    if scale is None:
        return
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise TypeError(f"scale: expected a float, got {type(scale).__name__}")
    if not math.isfinite(scale):
        raise ValueError(f"scale: expected a finite value, got {scale}")


def check_window(window):
    if window is None:
        return
    if isinstance(window, bool) or not isinstance(window, int):
        raise TypeError(f"window: expected an int, got {type(window).__name__}")
    if window < 0:
        raise ValueError(f"window: expected a value >= 0, got {window}")
    if window >= 2 ** 62:
        raise ValueError(f"window: {window} is too large (at most 2^62 - 1; "
                         "use window=None for no window)")


def check_softcap(softcap):
    """Softcapping's c (each scaled score s becomes c tanh(s / c)): None, or
    a finite value > 0."""
    if softcap is None:
        return
    if isinstance(softcap, bool) or not isinstance(softcap, (int, float)):
        raise TypeError(f"softcap: expected a float, got "
                        f"{type(softcap).__name__}")
    if not (math.isfinite(softcap) and softcap > 0):
        raise ValueError(f"softcap: expected a finite value > 0, got {softcap}")


def check_attention(q: TensorInfo, k: TensorInfo, v: TensorInfo,
                    bias: Optional[TensorInfo] = None,
                    mask: Optional[TensorInfo] = None,
                    scale=None, window=None,
                    dtypes=KERNEL_DTYPES,
                    sinks: Optional[TensorInfo] = None,
                    paged=False) -> AttentionShape:
    """The forward's inputs: Q [B, Hq, M, D], K [B, Hkv, N, D],
    V [B, Hkv, N, Dv], Hq % Hkv == 0, one CUDA device, one kernel dtype;
    bias (f16/bf16/f32) and mask (bool) broadcastable to [B, Hq, M, N];
    sinks (f16/bf16/f32) [Hq]. `paged`: K and V are pages [num_pages, Hkv,
    page_size, D] (their leading size is no batch; N is then a page's)."""
    for t, name in ((q, "q"), (k, "k"), (v, "v")):
        _require_tensor(t, name)
    layout = "[B, H, S, D]"
    for t in (q, k, v):
        check_rank(t, 4, layout)
    extra = [t for t in (bias, mask, sinks) if t is not None]
    for t in extra:
        _require_tensor(t, t.name)
    check_device([q, k, v] + extra)
    check_dtype(q, dtypes)
    for t in (k, v):
        if t.dtype != q.dtype:
            raise TypeError(f"{t.name}: expected {q.dtype} (the dtype of "
                            f"{q.name}), got {t.dtype}")
    b, hq, m, d = q.shape
    if paged:
        _check_dim(v, 0, k.shape[0], "pages", f"{k.name} has {k.shape[0]} pages")
    else:
        _check_dim(k, 0, b, "batch", f"{q.name} has batch {b}")
        _check_dim(v, 0, b, "batch", f"{q.name} has batch {b}")
    hkv, n = k.shape[1], k.shape[2]
    _check_dim(v, 1, hkv, "heads", f"{k.name} has {hkv} heads")
    _check_dim(v, 2, n, "sequence length", f"{k.name} has {n} keys")
    _check_dim(k, 3, d, "head dim", f"{q.name} has head dim {d}")
    if hkv == 0 or hq % hkv:
        raise ValueError(f"{k.name}: {hkv} key/value heads do not divide the "
                         f"{hq} query heads of {q.name} (grouped-query "
                         "attention needs Hq % Hkv == 0)")
    dv = v.shape[3]
    for t, size in ((q, d), (v, dv)):
        if size == 0 or size % HEAD_DIM_MULTIPLE or size > MAX_HEAD_DIM:
            raise ValueError(f"{t.name}: head dim {size} is not supported "
                             f"(a multiple of {HEAD_DIM_MULTIPLE} up to "
                             f"{MAX_HEAD_DIM}; shape {_fmt(t.shape)})")
    shape = AttentionShape(b, hq, hkv, m, n, d, dv, q.dtype, q.device)
    if bias is not None:
        check_dtype(bias, BIAS_DTYPES, "a bias of ")
        check_broadcastable(bias, shape.score_shape(), "bias")
    if mask is not None:
        check_dtype(mask, (MASK_DTYPE,), "a mask of ")
        check_broadcastable(mask, shape.score_shape(), "mask")
    if sinks is not None:
        check_dtype(sinks, BIAS_DTYPES, "sinks of ")
        if tuple(sinks.shape) != (hq,):
            raise ValueError(f"{sinks.name}: expected one sink per query head, "
                             f"shape [Hq] = {_fmt((hq,))}, got "
                             f"{_fmt(sinks.shape)}")
    check_scale(scale)
    check_window(window)
    return shape


def check_output(t: TensorInfo, shape: AttentionShape, what="output"):
    """O (or dO): [B, Hq, M, Dv] in the inputs' dtype, on their device."""
    check_device([TensorInfo("q", (), (), shape.dtype, shape.device), t])
    if t.dtype != shape.dtype:
        raise TypeError(f"{t.name}: expected {shape.dtype} (the dtype of q), "
                        f"got {t.dtype}")
    if tuple(t.shape) != shape.output_shape():
        raise ValueError(f"{t.name}: expected the {what} shape "
                         f"[B, Hq, M, Dv] = {_fmt(shape.output_shape())}, got "
                         f"{_fmt(t.shape)}")


def check_lse(t: TensorInfo, shape: AttentionShape):
    """LSE: [B, Hq, M] float32."""
    check_device([TensorInfo("q", (), (), shape.dtype, shape.device), t])
    check_dtype(t, (LSE_DTYPE,))
    if tuple(t.shape) != shape.lse_shape():
        raise ValueError(f"{t.name}: expected the log-sum-exp shape "
                         f"[B, Hq, M] = {_fmt(shape.lse_shape())}, got "
                         f"{_fmt(t.shape)}")


def check_backward(grad_output: TensorInfo, q, k, v, output: TensorInfo,
                   lse: TensorInfo, bias=None, mask=None, scale=None,
                   window=None, dtypes=KERNEL_DTYPES,
                   sinks=None) -> AttentionShape:
    """The backward's inputs: the forward's, plus O and dO [B, Hq, M, Dv]
    and LSE [B, Hq, M]."""
    shape = check_attention(q, k, v, bias, mask, scale, window, dtypes,
                            sinks=sinks)
    for t, name in ((grad_output, "grad_output"), (output, "output"),
                    (lse, "lse")):
        _require_tensor(t, name)
    check_output(output, shape, "output")
    check_output(grad_output, shape, "output gradient")
    check_lse(lse, shape)
    return shape


# Offsets and cache lengths of the serving calls: int32, as FlashAttention's.
INDEX_DTYPE = "int32"
# The page sizes of a paged KV cache: multiples of 16 up to 256.
PAGE_MULTIPLE, MAX_PAGE_SIZE = 16, 256


def packed_view(t: TensorInfo) -> TensorInfo:
    """[T, H, D] as the kernels' [1, H, T, D] (torch: t.unsqueeze(0)
    .transpose(1, 2))."""
    (tokens, heads, width), (st, sh, sd) = t.shape, t.strides
    return TensorInfo(t.name, (1, heads, tokens, width),
                      (tokens * st, sh, st, sd), t.dtype, t.device, t.data_ptr)


def heads_second_view(t: TensorInfo) -> TensorInfo:
    """[B, S, H, D] as the kernels' [B, H, S, D] (torch: t.transpose(1, 2))."""
    b, s, h, d = t.shape
    sb, ss, sh, sd = t.strides
    return TensorInfo(t.name, (b, h, s, d), (sb, sh, ss, sd), t.dtype,
                      t.device, t.data_ptr)


def _check_bound(value, name):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name}: expected a value >= 0, got {value}")


def _check_index_tensor(t: TensorInfo, rank, layout, device):
    check_rank(t, rank, layout)
    check_dtype(t, (INDEX_DTYPE,))
    check_device([TensorInfo("q", (), (), "", device), t])


def check_varlen(q: TensorInfo, k: TensorInfo, v: TensorInfo,
                 cu_seqlens_q: TensorInfo, cu_seqlens_k: TensorInfo,
                 max_seqlen_q, max_seqlen_k, scale=None, window=None,
                 sinks: Optional[TensorInfo] = None) -> AttentionShape:
    """Packed variable-length sequences (FlashAttention's
    flash_attn_varlen_func, PyTorch's varlen_attn): Q [Tq, Hq, D],
    K [Tk, Hkv, D], V [Tk, Hkv, Dv], cu_seqlens_q and cu_seqlens_k int32
    [S + 1] on the same device, max_seqlen_q and max_seqlen_k ints >= 0.
    Returns the AttentionShape of the kernels' [1, H, T, D] views."""
    for t, name in ((q, "q"), (k, "k"), (v, "v"),
                    (cu_seqlens_q, "cu_seqlens_q"),
                    (cu_seqlens_k, "cu_seqlens_k")):
        _require_tensor(t, name)
    for t in (q, k, v):
        check_rank(t, 3, "[T, H, D] (packed tokens)")
    shape = check_attention(packed_view(q), packed_view(k), packed_view(v),
                            scale=scale, window=window, sinks=sinks)
    for t in (cu_seqlens_q, cu_seqlens_k):
        _check_index_tensor(t, 1, "[S + 1]", shape.device)
    check_cache_and_packing({"cu_seqlens_q": cu_seqlens_q,
                             "cu_seqlens_k": cu_seqlens_k}, shape)
    _check_bound(max_seqlen_q, "max_seqlen_q")
    _check_bound(max_seqlen_k, "max_seqlen_k")
    return shape


def check_varlen_backward(grad_output: TensorInfo, q, k, v,
                          output: TensorInfo, lse: TensorInfo, cu_seqlens_q,
                          cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                          scale=None, window=None,
                          sinks=None) -> AttentionShape:
    """check_varlen's inputs, plus O and dO [Tq, Hq, Dv] and the LSE
    [Hq, Tq] float32."""
    shape = check_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                         max_seqlen_k, scale, window, sinks)
    for t, name, what in ((output, "output", "output"),
                          (grad_output, "grad_output", "output gradient")):
        _require_tensor(t, name)
        check_rank(t, 3, "[T, H, D] (packed tokens)")
        check_output(packed_view(t), shape, what)
    _require_tensor(lse, "lse")
    check_rank(lse, 2, "[Hq, Tq]")
    check_lse(TensorInfo(lse.name, (1,) + tuple(lse.shape),
                         (0,) + tuple(lse.strides), lse.dtype, lse.device,
                         lse.data_ptr), shape)
    return shape


def check_kvcache(q: TensorInfo, k_cache: TensorInfo, v_cache: TensorInfo,
                  cache_seqlens: TensorInfo,
                  block_table: Optional[TensorInfo] = None,
                  k: Optional[TensorInfo] = None,
                  v: Optional[TensorInfo] = None, scale=None, window=None,
                  sinks: Optional[TensorInfo] = None) -> AttentionShape:
    """FlashAttention's flash_attn_with_kvcache: Q [B, M, Hq, D]; the cache
    K [B, N, Hkv, D] and V [B, N, Hkv, Dv], or with `block_table` (int32
    [B, P]) pages [num_pages, page_size, Hkv, D] (page_size a multiple of
    16 up to 256; N = P x page_size); cache_seqlens int32 [B]; new keys and
    values `k` [B, Mk, Hkv, D] and `v` [B, Mk, Hkv, Dv] (Mk <= N) to append.
    Returns the AttentionShape of the kernels' [B, H, S, D] views with N
    keys."""
    for t, name in ((q, "q"), (k_cache, "k_cache"), (v_cache, "v_cache"),
                    (cache_seqlens, "cache_seqlens")):
        _require_tensor(t, name)
    layout = "[num_pages, page_size, H, D]" if block_table is not None \
        else "[B, S, H, D]"
    check_rank(q, 4, "[B, S, H, D]")
    for t in (k_cache, v_cache):
        check_rank(t, 4, layout)
    paged = block_table is not None
    shape = check_attention(heads_second_view(q), heads_second_view(k_cache),
                            heads_second_view(v_cache), scale=scale,
                            window=window, sinks=sinks, paged=paged)
    _check_index_tensor(cache_seqlens, 1, "[B]", shape.device)
    _check_dim(cache_seqlens, 0, shape.batch, "batch",
               f"{q.name} has batch {shape.batch}")
    if paged:
        _require_tensor(block_table, "block_table")
        _check_index_tensor(block_table, 2, "[B, P]", shape.device)
        _check_dim(block_table, 0, shape.batch, "batch",
                   f"{q.name} has batch {shape.batch}")
        page = k_cache.shape[1]
        if page == 0 or page % PAGE_MULTIPLE or page > MAX_PAGE_SIZE:
            raise ValueError(f"{k_cache.name}: page size {page} is not "
                             f"supported (a multiple of {PAGE_MULTIPLE} up "
                             f"to {MAX_PAGE_SIZE}; shape "
                             f"{_fmt(k_cache.shape)})")
        shape = AttentionShape(shape.batch, shape.query_heads, shape.kv_heads,
                               shape.queries, block_table.shape[1] * page,
                               shape.head_dim, shape.value_dim, shape.dtype,
                               shape.device)
    if (k is None) != (v is None):
        raise ValueError("k and v: the new keys and values come together")
    if k is not None:
        for new, cache, width in ((k, k_cache, shape.head_dim),
                                  (v, v_cache, shape.value_dim)):
            check_rank(new, 4, "[B, S, H, D]")
            check_device([q, new])
            if new.dtype != q.dtype:
                raise TypeError(f"{new.name}: expected {q.dtype} (the dtype "
                                f"of {q.name}), got {new.dtype}")
            want = (shape.batch, new.shape[1], shape.kv_heads, width)
            if tuple(new.shape) != want:
                raise ValueError(f"{new.name}: expected [B, Mk, Hkv, D] = "
                                 f"{_fmt(want)} (Hkv and D of {cache.name}), "
                                 f"got {_fmt(new.shape)}")
        if k.shape[1] > shape.keys:
            raise ValueError(f"{k.name}: {k.shape[1]} new keys do not fit a "
                             f"cache of {shape.keys}")
    return shape


# Query rows up to which a grouped-query call packs its query heads.
PACKED_QUERY_ROWS = 16


def query_head_packing(shape: AttentionShape, tensors, causal=False,
                       window=None, score_operands=False):
    """FlashAttention-2's packing of grouped query heads for decoding: with
    G = Hq / Hkv > 1 and few query rows (M <= PACKED_QUERY_ROWS), the G heads
    of a KV head become G * M rows of one head, so that each K/V block is read
    once for all of them instead of once per query head. Valid when every row
    sees the same keys (no bias or mask, `score_operands`; sinks, which
    differ per head, the caller folds into O and the LSE afterwards
    (torch.fold_sinks); causal or a window only with
    M = 1, whose one row sees every key, or the last W + 1 under a window W:
    those keys then become the call's, unmasked) and each tensor's (head,
    row) dimensions merge into one strided dimension. `tensors` are the
    Q-shaped TensorInfos (Q, O): returns {name: (shape, strides)} of their
    packed views (the LSE [B, Hq, M] is the runtime's own, contiguous) and
    "keys_from", the first key of the call, or None."""
    g, m = shape.group, shape.queries
    if g == 1 or m > PACKED_QUERY_ROWS or score_operands or \
            (m != 1 and (causal or window is not None)):
        return None
    packed = {"keys_from": 0}
    if window is not None:
        packed["keys_from"] = max(shape.keys - 1 - window, 0)
    for t in tensors:
        b, _, _, width = t.shape
        sb, sh, sm, sd = t.strides
        if m != 1 and sh != m * sm:
            return None
        packed[t.name] = ((b, shape.kv_heads, g * m, width),
                          (sb, g * sh, sh if m == 1 else sm, sd))
    return packed


def rows_aligned(t: TensorInfo) -> bool:
    """The fast kernels' rule: unit inner stride, every other stride and the
    start a multiple of 16 bytes (zero strides of broadcast dims included)."""
    per16 = max(1, 16 // max(1, t.element_bytes))
    if t.data_ptr % 16:
        return False
    if t.strides and t.shape[-1] > 1 and t.strides[-1] != 1:
        return False
    return all(s % per16 == 0 for s in t.strides[:-1])


def inner_stride_unit(t: TensorInfo) -> bool:
    """The fast kernels' rule for the LSE (read element by element, by
    cp.async in the atomic backward): a unit inner stride, any start."""
    return not t.strides or t.shape[-1] <= 1 or t.strides[-1] == 1


# Manifest element types -> the dtype names of TensorInfo.
MANIFEST_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32",
                   "i1": "bool", "i32": "int32", "i64": "int64"}


def manifest_params(manifest):
    """A kernel's tensor parameters, each once, over all its launches (not
    the tensor-map buffer, which the runtime builds from them)."""
    seen, out = set(), []
    for launch in manifest.get("launches") or [manifest]:
        for p in launch["params"]:
            if p.get("kind") == "tensor_maps":
                continue
            if p["name"] not in seen:
                seen.add(p["name"])
                out.append(p)
    return out


def check_launch(manifest, tensors):
    """The tensors of one launch of a flash-compile kernel (a dict name ->
    TensorInfo) against its manifest: each parameter present with its dtype,
    rank and static sizes, nothing unknown, one CUDA device, and the
    attention's sizes consistent between Q, K, V, O, LSE, bias, mask (and dO,
    dQ, dK, dV for a backward). Returns the AttentionShape."""
    kernel = manifest.get("kernel", "kernel")
    workspace = {w["name"] for w in manifest.get("workspace", [])}
    params = [p for p in manifest_params(manifest) if p["name"] not in workspace]
    names = {p["name"] for p in params}
    for name in tensors:
        if name not in names:
            raise ValueError(f"{kernel}: unexpected tensor '{name}' (the "
                             f"kernel takes {', '.join(sorted(names))})")
    for p in params:
        t = tensors.get(p["name"])
        if t is None:
            raise ValueError(f"{kernel}: missing tensor '{p['name']}'")
        _require_tensor(t, p["name"])
        want = MANIFEST_DTYPES.get(p["dtype"], p["dtype"])
        if t.dtype != want:
            raise TypeError(f"{t.name}: expected {want}, got {t.dtype}")
        if t.rank != p["rank"]:
            raise ValueError(f"{t.name}: expected a rank-{p['rank']} tensor, "
                             f"got shape {_fmt(t.shape)}")
        for i, size in enumerate(p.get("shape") or []):
            if size is not None and t.shape[i] != size:
                raise ValueError(f"{t.name}: dim {i} is {t.shape[i]}, the "
                                 f"kernel was compiled for {size} (shape "
                                 f"{_fmt(t.shape)})")
    check_device(list(tensors.values()))
    dtype = MANIFEST_DTYPES.get(manifest["dtype"], manifest["dtype"])
    shape = check_attention(tensors["q"], tensors["k"], tensors["v"],
                            tensors.get("bias"), tensors.get("mask"),
                            dtypes=(dtype,), sinks=tensors.get("sinks"),
                            paged="block_table" in tensors)
    check_cache_and_packing(tensors, shape)
    if "o" in tensors:
        check_output(tensors["o"], shape, "output")
    if "lse" in tensors:
        check_lse(tensors["lse"], shape)
    if "do" in tensors:
        check_output(tensors["do"], shape, "output gradient")
    for grad, of in (("dq", "q"), ("dk", "k"), ("dv", "v")):
        if grad in tensors:
            g, t = tensors[grad], tensors[of]
            if tuple(g.shape) != tuple(t.shape):
                raise ValueError(f"{g.name}: expected the shape of {t.name}, "
                                 f"{_fmt(t.shape)}, got {_fmt(g.shape)}")
    return shape


def check_cache_and_packing(tensors, shape):
    """KV caches and packed sequences: key_lengths one per batch entry (or
    per sequence with cu_seqlens), block_table [B, P] (with key_lengths),
    cu_seqlens_q and cu_seqlens_k [S + 1] over a batch of one."""
    packed = "cu_seqlens_q" in tensors
    if packed != ("cu_seqlens_k" in tensors):
        raise ValueError("cu_seqlens_q and cu_seqlens_k come together")
    if packed:
        cq, ck = tensors["cu_seqlens_q"], tensors["cu_seqlens_k"]
        for t in (cq, ck):
            check_rank(t, 1, "[S + 1]")
            if t.shape[0] < 1:
                raise ValueError(f"{t.name}: needs at least one offset")
        if cq.shape[0] != ck.shape[0]:
            raise ValueError(f"{ck.name}: {ck.shape[0]} offsets, but "
                             f"{cq.name} has {cq.shape[0]}")
        if shape.batch != 1:
            raise ValueError(f"q: packed sequences take a batch of one, got "
                             f"{shape.batch}")
    if "block_table" in tensors:
        table = tensors["block_table"]
        if "key_lengths" not in tensors:
            raise ValueError("block_table: needs key_lengths (each sequence's "
                             "keys)")
        check_rank(table, 2, "[B, P]")
        _check_dim(table, 0, shape.batch, "batch", f"q has batch {shape.batch}")
    if "key_lengths" in tensors:
        lengths = tensors["key_lengths"]
        check_rank(lengths, 1, "[B]")
        want = tensors["cu_seqlens_q"].shape[0] - 1 if packed else shape.batch
        what = "sequences" if packed else "batch"
        _check_dim(lengths, 0, want, what, f"one per entry of the {what}")


# cuTensorMapEncodeTiled's enums (cuda.h).
TENSOR_MAP_DTYPES = {"float16": 6, "float32": 7, "bfloat16": 9}
TENSOR_MAP_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}
TENSOR_MAP_L2_PROMOTION_256B = 3


def tensor_map_request(entry, info):
    """The arguments of cuTensorMapEncodeTiled for one entry of a manifest's
    `tensor_maps` parameter over the tensor `info` (a TensorInfo): the map
    spans the whole tensor, dimensions innermost first (the kernel's TMA
    coordinates are in that order), strides in bytes, a box of `box_cols`
    elements by `box_rows` along `row_dim` and 1 elsewhere; rows past the
    tensor's end read as zeros. Raises ValueError where TMA cannot address
    the tensor (the innermost dimension not contiguous, a stride or the
    address not a multiple of 16 bytes)."""
    if info.dtype not in TENSOR_MAP_DTYPES:
        raise TypeError(f"{info.name}: no tensor map for {info.dtype}")
    size = info.element_bytes
    rank = len(info.shape)
    if info.strides[-1] != 1 and info.shape[-1] != 1:
        raise ValueError(f"{info.name}: the innermost dimension must be "
                         f"contiguous for TMA (strides {_fmt(info.strides)})")
    strides = [s * size for s in reversed(info.strides[:-1])]
    if any(s % 16 for s in strides) or info.data_ptr % 16:
        raise ValueError(f"{info.name}: TMA needs 16-byte aligned rows "
                         f"(strides {_fmt(info.strides)})")
    if any(s == 0 and n > 1 for s, n in zip(info.strides[:-1], info.shape[:-1])):
        raise ValueError(f"{info.name}: TMA cannot read a broadcast (zero-"
                         f"stride) dimension (strides {_fmt(info.strides)})")
    box = [1] * rank
    box[rank - 1] = entry["box_cols"]
    box[entry["row_dim"]] = entry["box_rows"]
    return {"dtype": TENSOR_MAP_DTYPES[info.dtype], "rank": rank,
            "address": info.data_ptr,
            "dims": list(reversed(info.shape)),
            "strides": strides,
            "box": list(reversed(box)),
            "element_strides": [1] * rank,
            "interleave": 0,
            "swizzle": TENSOR_MAP_SWIZZLE[entry["swizzle_bytes"]],
            "l2_promotion": TENSOR_MAP_L2_PROMOTION_256B,
            "oob_fill": 0}


def workspace_shape(entry, shapes, splits=1):
    """The shape of a workspace the runtime allocates (an entry of a
    manifest's `workspace`): the first `like_dims` sizes (all without it) of
    the tensor it is `like`, the rows (dimension 2 of [B, H, M, D]) rounded
    up to `row_multiple` (the atomic backward's fragment-major dQ sums, in
    whole strips of 16 rows), after the number of key splits for a split-KV
    kernel's partial results (`splits`: true)."""
    like = tuple(shapes[entry["like"]])
    shape = like[:entry.get("like_dims", len(like))]
    multiple = entry.get("row_multiple", 1)
    if multiple > 1:
        shape = shape[:2] + (-(-shape[2] // multiple) * multiple,) + shape[3:]
    if entry.get("splits"):
        shape = (splits,) + shape
    return shape


def grid_size(g, shape_of, scalars=None):
    """One grid dimension of a manifest launch (flash-compile's
    describeGridDim): a constant, a tensor size or a host-side scalar of the
    call (the manifest's `grid_scalars`, e.g. a varlen kernel's
    max_seqlen_q), divided by `ceil_div` rounding up, or the product of two
    of those. `shape_of(name)` is the shape of a parameter, `scalars` maps
    the scalars' names to ints."""
    if "const" in g:
        return int(g["const"])
    if "product" in g:
        size = 1
        for factor in g["product"]:
            size *= grid_size(factor, shape_of, scalars)
        return size
    if "scalar" in g:
        if scalars is None or g["scalar"] not in scalars:
            raise ValueError(f"the launch needs the scalar '{g['scalar']}' "
                             "(the caller's bound, as FlashAttention's)")
        size = int(scalars[g["scalar"]])
        if size < 0:
            raise ValueError(f"{g['scalar']}: must be non-negative, got {size}")
    else:
        size = shape_of(g["tensor"])[g["dim"]]
    if "ceil_div" in g:
        size = -(-size // g["ceil_div"])
    return int(size)


# A split-KV CTA's fixed cost (its start, its epilogue, its part of the
# merge) in keys' time: about two key blocks of 176 (docs/GPU-NOTES.md 85).
CTA_COST_IN_KEYS = 352


def choose_key_splits(manifest, batch, heads, queries, keys, sms,
                      max_splits=64):
    """How many runs a split-KV kernel (manifest `key_splits`) cuts each
    query block's keys into: one when its (batch, head, query block) tiles
    fill the GPU's `sms` SMs already; otherwise the count with the shortest
    critical path, the waves of CTAs over the SMs (two CTAs sharing an SM
    share its bandwidth) times the keys of the longest run plus a CTA's
    fixed cost, runs being whole key blocks (47 blocks of 176 take 3 a run
    in 16 runs but 4 in 14), each at least two key blocks long, the fewest
    runs among equals."""
    rows, cols = manifest["block_rows"], manifest["block_cols"]
    tiles = batch * heads * -(-queries // rows)
    blocks = -(-keys // cols)
    if tiles == 0 or sms < 1 or tiles >= 0.8 * sms:
        return 1
    most = max(1, min(max_splits, blocks // 2))

    def critical_path(s):
        waves = -(-tiles * s // sms)
        return waves * (-(-blocks // s) * cols + CTA_COST_IN_KEYS)

    return min(range(1, most + 1), key=lambda s: (critical_path(s), s))


def wants_key_splits(batch, heads, queries, keys, sms, rows=128,
                     min_keys=2048):
    """Whether a forward call is worth a split-KV kernel: its tiles of
    `rows` query rows leave a fifth or more of the GPU's `sms` idle, and
    the keys are long enough to share out."""
    tiles = batch * heads * -(-queries // rows)
    return 0 < tiles < 0.8 * sms and keys >= min_keys


def takes_split_kernel(batch, heads, queries, keys, sms, split_rows,
                       rows=128, min_keys=2048):
    """Whether a forward call goes to its family's split-KV kernel, at the
    runtime's split count (one run included): its tiles of `rows` query rows
    leave a fifth or more of the GPU idle (wants_key_splits), or its query
    rows fit one tile of the split kernel's (`split_rows`, a decode step's
    few rows) against long keys, where those tiles beat the plain forward's
    even at one run (D = 64, B = 64, 8k keys: 358 against 430 us; level at
    D = 128; docs/GPU-NOTES.md 86)."""
    return (wants_key_splits(batch, heads, queries, keys, sms, rows, min_keys)
            or (0 < queries <= split_rows and keys >= min_keys))


def workspace_infos(manifest, tensors, splits=1):
    """TensorInfos of the workspaces the runtime allocates for a kernel (the
    manifest's `workspace`: of its dtype (f32 where it names none), shaped
    after the tensor each names (see workspace_shape), contiguous and
    aligned), for checks made before they exist."""
    infos = {}
    shapes = {name: t.shape for name, t in tensors.items()}
    for w in manifest.get("workspace", []):
        like = tensors[w["like"]]
        shape = workspace_shape(w, shapes, splits)
        strides, step = [], 1
        for n in reversed(shape):
            strides.append(step)
            step *= n
        infos[w["name"]] = TensorInfo(
            w["name"], tuple(shape), tuple(reversed(strides)),
            MANIFEST_DTYPES[w.get("dtype", "f32")], like.device, 0)
    return infos


def tensor_maps_apply(manifest, tensors):
    """Whether every tensor that a kernel's `tensor_maps` parameter maps can
    be read by TMA (see tensor_map_request), the workspaces the runtime will
    allocate included; where not, the caller takes the kernel's general
    (unaligned-rows) kernel instead."""
    tensors = {**workspace_infos(manifest, tensors), **tensors}
    for launch in manifest.get("launches") or [manifest]:
        for p in launch["params"]:
            if p.get("kind") != "tensor_maps":
                continue
            for m in p["maps"]:
                try:
                    tensor_map_request(m, tensors[m["tensor"]])
                except (TypeError, ValueError):
                    return False
    return True


def takes_persistent_form(manifest, keys):
    """Whether a launch with `keys` keys takes the kernel's persistent form
    (its manifest's `persistent_form`): up to `max_keys`. A tile's key loop
    is then short, and in the persistent form a CTA's next tile (its Q and
    first K and V) loads under the end of the current one; with longer
    loops the kernel of one tile per CTA is faster (docs/GPU-NOTES.md 64).
    Under a causal sliding window a tile's loop walks at most window +
    block_rows keys however long the sequence (GPU-NOTES 84: at W = 512 and
    16k keys the form is 1.5x the kernel), so that bound counts."""
    form = manifest.get("persistent_form")
    if not form or keys <= 0:
        return False
    window = manifest.get("window")
    if manifest.get("causal") and window is not None:
        keys = min(keys, window + manifest["block_rows"])
    return keys <= form["max_keys"]


def companion_manifests(manifests):
    """The manifest file names that other manifests name as their general
    kernel or persistent form."""
    named = set()
    for m in manifests:
        if m.get("general"):
            named.add(m["general"])
        if m.get("persistent_form"):
            named.add(m["persistent_form"]["kernel"])
    return named


def launch_grid(entry, grid, max_ctas):
    """The grid to launch: the manifest's (one CTA per tile), or for a
    persistent kernel (whose CTAs walk the tiles, correct for any count) at
    most `max_ctas` CTAs along x: as many as stay resident on the GPU."""
    if not entry.get("persistent"):
        return tuple(grid)
    tiles = 1
    for g in grid:
        tiles *= g
    if max_ctas < 1:
        raise ValueError(f"{entry.get('entry', 'kernel')}: no CTA of this "
                         "kernel fits an SM")
    return (min(tiles, max_ctas), 1, 1)
