//===- Passes.td - flash conversion passes -----------------*- tablegen -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_CONVERSION_PASSES_TD
#define FLASH_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

// The GPU mapping, one step per pass. `--flash-map-tiles-to-gpu` (a pipeline,
// include/flash/Pipelines/Pipelines.h) runs them in this order; each reads
// what the steps before it wrote into the IR (attributes named in
// flash/Conversion/Passes.h) and nothing else.

def FlashGpuMapToBlocksPass : Pass<"flash-gpu-map-to-blocks"> {
  let summary = "Make the bufferized tiled nest's scf.forall a gpu.launch";
  let description = [{
    Takes the output of `--flash-tile-attention` after bufferization: each
    outermost `scf.forall` over (batch, head, query block) becomes a
    `gpu.launch` of `threads` threads per block, one block per query block
    (grid x = query blocks, last first: under a causal mask the last ones
    see the most keys; y = heads; z = batch). A forall tagged
    `flash.heaviest_first` (the backward's dK/dV nest, whose key block 0
    sees every query block under a causal mask) is launched first block
    first instead. A forall that says its own
    CTA size (`flash.block_threads`, set by the tiler on the split-KV merge:
    one thread per four columns of each row of its tile) gets that many
    threads instead. A `flash.skip_tile` in the body (an iteration that may
    have no rows: a packed sequence's query block past its end) ends the
    CTA there when its condition holds (`scf.if` around `flashgpu.exit`;
    the condition is the CTA's, so all its threads take it), before its
    tiles are loaded; in a persistent launch the rest of the tile goes under
    an `scf.if`.
    Every value the body needs from outside but the function's memref
    arguments is recomputed inside, so that the outlined kernel takes
    exactly the tensors' memrefs.

    Two leftovers of bufferization are normalised for the tile passes: a
    guarded region yielding buffers (a pipelined loop's prologue) yields
    one buffer per running state, and, in kernels that add into global
    memory, copies of a merged constant tile become fills of their targets.

    With `persistent` the launch body is one loop over the tiles (row block
    fastest, batch slowest; `flash.tile_loop`), tile t = the CTA's linear
    index + k * the grid's CTAs, the row blocks of a head in folded pairs
    (each two rounds give a CTA the last and first row blocks not yet
    taken: equal work per pair under a causal mask): correct for any grid, and the launch is
    tagged `flash.persistent` so that a caller may launch fewer CTAs than
    tiles; the tiles' buffers are allocated once, before the loop
    (`flash.tile_buffer`).

    ```mlir
    // before
    scf.forall (%b, %h, %i) in (%B, %H, %QB) { ...tiles as memref.alloc... }
    // after
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %QB, %gy = %H, %gz = %B)
               threads(%tx, %ty, %tz) in (%sx = %c128, ...) {
      %i = arith.subi %last, %bx : index   // row blocks last to first
      ...
    }
    ```
  }];
  let options = [
    Option<"threads", "threads", "int64_t", "128",
           "Threads per block: whole warps, at most 1024">,
    Option<"persistent", "persistent", "bool", "false",
           "The launch body is a loop over the tiles, so that a caller may "
           "launch fewer CTAs than tiles (about one per SM)">,
    Option<"exitEmptyTiles", "exit-empty-tiles", "bool", "true",
           "A CTA whose tile has no rows (flash.skip_tile) ends there "
           "(false: the op is erased and the CTA runs its empty tile)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::flashgpu::FlashGPUDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def FlashGpuAssignTileStoragePass : Pass<"flash-gpu-assign-tile-storage"> {
  let summary = "Decide which of a launch's tiles live in registers and "
                "which in (swizzled) shared memory";
  let description = [{
    For each `gpu.launch` of `--flash-gpu-map-to-blocks`, decides from the
    ops on each tile buffer (a `memref.alloc` in the launch) where it lives,
    and writes the decision as `flash.tile_storage` on the allocation:

    - `"registers"`: a tile indexed by the block's rows (those of the
      contractions the tiler tagged as accumulating, `flash.contraction`)
      whose every op the warp rewrite knows: S, P, the running max and
      sum, the accumulator, the output tile (FlashAttention-2's split).
      The launch gets `flash.register_rows = R` (the rows the block owns);
      `--flash-gpu-warp-register-tiles` rewrites them.
    - `"swizzled"`: with `tensor-cores=wgmma` (or auto on sm_90a) and
      `async-copies`, where every contraction can take Hopper's warpgroup
      MMA, its shared operands: stored in the 128-byte swizzled layout the
      matrix descriptors name. The launch gets `flash.wgmma`. Otherwise,
      with `swizzle-ldmatrix` and `async-copies` in a launch with register
      tiles, the 16-bit operand tiles of 64-column panels that only
      cp.async writes and only ldmatrix (and the register tiles' ops, at
      swizzled offsets) reads: each 16-byte chunk of a row at chunk
      `j ^ (row % 8)`, so that both the copies' row writes and ldmatrix's
      8-row reads are free of bank conflicts without padding.
    - `"accumulators"`: the C of a contraction whose zero-filled result
      goes only to a `flash.atomic_add` (the atomic backward's dS K): the
      MMA lowering keeps it in its accumulators, so it never exists.
    - `"reduction_stage"`: that C with `staged-reductions` on a wgmma
      launch, where the MMA lowering can add its sums by TMA tensor
      reductions (the launch's only `flash.atomic_add`, in the launch body
      or directly in an `scf.for`, into a slice of an f32 argument whose
      rows end with the tensor): a shared tile where that lowering stages
      the results (FlashAttention-3's dQ).
    - no attribute: a shared-memory tile (Q, K, V, bias and mask tiles).

    A contraction that reads its A transposed (dS K from dSᵀ) first gets a
    shared copy of A of its own, written before a barrier
    (`ldmatrix.trans` or an m-major descriptor reads it).
  }];
  let options = [
    Option<"chip", "chip", "::mlir::flash::Chip", "::mlir::flash::Chip::Any",
           "Target GPU (any, sm_80, sm_90a): tensor-cores=auto takes wgmma "
           "on sm_90a, and wgmma on another known chip is an error",
           [{::llvm::cl::values(
               clEnumValN(::mlir::flash::Chip::Any, "any", "not known"),
               FLASH_GPU_CHIP_VALUES)}]>,
    Option<"tensorCores", "tensor-cores", "::mlir::flash::TensorCores",
           "::mlir::flash::TensorCores::Auto",
           "Tensor cores the contractions will use (see "
           "--flash-gpu-lower-tile-mma)",
           "FLASH_TENSOR_CORES_VALUES">,
    Option<"registerTiles", "register-tiles", "bool", "true",
           "Keep the tiles indexed by query rows in warp registers, "
           "FlashAttention-2 style, when the block's rows split into 16-row "
           "slices per warp">,
    Option<"asyncCopies", "async-copies", "bool", "true",
           "Tiles will be loaded by cp.async or TMA (the only writers that "
           "place a swizzled tile's bytes): a precondition of wgmma">,
    Option<"stagedReductions", "staged-reductions", "bool", "false",
           "In wgmma launches, stage the atomic backward's dQ sums in "
           "shared memory for TMA tensor reductions instead of adding them "
           "from registers (sm_90a)">,
    Option<"swizzleLdmatrix", "swizzle-ldmatrix", "bool", "true",
           "In mma.sync launches with register tiles and async-copies, the "
           "operand tiles ldmatrix reads in the 128-byte swizzled layout "
           "instead of rows padded by 16 bytes">
  ];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def FlashGpuCarveSharedMemoryPass : Pass<"flash-gpu-carve-shared-memory"> {
  let summary = "Place a launch's shared-memory tiles in its dynamic shared "
                "memory";
  let description = [{
    Every tile buffer of a `gpu.launch` that `--flash-gpu-assign-tile-storage`
    did not give to registers or accumulators becomes a view of the launch's
    dynamic shared memory (`gpu.dynamic_shared_memory`, `memref.view`, cast
    to the generic space), at the lowest offset free while it is live
    (buffers whose live ranges do not overlap share bytes):

    - in a launch with register tiles (`flash.register_rows`) the other
      tiles' rows of an even number of 16-byte units get 16 bytes of
      padding, so that the eight row addresses of an `ldmatrix` fall in
      distinct banks;
    - `"swizzled"` tiles are unpadded and 1024-byte aligned (the swizzle
      pattern repeats every 1024 bytes), their cast tagged
      `flash.swizzled_128b`; a wgmma launch (whose descriptors need it)
      traps if the window's base is not 1024-byte aligned;
    - a `"reduction_stage"` tile is unpadded, 1024-byte aligned and carved
      as `[2, rows, cols]`: two copies that the MMA lowering writes in
      turn, in 128-byte swizzled panels that TMA reads; the tile is a view
      of the first, its cast tagged `flash.reduction_stage`.

    The launch records its size in `flash.shared_memory_bytes` and its
    dynamic shared memory operand. Tiles that need more than a CTA may use
    on `chip` (163 KiB on sm_80, 227 KiB on sm_90a and for any chip) are a
    located error naming both sizes: no kernel of them could launch.
  }];
  let options = [
    Option<"chip", "chip", "::mlir::flash::Chip", "::mlir::flash::Chip::Any",
           "Target GPU (any, sm_80, sm_90a): its shared memory per CTA",
           [{::llvm::cl::values(
               clEnumValN(::mlir::flash::Chip::Any, "any", "not known"),
               FLASH_GPU_CHIP_VALUES)}]>
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def FlashGpuWarpRegisterTilesPass : Pass<"flash-gpu-warp-register-tiles"> {
  let summary = "Rewrite the ops on a launch's register tiles into per-lane "
                "code (FlashAttention-2's warp mapping)";
  let description = [{
    In each `gpu.launch` with `flash.register_rows = R`, the tiles tagged
    `flash.tile_storage = "registers"` become SSA vectors in the mma.sync
    m16n8k16 accumulator layout: warp w owns rows [w R/W, (w+1) R/W) (with
    `flash.wgmma`, warp w of warpgroup g rows g R/G + 16 w + 64 i), lane
    4g + t rows g, g + 8 and columns 2t, 2t + 1 of each 8-column slice;
    row vectors one value per owned row. Elementwise generics run per owned
    element, row reductions in registers plus two xor shuffles (except for
    a row sum that the online softmax only rescales and adds to, l: each
    lane keeps the partial sum of its columns, added over the quad once
    where it is read, as FlashAttention-2 and -3 do), the
    contractions as `nvvm.mma.sync` with `ldmatrix` fragments and P taken
    from registers as the A operand, or with `flash.wgmma` as
    `flashgpu.warpgroup_mma` reading swizzled shared operands through
    descriptors; loops carry the tiles live on entry; the final copy out is
    guarded stores. With `pair-stores` (kernels for aligned rows) a tile is
    stored two adjacent columns per store; with `wide-stores` too, a tile of
    a 2-byte type whose lanes hold whole groups of 32 columns of a row is
    stored 16 bytes per store (the quad's lanes first exchange their column
    pairs with two butterfly steps of shuffles). With `lazy-rescale` (mma.sync
    launches only) the accumulator's rescale by exp2(m_old - m_new) is
    skipped behind a warp vote when no row maximum of the warp moved. With
    `ragged-keys` a P V tagged `flash.ragged_keys` (a masked key loop's) is
    split at V's row 64, the rest issued only when the block's padded V tile
    holds more valid rows (docs/Rationale.md). The
    launch is tagged `flash.warp_register_tiles`.
  }];
  let options = [
    Option<"pairStores", "pair-stores", "bool", "false",
           "Store register tiles to global memory two adjacent columns per "
           "store (the kernel traps on rows that are not aligned for it)">,
    Option<"wideStores", "wide-stores", "bool", "false",
           "With pair-stores: 16 bytes per store where a lane's rows hold "
           "whole groups of 32 two-byte columns (after a transpose over the "
           "quad; the kernel traps on rows that are not 16-byte aligned)">,
    Option<"lazyRescale", "lazy-rescale", "bool", "true",
           "mma.sync launches multiply the accumulator by the online "
           "softmax's rescale only when a row maximum of the warp moved (a "
           "warp vote and a branch; fewer registers): false multiplies "
           "always, as warpgroup MMA launches do">,
    Option<"raggedKeys", "ragged-keys", "bool", "true",
           "Warpgroup MMA launches leave the zero rows of a ragged key "
           "block (products tagged flash.ragged_keys, blocks of 128 keys or "
           "more) out of its P V: a second MMA for the rows past 64, issued "
           "only when the block holds more keys than that">,
    Option<"perIterationLanes", "per-iteration-lanes", "bool", "false",
           "mma.sync launches: the lane's coordinates rebuilt at the top of "
           "each loop body from flashgpu.per_iteration of the thread index, "
           "so the per-lane addresses there (ldmatrix fragments, stores) "
           "stay in the loop, one base plus immediates, instead of each "
           "hoisted into a register live across it">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::flashgpu::FlashGPUDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::vector::VectorDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def FlashGpuAsyncTileLoadsPass : Pass<"flash-gpu-async-tile-loads"> {
  let summary = "Load a launch's shared tiles asynchronously: cp.async, TMA, "
                "a producer warpgroup";
  let description = [{
    The zero-padded tile loads of the tiled form (a `linalg.map` zero fill,
    then a `memref.copy` of the valid rows) into carved shared tiles become
    16-byte `cp.async` chunks spread over the block's threads, zero-filling
    the rows past the end, one async group per tile, each waited for (and
    the block synchronised) just before its first reader. In key-block
    loops, FlashAttention-2's schedule (a tile read early is loaded one
    iteration ahead). Such a kernel requires contiguous 16-byte aligned rows
    and traps at entry otherwise.

    - `load-stages=2`: every tile loaded in a key-block loop gets a second
      copy and is loaded one whole iteration ahead into the copy the
      previous iteration read, one wait and one barrier per iteration, where
      the copies fit the chip's shared memory.
    - `tma-loads` (launches with `flash.wgmma`): such a loop's tiles, when
      each is whole 64-column panels of a 16-bit kernel argument, come by
      TMA: thread 0 issues `nvgpu.tma.async.load` boxes against an mbarrier
      per tile and copy; the function gets a last `memref<?xi8>` argument
      with the tensor maps (`flash.tensor_maps`).
    - `warp-specialize`: a producer warpgroup (an `scf.if` tagged
      `flash.warp_role = "producer"`) issues those copies into a ring of two
      copies guarded by full/empty mbarriers; the launch is tagged
      `flash.warp_specialized` and is complete only after
      `--flash-gpu-split-warp-roles`. The tiles loaded once before the loops
      (Q), when TMA can load them and no other tile shares their bytes, are
      the producer's too: issued ahead of the ring on an mbarrier of their
      own, which the consumers wait for (then meet at a barrier) before the
      first reader. In a persistent launch (`flash.tile_loop`) the CTA's
      k-th tile completes its phase k, and the consumers release the tile
      on a second mbarrier after its last reader, so that the producer loads
      the next tile's while they finish this one.
    - With `ragged-tma`, a forward key tile whose valid rows end before its
      tensor's (`key_lengths`, `cu_seqlens`: the rows past them are a stale
      cache or the next sequence) is a TMA box too: S = Q Kᵀ selects those
      keys' scores to -inf, and in a block the tiler tagged
      `flash.ragged_keys` the consumers zero V's rows past the valid ones
      once the box is in (16-byte stores, a fence towards the async proxy,
      a barrier of the consumers), so that P V meets zeros. In the
      backward (varlen: `cu_seqlens`) the key-loop tiles that its products
      read past a sequence's end (K, V in the dQ nest; Q, dO in the dK/dV
      nest) are zeroed past the valid rows in every block, as the cp.async
      copy's zero fill was (a test skips whole tiles at run time); ragged
      LSE and D rows stay cp.async copies. The producer reads the lengths,
      offsets or block table itself (kernel arguments the launch never
      writes).
    - In kernels that add into global memory (`flash.atomic_add`), padded
      loads of f32 row vectors (LSE, D) are cp.async copies too, and with
      `tma-loads` (and `tma-row-vectors`) unswizzled TMA boxes along the
      tensor's innermost dimension, so that such a loop's tiles all come by
      TMA (one f32 tensor map per vector; TMA's zero fill pads them).

    The launch's `flash.shared_memory_bytes` grows by what the extra copies
    and mbarriers take. Run after `--flash-gpu-warp-register-tiles` (the
    loads are scheduled around the MMAs that read them).
  }];
  let options = [
    Option<"chip", "chip", "::mlir::flash::Chip", "::mlir::flash::Chip::Any",
           "Target GPU (any, sm_80, sm_90a): its shared memory per CTA "
           "bounds the second copies",
           [{::llvm::cl::values(
               clEnumValN(::mlir::flash::Chip::Any, "any", "not known"),
               FLASH_GPU_CHIP_VALUES)}]>,
    Option<"loadStages", "load-stages", "int64_t", "1",
           "Copies of each tile loaded in a key-block loop: 1 (K one block "
           "ahead, V at the top of its iteration, two barriers per "
           "iteration: FlashAttention-2's schedule) or 2 (every tile one "
           "iteration ahead into alternating copies, one barrier per "
           "iteration)">,
    Option<"tmaLoads", "tma-loads", "bool", "false",
           "With load-stages=2 on wgmma launches: the key-block loops' tiles "
           "by TMA through tensor maps the caller passes in a last argument">,
    Option<"warpSpecialize", "warp-specialize", "bool", "false",
           "With tma-loads: a producer warpgroup of 128 more threads issues "
           "the key-block loops' TMA copies into a ring of two copies per "
           "tile; --flash-gpu-split-warp-roles must follow">,
    Option<"tmaRowVectors", "tma-row-vectors", "bool", "true",
           "With tma-loads, in kernels with flash.atomic_add: the f32 row "
           "vectors (LSE, D) by TMA with the tiles (false: element copies, "
           "each behind a barrier, which take fewer registers)">,
    Option<"raggedTma", "ragged-tma", "bool", "false",
           "With tma-loads: key-loop tiles whose valid rows end before "
           "their tensor's (a KV cache's length, a packed sequence's end) by "
           "TMA too; the consumers zero the rows past the valid ones where a "
           "product needs zeros (V in a ragged forward block, "
           "flash.ragged_keys; every tile a backward product reads)">,
    Option<"perIterationLanes", "per-iteration-lanes", "bool", "false",
           "cp.async copies inside a loop take the thread index through "
           "flashgpu.per_iteration: their rows and addresses are rebuilt in "
           "each iteration, not held across the loop">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::flashgpu::FlashGPUDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def FlashGpuLowerTileMmaPass : Pass<"flash-gpu-lower-tile-mma"> {
  let summary = "Lower a launch's remaining tile contractions onto tensor "
                "cores";
  let description = [{
    Each tile contraction (a 2-D f16/bf16 multiply-add generic with an f32
    accumulator) left in a `gpu.launch` after the warp rewrite becomes
    tensor-core code, the first that applies of:

    - a contraction whose zero-filled C goes only to a `flash.atomic_add`
      (`"accumulators"`: the atomic backward's dS K added to dQ): on
      warpgroup MMA in `flash.wgmma` launches (A the staged dSᵀ read
      m-major, the warpgroups splitting the output), else on mma.sync; the
      accumulators stay in registers and the reductions
      (`flashgpu.reduce_add`, two adjacent columns) are issued straight from
      them; where that C is a `"reduction_stage"` tile (wgmma) and the sums
      go to a slice of a kernel argument whose rows end with the tensor's,
      each warpgroup stores its accumulators there instead, into the copy
      of the step's parity, in 128-byte swizzled panels of 32 columns, and
      one of its threads adds them to the argument with one TMA tensor
      reduction per panel (`nvvm.cp.async.bulk.tensor.reduce`, a tensor
      map appended to `flash.tensor_maps`; FlashAttention-3's dQ).
      Only the warpgroup's own threads synchronise (named barrier 8 + g):
      before the stores, once the reductions of the step before the last
      have read their copy; after them, once every store is fenced towards
      the async proxy. The stage is drained after the loop;
    - WMMA 16x16x16 fragments (f16; `tensor-cores=wmma`, or auto off
      sm_90a);
    - mma.sync m16n8k16 per 16 x 8 tile of C, each warp taking tiles in
      turn, `ldmatrix` fragments where both operands are shared tiles (a
      zero fill of C right before becomes zero accumulators).

    With `tensor-cores=none` contractions are left to
    `--flash-gpu-distribute-to-threads`. The `"accumulators"` allocations
    are erased once their contraction is lowered.
  }];
  let options = [
    Option<"chip", "chip", "::mlir::flash::Chip", "::mlir::flash::Chip::Any",
           "Target GPU (any, sm_80, sm_90a): what tensor-cores=auto means",
           [{::llvm::cl::values(
               clEnumValN(::mlir::flash::Chip::Any, "any", "not known"),
               FLASH_GPU_CHIP_VALUES)}]>,
    Option<"tensorCores", "tensor-cores", "::mlir::flash::TensorCores",
           "::mlir::flash::TensorCores::Auto",
           "mma-sync (mma.sync.m16n8k16, f16 and bf16), wgmma (as mma-sync "
           "here; warpgroup MMA where the launch has flash.wgmma), wmma "
           "(16x16x16 fragments, f16 only), auto (wgmma when chip=sm_90a; "
           "else wmma for f16, mma-sync for bf16) or none",
           "FLASH_TENSOR_CORES_VALUES">
,
    Option<"perIterationLanes", "per-iteration-lanes", "bool", "false",
           "mma.sync contractions inside a loop derive the lane's "
           "coordinates from flashgpu.per_iteration (as in "
           "--flash-gpu-warp-register-tiles)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::flashgpu::FlashGPUDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::vector::VectorDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def FlashGpuDistributeToThreadsPass : Pass<"flash-gpu-distribute-to-threads"> {
  let summary = "Spread what is left of a launch's tile work over its "
                "threads (the SIMT mapping)";
  let description = [{
    The portable rest of the GPU mapping, for every `gpu.launch`:

    - `flash.atomic_add` of a tile becomes a parallel loop of relaxed f32
      reductions (`flashgpu.reduce_add`), four adjacent columns each where
      the tile's columns allow (the kernel traps unless the destination's
      rows are contiguous);
    - the remaining linalg ops become parallel loops;
    - each `scf.parallel` and `memref.copy` is strided over the block's
      threads (thread t takes iterations t, t + threads, ...) and followed
      by a `gpu.barrier`.

    A kernel none of whose ops the earlier steps took (`register-tiles=false
    async-copies=false tensor-cores=none`) is FlashAttention's algorithm in
    plain SIMT code: slow, but correct for any shapes and strides.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::flashgpu::FlashGPUDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::vector::VectorDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def FlashGpuSplitWarpRolesPass : Pass<"flash-gpu-split-warp-roles"> {
  let summary = "Separate a warp-specialised launch's producer and consumers";
  let description = [{
    Completes each `gpu.launch` tagged `flash.warp_specialized = C` (C
    consumer threads) by `--flash-gpu-async-tile-loads{warp-specialize}`, whose
    body holds the producer's `scf.if` (`flash.warp_role = "producer"`,
    threads C and up) followed by the consumers' code:

    - everything after the producer becomes the consumers' `scf.if`
      (threads 0 ... C - 1, `flash.warp_role = "consumer"`), and the launch
      gets the producer's 128 threads more;
    - the consumers' `gpu.barrier`s become named barrier 1 over C threads
      (the producer, which exits when its copies are issued, never reaches
      them), and so does the consumers' `flashgpu.last_arrival` (the
      split-KV kernel's end);
    - `setmaxnreg`: the producer keeps 24 registers per thread (64 in a
      persistent launch) and the consumers take what that frees, up to 240,
      the shares adding up to no more than the CTA got at launch;
    - with `ping-pong` and two or three consumer warpgroups, their
      S = Q Kᵀ MMAs (`flashgpu.warpgroup_mma` with
      `flash.contraction = "scores"`) take turns in order: warpgroup g
      waits on named barrier 2 + g before each and arrives on the next
      one's after it; the last warpgroup lets warpgroup 0 start, and
      warpgroup 0 takes the last arrival at its end
      (FlashAttention-3's ping-pong: one warpgroup's softmax runs while
      another's MMAs do).

    Launches without the tag are left as they are.
  }];
  let options = [
    Option<"pingPong", "ping-pong", "bool", "false",
           "The consumer warpgroups' S = Q Kᵀ MMAs take turns through named "
           "barriers (two or three consumer warpgroups)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::flashgpu::FlashGPUDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def FlashGpuAsyncMmaPass : Pass<"flash-gpu-async-mma"> {
  let summary = "Let each warpgroup MMA run under the code that follows it";
  let description = [{
    Makes every `flashgpu.warpgroup_mma` async (issue and commit only) and
    waits for it with a `flashgpu.warpgroup_mma_wait` just before the first
    op of its block that needs it done:

    - an op that uses its result (or one nested in it does);
    - an op that may write shared memory or lets other threads do so: a
      `gpu.barrier`, a cp.async, a store to workgroup memory, any op whose
      memory effects are unknown (the next tiles overwrite what the MMA
      reads);
    - the block's terminator (a wait never crosses a loop iteration or a
      region).

    The wait also returns the MMA's A fragments when they are in registers
    (P in P V): the first use of those, too, waits; it counts as
    `pending` the MMAs issued after this one that are waited for later
    (wgmma groups complete in issue order). Code between an MMA and its wait
    runs while the tensor cores work: in a key-block loop pipelined as
    FlashAttention-3 does (S = Q Kᵀ of block j and P V of block j - 1
    issued, then the softmax of block j), the softmax overlaps P V. Run
    after `--flash-map-tiles-to-gpu` and before `--flash-gpu-fast-exp2`
    (the intrinsic call it makes has unknown effects).
  }];
  let dependentDialects = ["::mlir::flashgpu::FlashGPUDialect"];
}

def FlashGpuMergeSplitsInLastCtaPass
    : Pass<"flash-gpu-merge-splits-in-last-cta", "func::FuncOp"> {
  let summary = "Merge a split-KV query block's runs in the CTA of its last "
                "run, in one launch";
  let description = [{
    Before `--flash-gpu-map-to-blocks`, on the bufferized nests of a
    split-KV attention: in a function with an argument tagged
    `flash.workspace = "split_counters"` (i32 [B, Hq, >= query blocks], zero
    between calls; flash-compile passes one, the runtime keeps it), each
    split nest (`flash.key_split_rows` = Br: iterations (batch, head, query
    block x S + run), S the leading size of the `o_split` argument) takes
    over the merge nest after it (`flash.merge_rows` rows an iteration): at
    its end the iteration arrives at its query block's counter
    (`flashgpu.last_arrival`), and the last of the S runs to arrive runs the
    merge's iterations for the block's rows, reading the partial results
    that the others wrote. The merge's launch, and the latency of its start
    and of its first loads after the split grid, go away (FlashDecoding++'s
    and stream-K's last-CTA fix-up); the merge's tiles join the split
    kernel's. Pure ops between the two nests move before the first.
    Without the argument the nests are left alone, and so is a pair whose
    split nest does not carry `flash.key_split_rows` (packed sequences,
    causal blocks aligned to the last row: their query blocks are not
    [q Br, (q + 1) Br)).

    ```mlir
    scf.forall (%b, %h, %x) in (%B, %H, %X) {
      ...  // writes o_split[%x mod S, %b, %h, rows] and lse_split
      %last = flashgpu.last_arrival %counters[%b, %h, %x / S] of %S
      scf.if %last {
        scf.for %r = first to last merge row block of the query block {
          ...  // the merge nest's body at (%b, %h, %r)
        }
      }
    } {flash.key_split_rows = 64}
    ```
  }];
  let dependentDialects = ["flashgpu::FlashGPUDialect", "scf::SCFDialect"];
}

def FlashGpuDependentLaunchesPass : Pass<"flash-gpu-dependent-launches"> {
  let summary = "Let a launch tagged flash.dependent_launch start before "
                "the one it reads has finished";
  let description = [{
    CUDA's programmatic dependent launch, for the split-KV merge: a
    `gpu.launch` tagged `flash.dependent_launch` (by
    `--flash-gpu-map-to-blocks`, from the tiler's mark on a nest that reads
    only what the nest before it wrote) waits for the grid before it at its
    start (`nvvm.griddepcontrol wait`), and the launch before it in the
    same block lets its dependents be scheduled as soon as each of its CTAs
    has started (`nvvm.griddepcontrol launch_dependents` at the start of its
    body), so that the dependent's launch and its CTAs' start overlap the
    previous grid. Both instructions do nothing unless the host launches the
    dependent with programmatic stream serialization (the manifest's
    `programmatic_dependent_launch`, which flash_mlir.runtime honours):
    the kernels stay correct under a plain launch. sm_90 and newer (the GPU
    pipeline runs it for sm_90a only). A tagged launch with no launch
    before it in its block is an error.

    ```mlir
    gpu.launch ... { nvvm.griddepcontrol launch_dependents  ...split... }
    gpu.launch ... { nvvm.griddepcontrol wait  ...merge... } {flash.dependent_launch}
    ```
  }];
  let dependentDialects = ["NVVM::NVVMDialect"];
}

def FlashGpuFastExp2Pass : Pass<"flash-gpu-fast-exp2"> {
  let summary = "Put the online softmax's exp2 on the MUFU fast path";
  let description = [{
    Rewrites every f32 `math.exp2` inside a `gpu.launch` into
    `llvm.nvvm.ex2.approx.ftz.f32` (one MUFU instruction instead of the
    libdevice routine). Exact enough for the tiled softmax, the only
    producer of exp2 in these kernels: its arguments are `x - m <= 0`, and
    results below 2^-126 (flushed to 0) are far below what the
    probabilities' bf16/f16 rounding keeps. Other element types and exp2
    outside kernels are left as they are. The GPU pipeline runs it after
    `--flash-map-tiles-to-gpu`.

    With `emulate-every=n` (n > 0), every n-th exp2 of a block (in order)
    is computed on the FMA pipes instead (FlashAttention-4's split of the
    exponentials between MUFU and a polynomial): x is clamped to -127,
    rounded to an integer j by adding and subtracting 1.5 * 2^23 (so f =
    x - j is in [-0.5, 0.5]), 2^f is a degree-4 polynomial (Horner, fixed
    constant 1: relative error below 3e-6 in f32) and j is added to its
    exponent bits (x = -inf gives exactly 0): 10 instructions on other
    pipes instead of one MUFU instruction. Worth it only where the softmax
    is bound by MUFU's rate; on the H200 it is not, and every 3rd, 5th or
    8th emulated measured 2-19% slower (docs/GPU-NOTES.md 65), so the GPU
    pipeline leaves it off unless asked.
  }];
  let options = [
    Option<"emulateEvery", "emulate-every", "int64_t", /*default=*/"0",
           "Compute every n-th exp2 of a block with a polynomial on the FMA "
           "pipes (0: none)">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::arith::ArithDialect"];
}

def ConvertFlashGPUToLLVMPass : Pass<"convert-flashgpu-to-llvm"> {
  let summary = "Print flashgpu operations as inline PTX (llvm.inline_asm)";
  let description = [{
    Rewrites each `flashgpu` op into one `llvm.inline_asm` block and the
    vector element moves around it (`populateFlashGPUToLLVMPatterns`):
    `flashgpu.warpgroup_mma` becomes a fence, one
    `wgmma.mma_async.sync.aligned.m64nNk16` per slice and k step (the
    descriptors advanced inside the asm), a commit and a wait;
    `flashgpu.reduce_add` the element's address (from the memref's
    metadata) and one `red.relaxed.gpu.add.f32` per element, or with
    `vector-reductions` (sm_90 and newer: the GPU pipeline sets it for
    sm_90a) one `red.relaxed.gpu.global.add.v2.f32` / `.v4.f32` per vector;
    `flashgpu.last_arrival` its barrier, thread 0's
    `atom.acq_rel.gpu.add.u32` and a `bar.red.or` of its verdict.
    Runs on any op; the GPU pipeline runs it right after
    `--flash-map-tiles-to-gpu`.
  }];
  let options = [
    Option<"vectorReductions", "vector-reductions", "bool", "false",
           "A vector reduce_add as one vector red (PTX 8.1, sm_90 and newer)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def FlashGpuLaunchBoundsPass : Pass<"flash-gpu-launch-bounds"> {
  let summary = "Make each kernel's flashgpu.ctas_per_sm its nvvm.minctasm";
  let description = [{
    Runs after kernel outlining: the `flashgpu.ctas_per_sm` ops inside a
    `gpu.func` (placed by `--flash-gpu-split-warp-roles` before outlining,
    which keeps no attribute of the launch) become the function's
    `nvvm.minctasm`, which the NVVM lowering prints as `.minnctapersm`;
    the ops are erased. Two different counts in one kernel are an error.
  }];
}

#endif // FLASH_CONVERSION_PASSES_TD
