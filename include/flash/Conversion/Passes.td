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
    `--convert-linalg-to-parallel-loops` and makes it a GPU kernel:

    - the `scf.forall` over (batch, head, query block) becomes a `gpu.launch`
      with one block per query block (grid x = query blocks, y = heads,
      z = batch) and `threads` threads;
    - every tile buffer allocated inside it is carved out of the block's
      dynamic shared memory (`gpu.dynamic_shared_memory` + `memref.view`);
    - f16 and bf16 tile contractions (Q Kᵀ and P V) with 16-multiple
      shapes run on tensor cores: each warp accumulates 16x8 tiles of the
      result with 16x16 WMMA fragments (f16) or `nvvm.mma.sync` m16n8k16
      (bf16, or everything with `tensor-cores=mma-sync`); other linalg ops
      become parallel loops;
    - every `scf.parallel` and `memref.copy` inside is distributed over the
      block's threads (a thread-strided loop over the linearised iteration
      space) and followed by `gpu.barrier`;
    - index computations the body needs from outside are recomputed inside,
      so that the outlined kernel takes only the tensors' memrefs.

    This is the portable SIMT mapping: the tiles stay in shared memory and
    every thread does scalar f32 arithmetic. The launch records its shared
    memory size in `flash.shared_memory_bytes`.
  }];
  let options = [
    Option<"threads", "threads", "int64_t", "128", "Threads per block">,
    Option<"tensorCores", "tensor-cores", "std::string", "\"auto\"",
           "Tile contractions on tensor cores: mma-sync (mma.sync.m16n8k16, "
           "f16 and bf16), wmma (16x16x16 fragments, f16 only), auto (wmma "
           "for f16, mma-sync for bf16) or none">,
    Option<"registerTiles", "register-tiles", "bool", "true",
           "Keep the tiles indexed by query rows (scores, probabilities, "
           "accumulator, running max and sum) in warp registers, "
           "FlashAttention-2 style, when the block's rows split into 16-row "
           "slices per warp">,
    Option<"asyncCopies", "async-copies", "bool", "true",
           "Load global tiles into shared memory with 16-byte cp.async "
           "copies (zero-filling ragged rows), waited for just before their "
           "first reader, K one key block ahead; the kernel then requires "
           "contiguous 16-byte aligned rows (trap at entry otherwise)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::vector::VectorDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

#endif // FLASH_CONVERSION_PASSES_TD
