//===- Passes.td - flash transformation passes -------------*- tablegen -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_DIALECT_FLASH_TRANSFORMS_PASSES_TD
#define FLASH_DIALECT_FLASH_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FlashDecomposeAttentionPass : Pass<"flash-decompose-attention"> {
  let summary = "Rewrite flash ops into naive, materialising linalg";
  let description = [{
    Spells out the reference semantics of `flash.attention` and
    `flash.attention_backward` as linalg on tensors: contraction of Q and K
    into the full score matrix S (f32 accumulation), scale, bias, mask and
    causal masking, a max-subtracted softmax that gives fully masked rows
    P = 0, and the contraction of P with V. The backward op becomes the
    standard gradient formulas (P recomputed from LSE, dV = Pᵀ dO,
    dS = P (dP - rowsum(dO O)), dQ = scale dS K, dK = scale dSᵀ Q).

    Grouped-query attention is expressed by splitting the query-head axis
    into (Hkv, Hq / Hkv) with `tensor.expand_shape`, so every contraction is
    a plain `linalg.generic` and dK/dV sum over the group as part of their
    contraction.

    This form materialises N x N matrices: it is the reference that every
    other transformation is checked against, not a fast path.

    Before:
    ```mlir
    %o = flash.attention %q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>,
        tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
    ```
    After (abridged):
    ```mlir
    %s = linalg.generic {...} ins(%q5, %k) outs(%zero) { mulf; addf }   // S = Q Kᵀ
    %sm = linalg.generic {...} ins(%s) outs(%e) { mulf scale }
    %max = linalg.generic {...} ins(%sm) outs(%ninf) { maximumf }
    ...
    %o5 = linalg.generic {...} ins(%p, %v) outs(%zero) { mulf; addf }  // P V
    %o = tensor.collapse_shape %o5 [[0], [1, 2], [3], [4]]
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def FlashFuseAttentionPass : Pass<"flash-fuse-attention"> {
  let summary = "Raise matmul -> softmax -> matmul into flash.attention";
  let description = [{
    Finds attention by meaning in linalg as frontends emit it (torch-mlir,
    IREE input, JAX via stablehlo-to-linalg, TOSA after tosa-to-linalg) and
    replaces it with one `flash.attention`, erasing the N x N scores and
    probabilities.

    A candidate is a contraction `O = P V` (named `linalg.matmul` /
    `batch_matmul` / `matmul` with transposing maps, or a `linalg.generic`
    with a multiply-add body). The producers of P are read as arithmetic over
    P's index space — elementwise generics and named ops (`linalg.map`,
    `linalg.broadcast`, `linalg.transpose`), reductions over the key axis
    (`linalg.reduce` or reduction generics), `linalg.softmax`, and reshapes
    that only add or drop unit dimensions — and must amount to
    `softmax(scale * S + bias, masks)` over the axis that `O = P V` reduces,
    with `S = Q Kᵀ` another multiply-add contraction. Recognised spellings:
    `linalg.softmax`; max-subtracted or plain `exp`; `exp2` with a folded
    `log2(e)`; division by the sum or multiplication by its reciprocal;
    scaling by a constant (multiply or divide); additive bias tensors
    (broadcast over any dims); masks as `select(c, s, -inf)` or additive
    `select(c, 0, -inf)` with `c` an i1 tensor or a comparison of the query
    and key indices (folded to `causal` / `window` when it is the
    bottom-right diagonal); f16/bf16 operands with f32 softmax and a
    `truncf` of P. Q, K, V and the result may use any dimension order; K and
    V may be broadcast over the heads (MQA) or, in a [B, Hkv, G, ...]
    iteration space, over the group (GQA).

    Nothing is fused unless the fused op computes the same function: the
    exponentials must be normalised by their own sum over the key axis, the
    second contraction must reduce that axis, masks must fill with -inf, a
    causal diagonal must be flash.attention's bottom-right one, and every
    intermediate must have no other user. The fused op rounds differently
    (f32 statistics, online softmax after tiling).

    With `report`, every fused op gets a remark saying what was recognised
    and every rejected candidate (a contraction fed by exponentials) a
    remark with the reason.
  }];
  let options = [
    Option<"report", "report", "bool", "false",
           "Emit a remark for every candidate: what was fused, or why not">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::flash::FlashDialect"
  ];
}

def FlashFuseAttentionBackwardPass
    : Pass<"flash-fuse-attention-backward", "::mlir::ModuleOp"> {
  let summary = "Replace attention's backward from saved probabilities with "
                "flash.attention_backward, saving only the LSE";
  let description = [{
    In a training graph the backward of matmul -> softmax -> matmul reads
    the saved probabilities P (N x N): `dV = Pᵀ dO`, `dP = dO Vᵀ`,
    `dS = P (dP - rowsum(dP P))`, `dQ = scale dS K`, `dK = scale dSᵀ Q`.
    This pass finds the forward as `--flash-fuse-attention` does (allowing
    P's extra users), then the backward among P's users: each contraction
    that reads a tensor computed from P is matched by meaning — its input is
    interpreted over P's index space and evaluated to check that it is
    `c · P (dP - rowsum(P dP))` for a constant `c` (torch's
    `_softmax_backward_data`, JAX's `dP P - P Σ dP P`, the scale applied
    before or after), with `dP` a contraction of dO and V. The forward
    becomes `flash.attention` returning the LSE, the gradients one
    `flash.attention_backward`, and P is no longer computed.

    Within one function (a jointly traced training step) both are rewritten
    in place. Across functions — a forward returning P as a saved activation
    and a backward taking it as an argument — P's result and argument become
    the fused forward's output O and LSE (and its bias and mask, if any) in
    both signatures and at every call site, so nothing N x N crosses the
    boundary. This requires every use of P at every call site to be the
    backward function's argument.

    Nothing changes when P has another user, when a contraction's input is
    not the softmax gradient (a look-alike), or when the backward's Q, K, V,
    dO are not the forward's; with `report` each candidate gets a remark
    saying what was fused or why not.
  }];
  let options = [
    Option<"report", "report", "bool", "false",
           "Emit a remark for every candidate: what was fused, or why not">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::flash::FlashDialect"
  ];
}

def FlashTileAttentionPass : Pass<"flash-tile-attention"> {
  let summary = "Tile flash.attention into the FlashAttention-2 online-softmax loop nest";
  let description = [{
    Rewrites every `flash.attention` into ordinary upstream IR on tensors:

    ```
    scf.forall (b, h, query block) in (B, Hq, ceil(M / Br)):   // parallel
      Q tile [Br, D] (zero-padded at the ragged end)
      m = -inf, l = 0, acc = 0                                 // [Br], [Br], [Br, Dv]
      scf.for key block in <blocks left of visible keys that straddle a mask edge>:
        step(masked)
      scf.for key block in <fully visible blocks>:
        step(unmasked)                                         // no mask arithmetic
      scf.for key block in <blocks that straddle the causal diagonal / end of N>:
        step(masked)
      O = acc / l, LSE = m ln 2 + ln l                         // once, at the end
    step: S = Q Kᵀ (f32) * scale log2(e) (+ bias log2(e), masked -> -inf)
          m' = max(m, rowmax S); alpha = exp2(m - m'); P = exp2(S - m')
          l = alpha l + rowsum P; acc = alpha acc + P V (P in V's type)
    ```

    Only key blocks that a query block can see are visited (causal and
    sliding window are block-sparse), and only blocks that straddle a mask
    boundary or the ragged end of N pay for masking. With `key_lengths` each
    sequence's loops, masks and diagonal end at its own N_b. Fully masked rows keep
    m = -inf (guarded to 0 inside exp2) and end with O = 0, LSE = -inf.
    The largest tensor in the result is Br x max(Bc, D, Dv): nothing of size
    M x N is left.

    `flash.attention_backward` becomes FlashAttention-2's backward:

    ```
    D = rowsum(dO * O)                                         // [B, Hq, M]
    scf.forall (b, kv head) in (B, Hkv):                       // parallel
      dQ = 0                                                   // [G, M, D] f32
      scf.for key block:                                       // K, V tiles
        dK = 0, dV = 0                                         // [Bc, D], [Bc, Dv]
        scf.for query head g of the group, query block that sees the keys:
          S = scale Q Kᵀ (+ bias, masked); P = exp(S - LSE)    // recomputed
          dV += Pᵀ dO; dP = dO Vᵀ; dS = P (dP - D)
          dK += dSᵀ Q; dQ[g, rows] += dS K
        dK, dV of the block -> results (dK scaled)
      dQ (scaled) -> result
    ```

    Causal and window blocks no query row sees are skipped; dK and dV sum
    the group's query heads; P and dS are rounded to the element type
    before their products, as tensor cores take them.

    Tile sizes come from the target (`cpu`: the FlashAttention paper's
    Bc = ceil(M_sram / 4d), Br = min(Bc, d); `sm_80`/`sm_90a`: the
    register/shared-memory rule of AttentionTarget.h), or are forced with
    `block-rows`/`block-cols`. `report` emits a remark per op with the
    tiles, the on-chip bytes they use and the predicted HBM traffic against
    the naive algorithm.

    On tensor-core targets (`sm_80`, `sm_90a`) the backward takes the form
    the GPU mapping needs instead: a dQ nest over (batch, head, query
    block) that also writes D, and a dK/dV nest over (batch, KV head, key
    block) with transposed tiles (key rows, `kv-block-cols` query columns),
    tagged `flash.heaviest_first` (its first key blocks see the most query
    blocks under a causal mask: the GPU grid starts there); see
    TileAttentionBackwardSplit.cpp. With `deterministic=false` it is
    FlashAttention-2's own backward instead: S and P once per tile pair in
    the dK/dV nest, which also adds each step's dS K into an f32 dQ
    accumulator with `flash.atomic_add` (a workspace, zeroed by a pre-pass
    that also writes D), and a last pass that scales the sums into dQ. The
    additions' order varies from run to run, so dQ may differ in its last
    bits between runs.

    Split-KV (FlashDecoding, for few query rows against many keys):

    ```
    scf.forall (b, h, query block x split) in (B, Hq, ceil(M / Br) S)
        {flash.key_split_rows = Br}:
      the loops above over the split's run of the visible key blocks
      o_split[s, b, h, rows] = acc / l (f32), lse_split[s, b, h, rows]
    scf.forall (b, h, 4 rows) in (B, Hq, ceil(M / 4))
        {flash.merge_rows = 4, flash.block_threads}:
      per (row, 4 columns): m, l, acc[4] over the runs, 16 at a time
      (loads first):
        m' = max(m, lse_s); a = exp(m - m'); w = exp(lse_s - m')
        acc = a acc + w o_split[s]; l = a l + w
      O = acc / l (into O's rows in place), LSE = m + ln l
    ```

    With `key-splits=S` the partial results are workspaces the tiling
    allocates (`o_split` [S, B, Hq, M, Dv], `lse_split` [S, B, Hq, M], f32).
    An embedder that wants S chosen at run time gives the op's function two
    arguments of those shapes (leading size dynamic) with the attribute
    `flash.workspace = "o_split"` and `"lse_split"`: every rank-4 forward
    of that function is then split into as many runs as their leading size
    (flash-compile's split-KV kernels; the runtime allocates them). Sinks
    join in the merge.

    Packed variable-length sequences (`cu_seqlens_q`/`cu_seqlens_k`): the
    batch axis of every nest above becomes the S sequences and one more
    iteration for the rows past the last one (which see no keys; in the
    dK/dV nest, the keys past the last one, which see no queries); each
    iteration's rows and keys start at its offsets, and its blocks are those
    of the longest sequence (blocks past its own end compute nothing). That
    count comes from a scalar loop over the offsets, or from the function's
    arguments tagged `flash.max_seqlen_q` and `flash.max_seqlen_k` (index
    or integer; FlashAttention's `max_seqlen_q/_k`), which a kernel's host
    side needs: a launch's grid cannot loop over device memory. Such a
    bound must also cover the rows past the last sequence (FlashAttention's
    does not count them); rows past it are not computed.
  }];
  let options = [
    Option<"target", "target", "::mlir::flash::TileTarget",
           "::mlir::flash::TileTarget::Cpu",
           "Target whose memory sizes pick the tiles: cpu, sm_80 or sm_90a",
           "FLASH_TILE_TARGET_VALUES">,
    Option<"blockRows", "block-rows", "int64_t", "0",
           "Query rows per tile (Br); 0 picks it from the target">,
    Option<"blockCols", "block-cols", "int64_t", "0",
           "Keys per tile (Bc); 0 picks it from the target">,
    Option<"kvBlockRows", "kv-block-rows", "int64_t", "0",
           "GPU targets: key rows per CTA of the backward's dK/dV nest; 0 "
           "picks it from the target">,
    Option<"kvBlockCols", "kv-block-cols", "int64_t", "0",
           "GPU targets: query columns per step of the backward's dK/dV "
           "nest; 0 picks it from the target">,
    Option<"deterministic", "deterministic", "bool", "true",
           "GPU targets: the backward as a dQ nest and a dK/dV nest (true), "
           "or one dK/dV nest that adds dQ with atomics (false)">,
    Option<"overlapProducts", "overlap-products", "bool", "false",
           "GPU targets with deterministic=false: the dK/dV nest builds "
           "dPᵀ = V dOᵀ right after Sᵀ = K Qᵀ, so that MMAs waited for at "
           "first use overlap them with the exponentials (more registers)">,
    Option<"dqFragmentMajor", "dq-fragment-major", "int64_t", "0",
           "GPU targets with deterministic=false, dense ops: the dQ "
           "accumulator in strips of 16 rows in mma.sync fragment order "
           "(flash.atomic_add's fragment_major: 1 for scalar reductions, 2 "
           "for pairs, 4 for two pairs), so that each warp reduction covers "
           "whole sectors; "
           "0: rows">,
    Option<"maskFreeBlocks", "mask-free-blocks", "bool", "true",
           "GPU targets' backward: the blocks that need no mask (whole keys, "
           "every score inside the causal band and window) in loops of their "
           "own, whose P has no per-element select (false: one masked loop "
           "per nest, fewer registers)">,
    Option<"maskUnderBranch", "mask-under-branch", "bool", "false",
           "GPU targets' backward with mask-free-blocks: each nest keeps one "
           "loop, and the blocks that need a mask apply it under a branch on "
           "the block index (one loop body's registers instead of two)">,
    Option<"keySplits", "key-splits", "int64_t", "0",
           "Split-KV: cut each forward's visible key blocks into this many "
           "parallel runs merged by their LSE (0: none, unless the function "
           "passes partial results for a run-time count)">,
    Option<"causalRowsFromEnd", "causal-rows-from-end", "bool", "false",
           "Causal forward: query blocks aligned to the last row, so that "
           "the block with fewer than Br rows is the first (the shortest "
           "key loop) rather than the last (the longest)">,
    Option<"report", "report", "bool", "false",
           "Emit a remark per op: tiles, on-chip bytes, predicted HBM traffic">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def FlashPipelineKeyLoopsPass : Pass<"flash-pipeline-key-loops"> {
  let summary = "Software-pipeline the forward's key-block loops (FlashAttention-3's intra-warpgroup overlap)";
  let description = [{
    Rewrites each key-block loop of the tiled forward (a loop holding one
    contraction tagged `flash.contraction = "scores"` and one tagged
    "output") into two stages, one key block apart:

    ```
    scf.if lb < ub:
      S = Q K_lbᵀ, softmax -> m, l, P, alpha            // prologue: stage 0 of lb
      scf.for j = lb + 1 to ub:
        S = Q K_jᵀ                                      // stage 0 of j ...
        acc = alpha acc + P V_{j-1}                      // stage 1 of j - 1
        softmax of S -> m, l, P, alpha                   // ... stage 0 of j
      acc = alpha acc + P V_{ub-1}                       // epilogue: stage 1 of ub - 1
    ```

    Stage 1 is the output contraction and what only it needs (V's tile, the
    rescale of the accumulator); everything else is stage 0. The values that
    stage 1 takes from stage 0 (P, alpha, the block's offsets) are carried
    by the loop, and the ops that make the carried tensors write into the
    carried value itself (their payloads do not read it), so that
    bufferization keeps one buffer each. On the GPU, S = Q Kᵀ of block j and
    P V of block j - 1 are then issued back to back and the softmax of block
    j runs while P V is in flight (`--flash-gpu-async-mma`). The numbers are
    the same as the loop's: every block's stage 0 still precedes its stage 1,
    and the stages of a block see the same values. Loops of another shape are
    left as they are. The GPU pipeline does not run it yet: the warp
    register mapping does not take the guarded, peeled nest (an `scf.if`
    around it; docs/GPU-NOTES.md, 42).
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect"];
}

def FlashWorkspaceToArgumentsPass
    : Pass<"flash-workspace-to-arguments", "::mlir::ModuleOp"> {
  let summary = "Turn the tiled backward's workspace tensors into function "
                "arguments";
  let description = [{
    The GPU form of the tiled backward passes D = rowsum(dO O) from its dQ
    kernel to its dK/dV kernel through a `tensor.empty` tagged
    `flash.workspace`. Kernels launched from a host that runs no MLIR code
    (flash-compile's manifests, the Python runtime) cannot allocate it, so
    this pass appends one writable argument per workspace to the function
    (in order, named by the tag in `flash.workspace` argument attributes)
    and uses it instead. The caller allocates it: flash-compile's manifest
    lists it under `workspace`.

    Calls in the module pass it too: each call of such a function gets, as
    an extra operand, a `tensor.empty` of the same tag sized from the call's
    operands. That is a workspace of the caller, and so in turn an argument
    of the caller, up to the function the host calls; a private caller whose
    workspace is not sized from its own arguments (it reads a result of an
    earlier call) allocates it instead. A use of the function other than
    `func.call`, a recursive call, and a call of a public function whose
    workspace is not sized from its arguments are located errors.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def FlashLowerAtomicAddPass : Pass<"flash-lower-atomic-add"> {
  let summary = "flash.atomic_add on buffers -> a parallel loop of "
                "memref.atomic_rmw addf";
  let description = [{
    Rewrites every `flash.atomic_add %tile, %dest` whose tile is a memref
    into

    ```
    scf.parallel (i, j) = (0, 0) to (rows, cols):
      v = memref.load %tile[i, j]
      memref.atomic_rmw addf v, %dest[i, j]
    ```

    correct under any schedule of the parallel iterations; the CPU pipeline
    runs it after bufferization. Inside a GPU kernel `--flash-map-tiles-to-gpu`
    lowers `flash.atomic_add` itself (relaxed global reductions, which
    `memref.atomic_rmw`'s acquire-release lowering is not). A tensor-form
    `flash.atomic_add` (not yet bufferized) is an error.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def FlashLowerSkipTilePass : Pass<"flash-lower-skip-tile"> {
  let summary = "flash.skip_tile -> the rest of its block under scf.if";
  let description = [{
    Rewrites every `flash.skip_tile %empty` into

    ```
    scf.if (not %empty) { <the ops after it in its block, but the terminator> }
    ```

    so that an iteration whose tile has no rows (a packed sequence's query
    block past the sequence's end) does nothing. Needs bufferized IR: the
    moved ops may define no value that the terminator or an op after the
    block uses (an error otherwise). The CPU pipeline runs it right after
    bufferization, before the deallocations are placed; the GPU mapping
    lowers the op itself (`--flash-gpu-map-to-blocks`).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def FlashDecomposeAggregatesPass : Pass<"flash-decompose-aggregates"> {
  let summary = "Decompose aggregate linalg ops (linalg.softmax) into generics";
  let description = [{
    Applies `linalg::AggregatedOpInterface::decomposeOperation` to every op
    that implements it, so that `linalg.softmax` becomes the reductions and
    elementwise generics that bufferize and lower to loops. Used by
    `--flash-cpu-pipeline`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

#endif // FLASH_DIALECT_FLASH_TRANSFORMS_PASSES_TD
