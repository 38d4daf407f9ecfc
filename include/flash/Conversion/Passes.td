//===- Passes.td - flash conversion passes -----------------*- tablegen -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_CONVERSION_PASSES_TD
#define FLASH_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def FlashMapTilesToGPUPass : Pass<"flash-map-tiles-to-gpu", "func::FuncOp"> {
  let summary = "Map the bufferized tiled attention loop nest onto GPU blocks and threads";
  let description = [{
    Takes the output of `--flash-tile-attention` after bufferization and
    makes it a GPU kernel:

    - the `scf.forall` over (batch, head, query block) becomes a `gpu.launch`
      with one block per query block (grid x = query blocks, last first;
      y = heads; z = batch) and `threads` threads;
    - with `register-tiles` (default), the tiles indexed by the block's
      rows (scores, probabilities, running max and sum, accumulator, output)
      live in registers in the mma.sync m16n8k16 accumulator layout, each
      warp owning 16 or 32 rows (FlashAttention-2): elementwise ops run per
      owned element, row reductions in registers plus two xor shuffles, the
      contractions as `nvvm.mma.sync` with `ldmatrix` fragments and P taken
      from registers as the A operand. The block's rows are those of the
      accumulators, the contractions the tiler tagged with an accumulating
      `flash.contraction` role (output, grad_query, grad_key, grad_value); a
      nest without the tags gets the SIMT mapping;
    - with `tensor-cores=wgmma` (sm_90a) and whole warpgroups (4, 8, ...
      warps), the contractions are Hopper warpgroup MMAs (`wgmma.mma_async`
      m64nNk16) instead, one `flashgpu.warpgroup_mma` each (printed as PTX
      by `--convert-flashgpu-to-llvm`), reading their shared-memory operands
      through matrix descriptors; those tiles are stored with the
      128-byte swizzle (unpadded, 1024-byte aligned), and warp w of
      warpgroup g owns rows g R/G + 16 w + 64 i. A launch where some
      contraction cannot take wgmma (operand columns not a multiple of 64,
      N > 256) stays on mma.sync;
    - a contraction that reads its A transposed (`grad_query_block` of the
      nondeterministic backward, dS K from dSᵀ) takes it from a shared tile
      of its own, copied there before a barrier, with `ldmatrix.trans` into
      mma.sync on shared C (whose zero fill becomes zero accumulators);
      `flash.atomic_add` of a tile becomes a distributed loop of
      `flashgpu.reduce_add`, four adjacent columns each where the
      destination's rows are contiguous (the kernel traps otherwise);
    - the other tiles (Q, K, V, bias, mask) are carved out of the block's
      dynamic shared memory (rows padded against ldmatrix bank conflicts);
      with `async-copies` (default) they are loaded with 16-byte cp.async,
      zero-filling ragged rows, K one key block ahead; such a kernel requires
      contiguous 16-byte aligned rows and traps at entry otherwise. With
      `load-stages=2` every tile loaded in a key-block loop (K and V) gets a
      second copy and is loaded one whole iteration ahead into the copy the
      previous iteration read (chosen by the parity of the iteration), with
      one wait and one barrier per iteration; where the copies would pass
      the chip's shared memory the loop keeps the one-copy schedule. With
      `tma-loads` as well (wgmma kernels) such a loop's tiles, when each is
      whole 64-column panels of a 16-bit kernel argument, come by TMA:
      thread 0 issues `nvgpu.tma.async.load` boxes against one mbarrier per
      tile and copy and every thread waits for its iteration's phase; the
      function gets a last `memref<?xi8>` argument with the tensor maps,
      described by its `flash.tensor_maps` attribute. With
      `warp-specialize` too, a producer warpgroup (threads `threads` ...
      `threads` + 127, an `scf.if` tagged `flash.warp_role = "producer"`)
      issues those copies for every iteration into a ring of two copies (it
      waits on an `empty` mbarrier per copy that every consumer thread
      arrives on at the end of its iteration); the launch is tagged
      `flash.warp_specialized` and is complete only after
      `--flash-gpu-split-warp-roles`;
    - what is left (element copies, and every op of a nest the warp mapping
      does not take) is the portable SIMT mapping: each `scf.parallel` and
      `memref.copy` distributed over the block's threads and followed by
      `gpu.barrier`, contractions on WMMA (f16) or mma.sync per output tile;
    - index computations the body needs from outside are recomputed inside,
      so that the outlined kernel takes only the tensors' memrefs.

    The launch records its shared memory size in
    `flash.shared_memory_bytes`, and `flash.warp_register_tiles` when the
    warp mapping was applied. Tiles that need more shared memory than a CTA
    may use on `chip` (163 KiB on sm_80, 227 KiB on sm_90a and for any chip)
    are a located error naming both sizes, raised before any tile is
    unrolled: no kernel of them could launch.
  }];
  let options = [
    Option<"threads", "threads", "int64_t", "128", "Threads per block">,
    Option<"chip", "chip", "::mlir::flash::Chip", "::mlir::flash::Chip::Any",
           "Target GPU (any, sm_80, sm_90a): tensor-cores=auto takes wgmma "
           "on sm_90a, and wgmma on another known chip is an error",
           [{::llvm::cl::values(
               clEnumValN(::mlir::flash::Chip::Any, "any", "not known"),
               FLASH_GPU_CHIP_VALUES)}]>,
    Option<"tensorCores", "tensor-cores", "::mlir::flash::TensorCores",
           "::mlir::flash::TensorCores::Auto",
           "Tile contractions on tensor cores: mma-sync (mma.sync.m16n8k16, "
           "f16 and bf16), wgmma (sm_90a warpgroup MMA for the warp register "
           "tiles, mma-sync elsewhere), wmma (16x16x16 fragments, f16 only), "
           "auto (wgmma when chip=sm_90a; else wmma for f16, mma-sync for "
           "bf16) or none",
           "FLASH_TENSOR_CORES_VALUES">,
    Option<"registerTiles", "register-tiles", "bool", "true",
           "Keep the tiles indexed by query rows (scores, probabilities, "
           "accumulator, running max and sum) in warp registers, "
           "FlashAttention-2 style, when the block's rows split into 16-row "
           "slices per warp">,
    Option<"asyncCopies", "async-copies", "bool", "true",
           "Load global tiles into shared memory with 16-byte cp.async "
           "copies (zero-filling ragged rows), waited for just before their "
           "first reader, K one key block ahead; the kernel then requires "
           "contiguous 16-byte aligned rows (trap at entry otherwise)">,
    Option<"loadStages", "load-stages", "int64_t", "1",
           "With async-copies, copies of each tile loaded in a key-block "
           "loop: 1 (K one block ahead, V at the top of its iteration, two "
           "barriers per iteration: FlashAttention-2's schedule) or 2 (every "
           "tile one iteration ahead into alternating copies, one barrier "
           "per iteration) where the copies fit the chip's shared memory">,
    Option<"tmaLoads", "tma-loads", "bool", "false",
           "With load-stages=2 on wgmma kernels: the key-block loops' tiles "
           "by TMA (cp.async.bulk.tensor into the swizzled copies, one "
           "mbarrier per tile and copy, issued by one thread) through tensor "
           "maps the caller passes in a last argument (flash.tensor_maps)">,
    Option<"warpSpecialize", "warp-specialize", "bool", "false",
           "With tma-loads: a producer warpgroup of 128 more threads issues "
           "the key-block loops' TMA copies into a ring of two copies per "
           "tile (full/empty mbarriers) and keeps 24 registers; the "
           "`threads` consumers compute with the rest (setmaxnreg). Applies "
           "where the launch's key-block loops run one after another over "
           "consecutive blocks with the same tiles; --flash-gpu-split-warp-"
           "roles must follow">,
    Option<"persistent", "persistent", "bool", "false",
           "The launch body is a loop over the tiles (row block fastest, "
           "batch slowest), tile t = the CTA's linear index + k * the grid's "
           "CTAs: correct for any grid, and the launch is tagged "
           "flash.persistent so that a caller may launch fewer CTAs than "
           "tiles (about one per SM). With warp-specialize the producer "
           "walks the tiles too, so it loads a CTA's next tile while the "
           "consumers finish the current one">
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

def FlashGpuSplitWarpRolesPass : Pass<"flash-gpu-split-warp-roles"> {
  let summary = "Separate a warp-specialised launch's producer and consumers";
  let description = [{
    Completes each `gpu.launch` tagged `flash.warp_specialized = C` (C
    consumer threads) by `--flash-map-tiles-to-gpu{warp-specialize}`, whose
    body holds the producer's `scf.if` (`flash.warp_role = "producer"`,
    threads C and up) followed by the consumers' code:

    - everything after the producer becomes the consumers' `scf.if`
      (threads 0 ... C - 1, `flash.warp_role = "consumer"`), and the launch
      gets the producer's 128 threads more;
    - the consumers' `gpu.barrier`s become named barrier 1 over C threads
      (the producer, which exits when its copies are issued, never reaches
      them);
    - `setmaxnreg`: the producer keeps 24 registers per thread and the
      consumers take what that frees, up to 240 (one CTA per SM);
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
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
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
    sm_90a) one `red.relaxed.gpu.global.add.v2.f32` / `.v4.f32` per vector.
    Runs on any op; the GPU pipeline runs it right after
    `--flash-map-tiles-to-gpu`.
  }];
  let options = [
    Option<"vectorReductions", "vector-reductions", "bool", "false",
           "A vector reduce_add as one vector red (PTX 8.1, sm_90 and newer)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
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
