//===- FlashOps.td - flash dialect operations --------------*- tablegen -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_DIALECT_FLASH_IR_FLASHOPS_TD
#define FLASH_DIALECT_FLASH_IR_FLASHOPS_TD

include "flash/Dialect/Flash/IR/FlashDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/OpBase.td"

defvar scoreModDeclarations = [{
    /// Whether the op rewrites its scores with a `score_mod` region.
    bool hasScoreMod() { return !getScoreMod().empty(); }
    /// The modified score of the scaled score `score` at the rank-4 indices
    /// `indices` (b, h, i, j): the region's body cloned at `b`'s insertion
    /// point. `score` itself without a region.
    ::mlir::Value buildScoreMod(::mlir::OpBuilder &b, ::mlir::Value score,
                                ::mlir::ValueRange indices) {
      return ::mlir::flash::buildScoreMod(b, getScoreMod(), score, indices);
    }
}];

def Flash_AttentionOp : Flash_Op<"attention",
    [Pure, AttrSizedOperandSegments,
     DeclareOpInterfaceMethods<OpAsmOpInterface,
        ["getAsmResultNames", "getAsmBlockArgumentNames"]>]> {
  let summary = "Fused scaled-dot-product attention";
  let description = [{
    Computes `O = softmax(scale * Q Kᵀ + bias, masked) V` for every batch
    and query head, and optionally the natural-log log-sum-exp `LSE` of
    each row of the scaled, biased and masked scores.

    Shapes (rank-4 form):
    - `query` Q `[B, Hq, M, D]`, `key` K `[B, Hkv, N, D]`,
      `value` V `[B, Hkv, N, Dv]`; `B`, `Hq`, `Hkv`, `M`, `N` may be
      dynamic, `D` and `Dv` are static.
    - `Hq` is a multiple of `Hkv` (grouped-query / multi-query attention):
      query head `h` reads key/value head `h / (Hq / Hkv)`.
    - result `output` `[B, Hq, M, Dv]` in the element type of Q, and the
      optional `lse` `[B, Hq, M]` in f32.

    Rank-3 operands `[H, S, D]` and rank-2 operands `[S, D]` are accepted as
    the cases `B = 1` and `B = H = 1`; canonicalization rewrites them to the
    rank-4 form with `tensor.expand_shape` / `tensor.collapse_shape`.

    Attributes and optional operands:
    - `scale` multiplies the scores; it defaults to `1/sqrt(D)` (1 for
      D = 0, whose scores are all 0). A scale known only at run time is the
      f32 operand `runtime_scale` instead (not both).
    - `causal`: query `i` sees key `j` iff `j <= i + N - M` (the diagonal is
      aligned bottom-right when `M != N`, as in FlashAttention-2).
    - `window = W` (sliding-window / local attention): query `i` sees key `j`
      only if `j >= i + N - M - W`; with `causal` this is FlashAttention-2's
      `window_size = (W, 0)`, without it `(W, -1)`.
    - `bias`: an additive f16/bf16/f32 tensor broadcastable (right-aligned,
      static unit dimensions broadcast) to `[B, Hq, M, N]`.
    - `mask`: an i1 tensor broadcastable to `[B, Hq, M, N]`; `false` masks
      the score out.
    - `score_mod`: an optional region that rewrites each scaled score
      before the bias and masks are applied, as a function of the score and
      its indices in the rank-4 form (FlexAttention's `score_mod`):
      `^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index)` ending in
      `flash.yield` of the new f32 score (b = 0 and h = 0 where the op has
      no such dimension). ALiBi (`s + slope[h] * (j - i)`), biases from
      index arithmetic and softcapping (`c * tanh(s / c)`) are written this
      way, so that no M x N tensor is built for them. The region may read
      values defined above the op (a per-head slope tensor, a run-time
      scalar); its operations must be free of side effects.
    - `sinks` (attention sinks, as in gpt-oss and StreamingLLM): an f16, bf16
      or f32 tensor `[Hq]` of learned logits, one per query head, that join
      every row's softmax denominator as one more score with a zero value
      row: `O = sum_j exp(s_j) V_j / (exp(sink_h) + sum_j exp(s_j))`, and the
      LSE includes the sink. The sink is not scaled, biased, modified or
      masked.
    - `key_lengths` (a KV cache of ragged sequences, FlashAttention's
      `cache_seqlens`): an i32 or i64 tensor `[B]` (rank-4 form only);
      sequence `b` has `N_b = key_lengths[b]` keys, the first `N_b` of K and
      V (clamped to `[0, N]`): keys from `N_b` on are hidden, and `causal`
      and `window` are aligned to its own last key (query `i` sees key `j`
      iff `j <= i + N_b - M`, and with a window `j >= i + N_b - M - W`).
      K and V past `N_b` are never read.
    - `block_table` (a paged KV cache, vLLM's and FlashAttention's
      `block_table`; needs `key_lengths`): an i32 tensor `[B, P]`; K and V
      are then pages `[num_pages, Hkv, page_size, D]` (`Dv`), and key `j` of
      sequence `b` is row `j % page_size` of page `block_table[b, j /
      page_size]`: the sequences' keys are `N = P * page_size` long at most
      (`bias` and `mask` broadcast to that `N`). Entries for keys past
      `N_b` are never read.
    - `cu_seqlens_q` and `cu_seqlens_k` (variable-length batches,
      FlashAttention's `flash_attn_varlen_func`): i32 or i64 tensors
      `[S + 1]` of cumulative offsets that cut the packed tokens of Q
      `[1, Hq, Tq, D]` and of K/V `[1, Hkv, Tk, D]` (or the rank-3 form
      `[H, T, D]`) into `S` sequences: sequence `s` has the queries
      `[cu_seqlens_q[s], cu_seqlens_q[s + 1])` and the keys
      `[cu_seqlens_k[s], cu_seqlens_k[s + 1])`, and each query attends only
      to its own sequence's keys, with `causal` and `window` aligned
      bottom-right per sequence. With `key_lengths` (`[S]`, FlashAttention's
      `seqused_k`) sequence `s` uses only the first `key_lengths[s]` of its
      keys. The offsets start at 0 and do not decrease (otherwise the rows
      before the first offset, or of overlapping sequences, are undefined;
      every offset is clamped to the tokens, so nothing outside the operands
      is read or written). Query
      rows past the last sequence give `O = 0` and `LSE = -inf` (the sink
      with sinks); keys in no sequence are never read. The `score_mod`
      region sees `b = s` and the positions `i`, `j` within the sequence.
      No `bias`, `mask` or `block_table` with them.

    A row whose scores are all masked produces `O = 0` and `LSE = -inf`
    (`LSE = sink` with sinks).
    Scores, softmax statistics and accumulation are f32 for every element
    type.

    Example:

    ```mlir
    %o, %lse = flash.attention %q, %k, %v {causal, scale = 0.125 : f32}
        : tensor<2x8x128x64xf16>, tensor<2x2x256x64xf16>, tensor<2x2x256x64xf16>
        -> tensor<2x8x128x64xf16>, tensor<2x8x128xf32>
    %o2 = flash.attention %q, %k, %v bias(%b : tensor<128x256xf32>)
        : tensor<2x8x128x64xf16>, tensor<2x2x256x64xf16>, tensor<2x2x256x64xf16>
        -> tensor<2x8x128x64xf16>
    // ALiBi with a slope per query head.
    %o3 = flash.attention %q, %k, %v {causal}
        : tensor<2x8x128x64xf16>, tensor<2x2x256x64xf16>, tensor<2x2x256x64xf16>
        -> tensor<2x8x128x64xf16>
        score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = tensor.extract %slopes[%h] : tensor<8xf32>
        %d = arith.subi %j, %i : index
        %di = arith.index_cast %d : index to i64
        %df = arith.sitofp %di : i64 to f32
        %t = arith.mulf %slope, %df : f32
        %r = arith.addf %s, %t : f32
        flash.yield %r : f32
      }
    ```
  }];

  let arguments = (ins
    AnyRankedTensor:$query,
    AnyRankedTensor:$key,
    AnyRankedTensor:$value,
    Optional<AnyRankedTensor>:$bias,
    Optional<AnyRankedTensor>:$mask,
    Optional<AnyRankedTensor>:$sinks,
    Optional<AnyRankedTensor>:$key_lengths,
    Optional<AnyRankedTensor>:$block_table,
    Optional<AnyRankedTensor>:$cu_seqlens_q,
    Optional<AnyRankedTensor>:$cu_seqlens_k,
    Optional<F32>:$runtime_scale,
    OptionalAttr<F32Attr>:$scale,
    UnitAttr:$causal,
    OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$window
  );
  let results = (outs
    AnyRankedTensor:$output,
    Optional<AnyRankedTensor>:$lse
  );
  let regions = (region MaxSizedRegion<1>:$score_mod);

  let assemblyFormat = [{
    $query `,` $key `,` $value
    (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    (`key_lengths` `(` $key_lengths^ `:` type($key_lengths) `)`)?
    (`block_table` `(` $block_table^ `:` type($block_table) `)`)?
    (`cu_seqlens_q` `(` $cu_seqlens_q^ `:` type($cu_seqlens_q) `)`)?
    (`cu_seqlens_k` `(` $cu_seqlens_k^ `:` type($cu_seqlens_k) `)`)?
    (`runtime_scale` `(` $runtime_scale^ `)`)?
    attr-dict `:` type($query) `,` type($key) `,` type($value)
    `->` type($output) (`,` type($lse)^)?
    (`score_mod` $score_mod^)?
  }];

  let extraClassDeclaration = !strconcat([{
    /// The scale applied to the scores: the attribute, or 1/sqrt(D) (1 for
    /// D = 0). Not defined with a run-time scale.
    float getEffectiveScale();
    /// The scale as an f32 value: the run-time operand, or a constant of
    /// the effective scale created at `b`'s insertion point.
    ::mlir::Value buildScale(::mlir::OpBuilder &b);
    /// Moves `from`'s score_mod region (if any) into this op's.
    void takeScoreModFrom(::mlir::RewriterBase &rewriter, AttentionOp from);
    /// Whether the op packs variable-length sequences (cu_seqlens).
    bool isVarlen() { return static_cast<bool>(getCuSeqlensQ()); }
  }], scoreModDeclarations);

  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Flash_AttentionBackwardOp : Flash_Op<"attention_backward",
    [Pure, AttrSizedOperandSegments,
     DeclareOpInterfaceMethods<OpAsmOpInterface,
        ["getAsmResultNames", "getAsmBlockArgumentNames"]>,
     AllTypesMatch<["query", "grad_query"]>,
     AllTypesMatch<["key", "grad_key"]>,
     AllTypesMatch<["value", "grad_value"]>,
     AllTypesMatch<["output", "grad_output"]>]> {
  let summary = "Gradient of flash.attention with respect to Q, K and V";
  let description = [{
    Given the forward operands Q, K, V, the forward output O, the gradient
    of the loss with respect to O (`grad_output`, dO) and the forward
    log-sum-exp `lse`, returns `(dQ, dK, dV)`, the exact gradient of
    `flash.attention` with the same `scale`, `causal`, `bias` and `mask`.

    With `S = scale * Q Kᵀ + bias` (masked to -inf) and
    `P = exp(S - LSE)`:
    - `dV = Pᵀ dO`,
    - `dS = P * (dO Vᵀ - rowsum(dO * O))`,
    - `dQ = scale * dS K`, `dK = scale * dSᵀ Q`.

    For grouped-query attention the dK and dV of a key/value head sum the
    contributions of every query head of its group. Shapes, ranks and
    attributes follow `flash.attention`; the gradients have the types of Q,
    K and V. `bias` receives no gradient.

    With a `score_mod` region (that of the forward: `T = mod(scale Q Kᵀ)`,
    then the bias and masks, `P = exp(T - LSE)`), the score gradient is
    `dS = P * (dO Vᵀ - rowsum(dO * O)) * mod'(scale Q Kᵀ)`: the region must
    be differentiable in its score argument through the operations it
    applies to it (arith's float arithmetic, selects, casts, and math's
    tanh, exp, exp2, log, sqrt and absf); the values it reads otherwise
    (indices, tensors, scalars from above) are constants of the derivative.

    With the forward's `sinks`, the op also returns their gradient
    `grad_sinks` (the type of `sinks`):
    `d sink_h = -sum_{b, i} exp(sink_h - LSE[b, h, i]) rowsum(dO * O)[b, h, i]`.
    dQ, dK and dV do not depend on the sinks (the LSE carries them), so a
    backward without `sinks` gives the same three gradients.

    With the forward's `cu_seqlens_q` and `cu_seqlens_k` (packed
    variable-length sequences), each sequence is differentiated on its own:
    dQ rows past the last sequence and dK/dV rows of keys in no sequence
    are 0, and what Q, K, V, O, dO and the LSE hold in rows of no sequence
    (NaN included) does not reach the gradients.

    Example:

    ```mlir
    %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse {causal}
        : tensor<2x8x128x64xf16>, tensor<2x2x256x64xf16>,
          tensor<2x2x256x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128xf32>
    ```
  }];

  let arguments = (ins
    AnyRankedTensor:$query,
    AnyRankedTensor:$key,
    AnyRankedTensor:$value,
    AnyRankedTensor:$output,
    AnyRankedTensor:$grad_output,
    AnyRankedTensor:$lse,
    Optional<AnyRankedTensor>:$bias,
    Optional<AnyRankedTensor>:$mask,
    Optional<AnyRankedTensor>:$sinks,
    Optional<AnyRankedTensor>:$cu_seqlens_q,
    Optional<AnyRankedTensor>:$cu_seqlens_k,
    OptionalAttr<F32Attr>:$scale,
    UnitAttr:$causal,
    OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$window
  );
  let results = (outs
    AnyRankedTensor:$grad_query,
    AnyRankedTensor:$grad_key,
    AnyRankedTensor:$grad_value,
    Optional<AnyRankedTensor>:$grad_sinks
  );
  let regions = (region MaxSizedRegion<1>:$score_mod);

  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $output `,` $grad_output `,` $lse
    (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    (`cu_seqlens_q` `(` $cu_seqlens_q^ `:` type($cu_seqlens_q) `)`)?
    (`cu_seqlens_k` `(` $cu_seqlens_k^ `:` type($cu_seqlens_k) `)`)?
    attr-dict `:` type($query) `,` type($key) `,` type($value) `,`
    type($output) `,` type($lse) (`->` type($grad_sinks)^)?
    (`score_mod` $score_mod^)?
  }];

  let extraClassDeclaration = !strconcat([{
    /// The scale applied to the scores: the attribute, or 1/sqrt(D) (1 for
    /// D = 0).
    float getEffectiveScale();
    /// d mod(s) / ds at the scaled score `score` and indices (b, h, i, j),
    /// built at `b`'s insertion point (forward-mode through the region).
    ::mlir::Value buildScoreModDerivative(::mlir::OpBuilder &b,
                                          ::mlir::Value score,
                                          ::mlir::ValueRange indices);
    /// Moves `from`'s score_mod region (if any) into this op's.
    void takeScoreModFrom(::mlir::RewriterBase &rewriter,
                          AttentionBackwardOp from);
    /// Whether the op packs variable-length sequences (cu_seqlens).
    bool isVarlen() { return static_cast<bool>(getCuSeqlensQ()); }
  }], scoreModDeclarations);

  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Flash_AtomicAddOp : Flash_Op<"atomic_add",
    [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "dest += tile, each element added atomically";
  let description = [{
    Adds `tile` into the buffer `dest` of the same shape, element by
    element, each addition atomic: the iterations of a parallel loop may add
    into the same elements (the nondeterministic backward's dQ accumulator,
    which every key block of a query block adds to). The order of the
    additions is not defined, so float sums may differ in their last bits
    from run to run.

    `tile` is a tensor before bufferization and a memref after; `dest` is a
    memref throughout: an accumulator that parallel iterations update has no
    value semantics to express it with.

    ```mlir
    flash.atomic_add %tile, %rows : tensor<?x128xf32>, memref<?x128xf32, strided<[128, 1], offset: ?>>
    ```

    With `fragment_major = w` (1, 2 or 4; a tile of rank 2, [R, W] with W a
    multiple of 64) `dest` holds the rows in strips of 16 in the order of
    the mma.sync accumulator fragments, so that a warp's reduction of w
    fragment registers covers 128 w contiguous bytes: FlashAttention-2's dQ
    accumulator. Element (r, c) goes to dest's (16 (r floordiv 16) + o
    floordiv W, o mod W), where, with lane = 4 (r mod 8) + (c mod 8)
    floordiv 2 (the lane that holds it) and h = (r mod 16) floordiv 8,
    o = 128 (c floordiv 8) + 64 h + 32 (c mod 2) + lane for w = 1 (scalar
    reductions), 128 (c floordiv 8) + 64 h + 2 lane + c mod 2 for w = 2
    (pairs) and 256 (c floordiv 16) + 128 h + 4 lane + 2 ((c mod 16)
    floordiv 8) + c mod 2 for w = 4 (a lane's pairs of two adjacent 8-column
    blocks). `dest` must have 16 ceil(R / 16) rows: the last strip is whole.
    A reader takes the sums back through `getDestinationMap()`.

    ```mlir
    flash.atomic_add %tile, %strips {fragment_major = 1 : i64} : memref<?x128xf32>, memref<?x128xf32, strided<[128, 1], offset: ?>>
    ```

    `--flash-lower-atomic-add` turns the memref form into loops of
    `memref.atomic_rmw addf`.
  }];
  let arguments = (ins AnyTypeOf<[AnyRankedTensor, AnyMemRef]>:$tile,
                   AnyMemRef:$dest, OptionalAttr<I64Attr>:$fragment_major);
  let assemblyFormat =
      "$tile `,` $dest attr-dict `:` type($tile) `,` type($dest)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// (r, c) of the tile -> (row, column) of `dest` it is added at: the
    /// identity, or the fragment-major order of `fragment_major`.
    ::mlir::AffineMap getDestinationMap();
  }];
}

