//===- FlashGPUOps.td - flashgpu dialect and operations ----*- tablegen -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_DIALECT_FLASHGPU_IR_FLASHGPUOPS_TD
#define FLASH_DIALECT_FLASHGPU_IR_FLASHGPUOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def FlashGPU_Dialect : Dialect {
  let name = "flashgpu";
  let cppNamespace = "::mlir::flashgpu";
  let summary = "GPU instructions that the upstream dialects do not expose";
  let description = [{
    Operations for what flash-mlir's GPU mapping needs and upstream MLIR 22's
    NVGPU and NVVM dialects cannot say, each with a verifier, each printed as
    PTX in one lowering (`--convert-flashgpu-to-llvm`, inline asm), in the
    way Triton keeps its warpgroup MMA behind `nvgpu.wgmma`. Upstream
    `nvvm.wgmma.mma_async` takes its A operand only as a shared-memory
    descriptor; P · V wants A from registers.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::vector::VectorDialect"];
}

class FlashGPU_Op<string mnemonic, list<Trait> traits = []> :
    Op<FlashGPU_Dialect, mnemonic, traits>;

def FlashGPU_WarpgroupMmaOp : FlashGPU_Op<"warpgroup_mma",
    [AttrSizedOperandSegments, MemoryEffects<[MemRead]>,
     OptionalTypesMatchWith<"the accumulator has the result's type",
                            "result", "accumulator", "$_self">]> {
  let summary = "C (+)= A B on a warpgroup: wgmma.mma_async m64nNk16, then wait";
  let description = [{
    One warpgroup (four warps) computes `C = A B` (or `C += A B` with
    `accumulator`) for `slices` slices of 64 rows each, over
    `k = 16 * k_steps`, with `wgmma.mma_async.sync.aligned.m64n<n>k16`
    (f32 accumulation of f16 or bf16 operands): one instruction per slice
    and k step, fenced before, committed and waited for after, so the
    accumulator registers are in flight only inside the op.

    - `accumulator` / `result`: this thread's `slices * n / 2` f32 values,
      slice-major, each slice in wgmma's accumulator order.
    - A is either a shared tile read through `a_descriptor` (the low word
      of a 128-byte-swizzled, K-major shared-memory matrix descriptor of
      the warpgroup's first row; `a_rows` is the tile's row count, giving
      the distance between its 64-column panels; with `a_m_major`, `[k, m]`
      rows instead: a transposed A, such as dS read from a staged dSᵀ, each
      64-row slice one 64-column panel), or `a_fragments`: this
      thread's A fragments in registers, `4 * slices * k_steps` i32 words
      (two f16/bf16 values each) in mma.sync m16n8k16 order.
    - B is a shared tile read through `b_descriptor`, 128-byte swizzled:
      with `b_k_major`, `[n, k]` rows (K, read as Kᵀ), otherwise `[k, n]`
      rows (V); `b_rows` is its row count. A K-major B is stepped through
      its 64-column panels (`b_rows * 128` bytes apart) in the asm; for a
      `[k, n]` B the panel distance is the descriptor's leading byte
      offset, which the caller encodes.

    Every thread of the warpgroup must execute the op (`.sync.aligned`),
    and the shared tiles must be visible to the async proxy
    (`fence.proxy.async`) before it.

    With `async` the op only issues and commits its MMAs (one wgmma group):
    the result is in flight, and so are the A fragments and the shared tiles
    it reads, until a `flashgpu.warpgroup_mma_wait` returns the result. Only
    that wait may use it (`--flash-gpu-async-mma` makes the ops async and
    places the waits).
  }];
  let arguments = (ins
    Optional<VectorOfRankAndType<[1], [F32]>>:$accumulator,
    Optional<I32>:$a_descriptor,
    Optional<VectorOfRankAndType<[1], [I32]>>:$a_fragments,
    I32:$b_descriptor,
    ConfinedAttr<I64Attr, [IntMinValue<8>, IntMaxValue<256>]>:$n,
    ConfinedAttr<I64Attr, [IntPositive]>:$k_steps,
    ConfinedAttr<I64Attr, [IntPositive]>:$slices,
    TypeAttr:$element_type,
    OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$a_rows,
    ConfinedAttr<I64Attr, [IntPositive]>:$b_rows,
    UnitAttr:$b_k_major,
    UnitAttr:$a_m_major,
    UnitAttr:$async
  );
  let results = (outs VectorOfRankAndType<[1], [F32]>:$result);
  let assemblyFormat = [{
    (`acc` `(` $accumulator^ `)`)?
    (`a_desc` `(` $a_descriptor^ `)`)?
    (`a_regs` `(` $a_fragments^ `:` type($a_fragments) `)`)?
    `b_desc` `(` $b_descriptor `)` attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def FlashGPU_WarpgroupMmaWaitOp : FlashGPU_Op<"warpgroup_mma_wait",
    [MemoryEffects<[MemRead, MemWrite]>,
     DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "wgmma.wait_group: the MMAs issued before the last `pending` groups are done";
  let description = [{
    Waits until at most `pending` warpgroup MMA groups of this warpgroup are
    still in flight (`wgmma.wait_group.sync.aligned pending`) and returns
    `values` unchanged: the results of the async `flashgpu.warpgroup_mma`
    ops it completes, and the register operands (A fragments) that those
    MMAs read, which must stay untouched until here. Every other use of an
    async MMA's result goes through this op's corresponding result, so no
    instruction can read an accumulator while the tensor cores write it.
    Groups complete in issue order: `pending` counts the async MMAs issued
    after the last one this op returns that may stay in flight.
  }];
  let arguments = (ins
    Variadic<VectorOfRankAndType<[1], [F32, I32]>>:$values,
    ConfinedAttr<I64Attr, [IntNonNegative]>:$pending
  );
  let results = (outs Variadic<VectorOfRankAndType<[1], [F32, I32]>>:$results);
  let assemblyFormat = [{
    $values attr-dict `:` type($values)
  }];
  let hasVerifier = 1;
}

def FlashGPU_ReduceAddOp : FlashGPU_Op<"reduce_add"> {
  let summary = "memref[indices] += value in global memory, relaxed (red.add.f32)";
  let description = [{
    One f32 reduction into global memory, atomic and unordered:
    `red.relaxed.gpu.global.add.f32` (the destination must be in global
    memory). A `vector<N x f32>` value (N = 2 or 4) adds its elements into
    N adjacent elements along the innermost dimension, which must have unit
    stride: N reductions off one address. The mapping's lowering of
    `flash.atomic_add` inside a kernel. Upstream `memref.atomic_rmw addf`
    lowers to an acquire-release `atomicrmw`, which puts a fence around
    every addition; a sum that is read only after the kernel ends needs no
    ordering.
  }];
  let arguments = (ins AnyTypeOf<[F32, VectorOfRankAndType<[1], [F32]>]>:$value,
                   Arg<MemRefOf<[F32]>, "", [MemRead, MemWrite]>:$dest,
                   Variadic<Index>:$indices);
  let assemblyFormat =
      "$value `,` $dest `[` $indices `]` attr-dict `:` type($value) `,` type($dest)";
  let hasVerifier = 1;
}

def FlashGPU_CtasPerSmOp : FlashGPU_Op<"ctas_per_sm"> {
  let summary = "the kernel it is in is meant to run `count` CTAs per SM";
  let description = [{
    A launch bound stated from inside the kernel, where it survives kernel
    outlining: `--flash-gpu-launch-bounds` makes it the outlined
    function's `nvvm.minctasm` (PTX `.minnctapersm`), so that ptxas keeps
    the registers of each thread at launch within the block's share of an
    SM, and erases it. `--flash-gpu-split-warp-roles` places it where two
    warp-specialised CTAs of one consumer warpgroup fit an SM.
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntPositive]>:$count);
  let assemblyFormat = "$count attr-dict";
  let hasVerifier = 1;
}

def FlashGPU_LastArrivalOp : FlashGPU_Op<"last_arrival"> {
  let summary = "whether this CTA is the `count`-th to arrive at a counter";
  let description = [{
    The CTA's threads (those of its named barrier where `barrier_id` and
    `barrier_threads` say one) arrive together at `counter[indices]`, an
    i32 in global memory: the threads synchronise (so that their earlier
    writes are ordered before the first thread's next operation) and the
    first adds one to the counter with acquire-release semantics at GPU
    scope (`atom.acq_rel.gpu`: its release makes the CTA's writes visible
    to whichever CTA acquires the count after it, its acquire makes the
    earlier arrivals' writes visible to this one). A second barrier hands
    the verdict to every thread: true in the CTA whose addition was the
    `count`-th, which also puts the counter back to 0 (for the next launch)
    and whose threads, past that barrier, see what the other arriving CTAs
    wrote before they arrived (CUTLASS's semaphore protocol). The counter
    must be 0 before the first of the `count` arrivals.

    The split-KV kernel's end (`--flash-gpu-merge-splits-in-last-cta`): the
    last run of a query block to finish merges the runs' partial results.
    `--flash-gpu-split-warp-roles` names the consumers' barrier where the op
    is theirs.
  }];
  let arguments = (ins Arg<MemRefOf<[I32]>, "", [MemRead, MemWrite]>:$counter,
                   Variadic<Index>:$indices, Index:$count,
                   OptionalAttr<ConfinedAttr<I32Attr, [IntNonNegative]>>:$barrier_id,
                   OptionalAttr<ConfinedAttr<I32Attr, [IntPositive]>>:$barrier_threads);
  let results = (outs I1:$last);
  let assemblyFormat = [{
    $counter `[` $indices `]` `of` $count attr-dict `:` type($counter)
  }];
  let hasVerifier = 1;
}

def FlashGPU_ExitOp : FlashGPU_Op<"exit"> {
  let summary = "the thread ends here (PTX `exit`)";
  let description = [{
    The thread that executes it ends: it does no more work and no longer
    counts at any barrier. A kernel's threads must all take it or all not
    where a barrier of all of them follows (the GPU mapping places it where
    the condition is the CTA's: a packed sequence's query block past its
    rows, `flash.skip_tile`). Lowered to `llvm.nvvm.exit`.
  }];
  let assemblyFormat = "attr-dict";
}

def FlashGPU_PerIterationOp : FlashGPU_Op<"per_iteration",
    [AllTypesMatch<["value", "result"]>]> {
  let summary = "a value that LLVM must recompute where it is, not hoist";
  let description = [{
    Returns `value`, through a `mov` that LLVM cannot see through (a
    side-effecting inline asm statement). What is computed from the result
    is computed after the op, in its block: inside a loop, LLVM's
    loop-invariant code motion cannot hoist it to the preheader.

    For addresses that are loop-invariant but cheap: a lane's shared-memory
    fragment addresses in a key loop are each `base + constant`; hoisted,
    each holds a 64-bit register across the loop (CodeGenPrepare does not
    sink them back to the `ldmatrix` intrinsics, so the constants are not
    folded into `[reg+imm]`). Computed from a per-iteration copy of the
    lane's coordinates, they share one base and add immediates.
  }];
  let arguments = (ins Index:$value);
  let results = (outs Index:$result);
  let assemblyFormat = "$value attr-dict";
}

#endif // FLASH_DIALECT_FLASHGPU_IR_FLASHGPUOPS_TD
