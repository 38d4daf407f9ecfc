//===- Pipelines.h - flash pass pipelines -----------------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_PIPELINES_PIPELINES_H
#define FLASH_PIPELINES_PIPELINES_H

#include "flash/Target/TargetOptions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::flash {

struct FlashCpuPipelineOptions
    : public PassPipelineOptions<FlashCpuPipelineOptions> {
  PassOptions::Option<bool> tile{
      *this, "tile",
      llvm::cl::desc("Run flash.attention through --flash-tile-attention "
                     "(otherwise through the naive decomposition)"),
      llvm::cl::init(true)};
  PassOptions::Option<TileTarget> target{
      *this, "target", llvm::cl::desc("Tile-size target"),
      llvm::cl::init(TileTarget::Cpu), FLASH_TILE_TARGET_VALUES};
  PassOptions::Option<int64_t> blockRows{
      *this, "block-rows", llvm::cl::desc("Force Br (0: from the target)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> blockCols{
      *this, "block-cols", llvm::cl::desc("Force Bc (0: from the target)"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> deterministic{
      *this, "deterministic",
      llvm::cl::desc("GPU targets' backward: two nests (true) or dQ added "
                     "with atomics (false; see --flash-tile-attention)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> causalRowsFromEnd{
      *this, "causal-rows-from-end",
      llvm::cl::desc("Causal forward: query blocks aligned to the last row "
                     "(see --flash-tile-attention)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> overlapProducts{
      *this, "overlap-products",
      llvm::cl::desc("GPU targets' atomic backward: dPᵀ built right after "
                     "Sᵀ (see --flash-tile-attention)"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> dqFragmentMajor{
      *this, "dq-fragment-major",
      llvm::cl::desc("GPU targets' atomic backward: the dQ accumulator in "
                     "mma.sync fragment order, 1 (scalar reductions), 2 "
                     "(pairs) or 4 (two pairs); 0: rows (see "
                     "--flash-tile-attention)"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> maskFreeBlocks{
      *this, "mask-free-blocks",
      llvm::cl::desc("GPU targets' backward: the blocks that need no mask in "
                     "loops of their own (see --flash-tile-attention)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> maskUnderBranch{
      *this, "mask-under-branch",
      llvm::cl::desc("GPU targets' backward with mask-free-blocks: one loop "
                     "per nest, the mask under a branch on the block index "
                     "(see --flash-tile-attention)"),
      llvm::cl::init(false)};
};

/// Lowers a module holding func, linalg (linalg.softmax included), tensor,
/// arith, math, memref, bufferization and flash ops to the LLVM dialect, ready
/// for mlir-runner with the MLIR runner-utils libraries. flash.attention is
/// tiled (online softmax) unless `tile=false`; flash.attention_backward and
/// untiled ops go through the naive decomposition.
void buildFlashCpuPipeline(OpPassManager &pm,
                           const FlashCpuPipelineOptions &options);

struct FlashMapTilesToGpuOptions
    : public PassPipelineOptions<FlashMapTilesToGpuOptions> {
  PassOptions::Option<int64_t> threads{
      *this, "threads",
      llvm::cl::desc("Threads per block (--flash-gpu-map-to-blocks)"),
      llvm::cl::init(128)};
  PassOptions::Option<Chip> chip{
      *this, "chip",
      llvm::cl::desc("Target GPU: tensor-cores=auto takes wgmma on sm_90a; "
                     "its shared memory per CTA bounds the tiles"),
      llvm::cl::init(Chip::Any),
      llvm::cl::values(clEnumValN(Chip::Any, "any", "not known"),
                       FLASH_GPU_CHIP_VALUES)};
  PassOptions::Option<TensorCores> tensorCores{
      *this, "tensor-cores",
      llvm::cl::desc("Tile contractions on tensor cores "
                     "(--flash-gpu-lower-tile-mma)"),
      llvm::cl::init(TensorCores::Auto), FLASH_TENSOR_CORES_VALUES};
  PassOptions::Option<bool> registerTiles{
      *this, "register-tiles",
      llvm::cl::desc("Tiles indexed by query rows in warp registers "
                     "(--flash-gpu-assign-tile-storage)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> asyncCopies{
      *this, "async-copies",
      llvm::cl::desc("Tile loads by cp.async or TMA "
                     "(--flash-gpu-async-tile-loads): every tensor's rows "
                     "must then be contiguous and 16-byte aligned"),
      llvm::cl::init(true)};
  PassOptions::Option<int64_t> loadStages{
      *this, "load-stages",
      llvm::cl::desc("Copies of each tile loaded in a key-block loop (1 or "
                     "2; --flash-gpu-async-tile-loads)"),
      llvm::cl::init(1)};
  PassOptions::Option<bool> tmaLoads{
      *this, "tma-loads",
      llvm::cl::desc("With load-stages=2 on wgmma kernels: K and V by TMA "
                     "(--flash-gpu-async-tile-loads)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> warpSpecialize{
      *this, "warp-specialize",
      llvm::cl::desc("With tma-loads: a producer warpgroup issues the TMA "
                     "copies (--flash-gpu-async-tile-loads; "
                     "--flash-gpu-split-warp-roles must follow)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> persistent{
      *this, "persistent",
      llvm::cl::desc("Each launch a loop over its tiles, correct with any "
                     "number of CTAs (--flash-gpu-map-to-blocks)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> lazyRescale{
      *this, "lazy-rescale",
      llvm::cl::desc("mma.sync launches rescale the accumulator only when a "
                     "row maximum moved (--flash-gpu-warp-register-tiles)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> raggedKeys{
      *this, "ragged-keys",
      llvm::cl::desc("Warpgroup MMAs narrowed to a ragged key block's valid "
                     "rows (--flash-gpu-warp-register-tiles)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> wideStores{
      *this, "wide-stores",
      llvm::cl::desc(
          "With async-copies: register tiles stored 16 bytes per "
          "store where they allow (--flash-gpu-warp-register-tiles)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> tmaRowVectors{
      *this, "tma-row-vectors",
      llvm::cl::desc("With tma-loads: the atomic backward's LSE and D rows by "
                     "TMA (--flash-gpu-async-tile-loads)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> raggedTma{
      *this, "ragged-tma",
      llvm::cl::desc("With tma-loads: ragged key-loop tiles (KV-cache "
                     "lengths, packed sequences) by TMA, their tails zeroed "
                     "where a product needs it (--flash-gpu-async-tile-loads)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> stagedReductions{
      *this, "staged-reductions",
      llvm::cl::desc("wgmma launches stage the atomic backward's dQ sums in "
                     "shared memory and add them by TMA tensor reductions "
                     "(--flash-gpu-assign-tile-storage)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> perIterationLanes{
      *this, "per-iteration-lanes",
      llvm::cl::desc("mma.sync contractions in loops build their ldmatrix "
                     "addresses from per-iteration lane coordinates "
                     "(--flash-gpu-warp-register-tiles, "
                     "--flash-gpu-lower-tile-mma)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> swizzleLdmatrix{
      *this, "swizzle-ldmatrix",
      llvm::cl::desc("mma.sync launches: the operand tiles ldmatrix reads "
                     "in the 128-byte swizzled layout instead of padded "
                     "rows (--flash-gpu-assign-tile-storage)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> exitEmptyTiles{
      *this, "exit-empty-tiles",
      llvm::cl::desc("A CTA whose tile has no rows (flash.skip_tile) ends "
                     "there (--flash-gpu-map-to-blocks)"),
      llvm::cl::init(true)};
};

/// The GPU mapping of a bufferized tiled nest, one step per pass:
/// --flash-gpu-map-to-blocks, --flash-gpu-assign-tile-storage,
/// --flash-gpu-carve-shared-memory, --flash-gpu-warp-register-tiles,
/// --flash-gpu-async-tile-loads (with async-copies),
/// --flash-gpu-lower-tile-mma and --flash-gpu-distribute-to-threads. The
/// passes take any op, so `pm` may be nested on functions or not.
void buildFlashMapTilesToGpuPipeline(OpPassManager &pm,
                                     const FlashMapTilesToGpuOptions &options);

struct FlashGpuPipelineOptions
    : public PassPipelineOptions<FlashGpuPipelineOptions> {
  PassOptions::Option<Chip> chip{
      *this, "chip", llvm::cl::desc("GPU architecture"),
      llvm::cl::init(Chip::Sm90a), llvm::cl::values(FLASH_GPU_CHIP_VALUES)};
  PassOptions::Option<BinaryFormat> format{
      *this, "format", llvm::cl::desc("What gpu-module-to-binary produces"),
      llvm::cl::init(BinaryFormat::Isa),
      llvm::cl::values(clEnumValN(BinaryFormat::Isa, "isa", "PTX"),
                       clEnumValN(BinaryFormat::Bin, "bin",
                                  "cubin, through ptxas"))};
  PassOptions::Option<int64_t> blockRows{
      *this, "block-rows", llvm::cl::desc("Query rows per CTA (Br)"),
      llvm::cl::init(32)};
  PassOptions::Option<int64_t> blockCols{*this, "block-cols",
                                         llvm::cl::desc("Keys per step (Bc)"),
                                         llvm::cl::init(32)};
  PassOptions::Option<int64_t> kvBlockRows{
      *this, "kv-block-rows",
      llvm::cl::desc("Backward on tensor cores: keys per dK/dV CTA (0: "
                     "block-cols; see --flash-tile-attention)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> kvBlockCols{
      *this, "kv-block-cols",
      llvm::cl::desc("Backward on tensor cores: query rows per dK/dV step "
                     "(0: block-rows; see --flash-tile-attention)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> threads{
      *this, "threads", llvm::cl::desc("Threads per CTA"), llvm::cl::init(128)};
  PassOptions::Option<TensorCores> tensorCores{
      *this, "tensor-cores",
      llvm::cl::desc("Tile contractions on tensor cores"),
      llvm::cl::init(TensorCores::Auto), FLASH_TENSOR_CORES_VALUES};
  PassOptions::Option<bool> registerTiles{
      *this, "register-tiles",
      llvm::cl::desc("Scores, probabilities and the accumulator in warp "
                     "registers (FlashAttention-2) where the tiles allow"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> asyncCopies{
      *this, "async-copies",
      llvm::cl::desc("Load tiles with 16-byte cp.async: every tensor's rows "
                     "must then be contiguous and 16-byte aligned (the "
                     "kernel traps otherwise)"),
      llvm::cl::init(true)};
  PassOptions::Option<int64_t> loadStages{
      *this, "load-stages",
      llvm::cl::desc("Copies of each tile loaded in a key-block loop (1 or "
                     "2; see --flash-gpu-async-tile-loads)"),
      llvm::cl::init(1)};
  PassOptions::Option<bool> causalRowsFromEnd{
      *this, "causal-rows-from-end",
      llvm::cl::desc("Causal forward: query blocks aligned to the last row "
                     "(--flash-tile-attention's causal-rows-from-end)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> pipelineKeyLoops{
      *this, "pipeline-key-loops",
      llvm::cl::desc("FlashAttention-3's softmax/MMA overlap: the forward's "
                     "key-block loops in two stages "
                     "(--flash-pipeline-key-loops) and the warpgroup MMAs "
                     "waited for late (--flash-gpu-async-mma)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> asyncMma{
      *this, "async-mma",
      llvm::cl::desc("Warpgroup MMAs waited for at their first use "
                     "(--flash-gpu-async-mma) without pipelining the loops: "
                     "the atomic backward's independent products overlap"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> overlapProducts{
      *this, "overlap-products",
      llvm::cl::desc("The atomic backward's dK/dV step with dPᵀ built right "
                     "after Sᵀ (--flash-tile-attention's overlap-products) "
                     "and each warpgroup MMA waited for at its first use "
                     "(implies async-mma)"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> dqFragmentMajor{
      *this, "dq-fragment-major",
      llvm::cl::desc("The atomic backward's dQ accumulator in mma.sync "
                     "fragment order, 1 (scalar reductions, sm_80), 2 "
                     "(pairs) or 4 (two pairs: sm_90a's vector reductions); "
                     "0: rows (see --flash-tile-attention)"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> maskFreeBlocks{
      *this, "mask-free-blocks",
      llvm::cl::desc("The backward's blocks that need no mask in loops of "
                     "their own, without the per-element select (see "
                     "--flash-tile-attention)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> maskUnderBranch{
      *this, "mask-under-branch",
      llvm::cl::desc("With mask-free-blocks: one loop per nest, the blocks "
                     "that need a mask applying it under a branch on the "
                     "block index (see --flash-tile-attention)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> tmaLoads{
      *this, "tma-loads",
      llvm::cl::desc("With load-stages=2 on wgmma kernels: K and V by TMA "
                     "through tensor maps passed in a last argument (see "
                     "--flash-map-tiles-to-gpu)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> warpSpecialize{
      *this, "warp-specialize",
      llvm::cl::desc("With tma-loads: a producer warpgroup issues the TMA "
                     "copies (see --flash-gpu-async-tile-loads)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> pingPong{
      *this, "ping-pong",
      llvm::cl::desc("With warp-specialize and two consumer warpgroups: "
                     "their S = Q Kᵀ MMAs take turns"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> deterministic{
      *this, "deterministic",
      llvm::cl::desc("The backward as a dQ kernel and a dK/dV kernel (true), "
                     "or FlashAttention-2's: one dK/dV kernel that adds dQ "
                     "with f32 atomics, between a pre-pass and a last pass "
                     "(false)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> persistent{
      *this, "persistent",
      llvm::cl::desc("Each launch a loop over its tiles, correct with any "
                     "number of CTAs (see --flash-gpu-map-to-blocks)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> lazyRescale{
      *this, "lazy-rescale",
      llvm::cl::desc("mma.sync launches rescale the accumulator only when a "
                     "row maximum moved (see --flash-gpu-warp-register-tiles)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> raggedKeys{
      *this, "ragged-keys",
      llvm::cl::desc("Warpgroup MMAs narrowed to a ragged key block's valid "
                     "rows (see --flash-gpu-warp-register-tiles)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> wideStores{
      *this, "wide-stores",
      llvm::cl::desc("Register tiles stored 16 bytes per store where they "
                     "allow (see --flash-gpu-warp-register-tiles)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> tmaRowVectors{
      *this, "tma-row-vectors",
      llvm::cl::desc("With tma-loads: the atomic backward's LSE and D rows by "
                     "TMA (see --flash-gpu-async-tile-loads)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> raggedTma{
      *this, "ragged-tma",
      llvm::cl::desc(
          "With tma-loads: ragged key-loop tiles (KV-cache "
          "lengths, packed sequences) by TMA, their tails zeroed "
          "where a product needs it (see --flash-gpu-async-tile-loads)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> stagedReductions{
      *this, "staged-reductions",
      llvm::cl::desc("sm_90a atomic backward: dQ sums staged in shared "
                     "memory and added by TMA tensor reductions (see "
                     "--flash-gpu-assign-tile-storage)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> perIterationLanes{
      *this, "per-iteration-lanes",
      llvm::cl::desc("mma.sync contractions in loops build their ldmatrix "
                     "addresses from per-iteration lane coordinates (see "
                     "--flash-gpu-warp-register-tiles)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> swizzleLdmatrix{
      *this, "swizzle-ldmatrix",
      llvm::cl::desc("mma.sync kernels: the operand tiles ldmatrix reads in "
                     "the 128-byte swizzled layout instead of padded rows "
                     "(see --flash-gpu-assign-tile-storage)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> exitEmptyTiles{
      *this, "exit-empty-tiles",
      llvm::cl::desc("A CTA whose tile has no rows (a packed sequence's "
                     "block past its end) ends there (see "
                     "--flash-gpu-map-to-blocks)"),
      llvm::cl::init(true)};
  PassOptions::Option<int64_t> emulatedExp2Every{
      *this, "emulated-exp2-every",
      llvm::cl::desc("Every n-th exp2 of the softmax on the FMA pipes "
                     "instead of MUFU (see --flash-gpu-fast-exp2; 0: none)"),
      llvm::cl::init(0)};
};

/// Tiles flash.attention, bufferizes (outputs written in place into
/// writable arguments through bufferization.materialize_in_destination),
/// maps the loop nest onto CTAs and threads, outlines the kernels and lowers
/// them through NVVM to PTX or cubin (gpu.binary): the two halves below.
void buildFlashGpuPipeline(OpPassManager &pm,
                           const FlashGpuPipelineOptions &options);

/// Up to outlined gpu.func kernels launched by gpu.launch_func.
void buildFlashGpuKernelPipeline(OpPassManager &pm,
                                 const FlashGpuPipelineOptions &options);

/// gpu.module kernels through NVVM to gpu.binary.
void buildFlashGpuBinaryPipeline(OpPassManager &pm,
                                 const FlashGpuPipelineOptions &options);

struct FlashTosaToAttentionOptions
    : public PassPipelineOptions<FlashTosaToAttentionOptions> {
  PassOptions::Option<bool> report{
      *this, "report",
      llvm::cl::desc("Emit a remark for every candidate: what was fused, or "
                     "why not"),
      llvm::cl::init(false)};
};

/// TOSA to linalg and arith with upstream's passes: the form the fusion
/// matches.
void buildTosaToLinalgPipeline(OpPassManager &pm);

/// TOSA in, flash.attention out: lowers TOSA to linalg (upstream's
/// tosa-to-linalg passes and tosa-to-arith), then runs
/// --flash-fuse-attention.
void buildFlashTosaToAttentionPipeline(
    OpPassManager &pm, const FlashTosaToAttentionOptions &options);

/// Registers every flash pipeline with the global pass registry.
void registerFlashPipelines();

} // namespace mlir::flash

#endif // FLASH_PIPELINES_PIPELINES_H