def Flash_SkipTileOp : Flash_Op<"skip_tile"> {
  let summary = "the rest of a tiled iteration is empty when `empty` holds";
  let description = [{
    Set by the tiler in the body of a tiled nest's `scf.forall` where an
    iteration's tile may have no rows (a packed sequence's query block past
    its sequence's rows: the grid counts the blocks of the longest): when
    `empty` holds, the ops after this one up to the block's terminator
    write nothing and compute nothing anything reads, so a lowering may
    skip them. Erasing the op is always correct.

    ```mlir
    flash.skip_tile %no_rows
    ```

    Lowerings: `--flash-lower-skip-tile` (the CPU pipeline, after
    bufferization) puts the rest of the block under `scf.if` on the
    negation; `--flash-gpu-map-to-blocks` ends the CTA there
    (`flashgpu.exit`, FlashAttention-2's early return) where one CTA runs
    one iteration, and guards the rest of a persistent CTA's tile.

    The op has no declared memory effects, so that no folding removes it.
  }];
  let arguments = (ins I1:$empty);
  let assemblyFormat = "$empty attr-dict";
}

def Flash_YieldOp : Flash_Op<"yield",
    [Pure, Terminator,
     ParentOneOf<["AttentionOp", "AttentionBackwardOp"]>]> {
  let summary = "The modified score of a score_mod region";
  let arguments = (ins F32:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

#endif // FLASH_DIALECT_FLASH_IR_FLASHOPS_TD
