//===- Driver.h - attention in a module -> GPU kernels ----------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// The work of flash-compile as a library: fuse the attention in a module,
// then, per flash.attention and flash.attention_backward, build a kernel
// function with dynamic batch, heads and sequence lengths (the kernel ABI),
// choose its tiles by trying candidates against the chip's shared memory
// and ptxas's register and spill report, and write DIR/<kernel>.ptx,
// DIR/<kernel>.cubin (when ptxas runs) and DIR/<kernel>.json (the manifest a
// runtime needs to launch it). Errors are diagnostics on the ops' context.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_DRIVER_DRIVER_H
#define FLASH_DRIVER_DRIVER_H

#include "flash/Dialect/Flash/IR/FlashOps.h"
#include "flash/Target/TargetOptions.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::flash {

struct KernelCompileOptions {
  /// GPU architecture of the kernels (not Chip::Any).
  Chip chip = Chip::Sm90a;
  /// Forced tiles and threads; 0 lets the driver choose.
  int64_t blockRows = 0, blockCols = 0, threadsPerBlock = 0;
  /// Backward: key rows per dK/dV CTA and query rows per dK/dV step.
  int64_t kvBlockRows = 0, kvBlockCols = 0;
  TensorCores tensorCores = TensorCores::Auto;
  /// Shared-memory copies of each tile loaded in a key-block loop (1 or 2;
  /// 0 lets the driver choose). See --flash-map-tiles-to-gpu's load-stages.
  int64_t loadStages = 0;
  /// FlashAttention-3's softmax/MMA overlap in forward kernels (sm_90a):
  /// --flash-gpu-pipeline's pipeline-key-loops.
  bool pipelineKeyLoops = false;
  /// sm_90a forward kernels with two stages: K and V by TMA (tensor maps
  /// built by the runtime from the manifest's `tensor_maps` parameter);
  /// other kernels ignore it.
  bool tmaLoads = true;
  /// With tmaLoads, forward kernels of ragged KV caches and packed
  /// sequences load their key-loop tiles by TMA too (forward and
  /// backward), the rows past the valid ones zeroed by the consumers where
  /// a product needs it (--flash-gpu-async-tile-loads' ragged-tma), so that
  /// they take the warp-specialised forms (docs/GPU-NOTES.md 81: decode
  /// 2.2x, varlen forward 1.2-1.3x; 82: the varlen backward).
  bool raggedTma = true;
  /// With tmaLoads, forward kernels with a producer warpgroup that issues
  /// the TMA copies (FlashAttention-3's warp specialisation): the driver
  /// tries such tiles first; forced tiles are built in that form. Backward
  /// kernels with two stages try it first too.
  bool warpSpecialize = true;
  /// With warpSpecialize and two consumer warpgroups: FlashAttention-3's
  /// ping-pong of their S = Q Kᵀ MMAs.
  bool pingPong = true;
  /// Warp-specialised forward kernels as persistent CTAs (a loop over the
  /// tiles; the manifest says `persistent` and the runtime launches about
  /// one CTA per SM).
  bool persistent = false;
  /// Without `persistent`: each warp-specialised forward kernel also gets a
  /// persistent form (<name>_persistent), which the runtime launches instead
  /// when there are at most this many keys: each tile is then short, and a
  /// CTA's next tile starts loading under its current one's end (faster on
  /// short sequences, docs/GPU-NOTES.md 64). Under a causal mask four times
  /// as many (twice where the form has fewer query rows than the kernel),
  /// without one twice as many with the kernel's tiles, else a quarter
  /// (docs/GPU-NOTES.md 67-68). A causal kernel of 192-row tiles (D <= 64)
  /// is persistent itself and its form takes this many keys
  /// (docs/GPU-NOTES.md 69). 0: no forms and no such kernels.
  int64_t persistentBelowKeys = 2048;
  /// Forward kernels: every n-th exponential of the softmax computed by a
  /// polynomial on the FMA pipes instead of MUFU (--flash-gpu-fast-exp2's
  /// emulate-every; 0: none).
  int64_t emulatedExp2Every = 0;
  /// Backward kernels as a dQ kernel and a dK/dV kernel, each recomputing S
  /// and P (true: the same bits every run), or FlashAttention-2's form: a
  /// pre-pass, one dK/dV kernel that adds dQ into an f32 workspace with
  /// atomics, and a last pass (false: 5 tile products per tile pair, not 7).
  bool deterministic = true;
  /// With deterministic = false on sm_90a: the dQ sums staged in shared
  /// memory (two copies in turn) and added by TMA tensor reductions
  /// (FlashAttention-3's form), instead of vector reductions from the
  /// accumulators.
  bool stagedReductions = false;
  /// Backward kernels: a launch that spills with the lanes' fragment and
  /// copy addresses hoisted out of its loops is rebuilt with them
  /// recomputed in each iteration (flashgpu.per_iteration) and taken where
  /// that spills less: the sm_80 atomic dK/dV step with two copies of Q and
  /// dO fits so (docs/GPU-NOTES.md 90). Where the hoisted form fits it is
  /// kept (as fast or faster there: the sm_80 deterministic D = 64 dK/dV
  /// launch was 1.15x slower with the lanes). A causal forward reading
  /// swizzled tiles whose hoisted form takes all 255 registers is rebuilt so
  /// and taken where that fits (docs/GPU-NOTES.md 95).
  bool perIterationLanes = true;
  /// With deterministic = false on sm_90a: the dK/dV step's dPᵀ issued
  /// beside Sᵀ and its warpgroup MMAs waited for at first use
  /// (FlashAttention-3's overlap), tried first and kept where it assembles
  /// without spills.
  bool overlapProducts = true;
  /// With deterministic = false: the dQ accumulator in mma.sync fragment
  /// order (1: for scalar reductions, 2: for pairs, 4: for two pairs) or
  /// rows (0); -1 takes
  /// the chip's choice (dqFragmentMajorChoice).
  int64_t dqFragmentMajor = -1;
  /// Backward: the blocks that need no mask in loops of their own, without
  /// the per-element select of P (--flash-tile-attention's
  /// mask-free-blocks). The atomic search takes the mask under a branch or
  /// one masked loop per nest instead where a step spills with them (the
  /// second loop's registers; see maskUnderBranch).
  bool maskFreeBlocks = true;
  /// With maskFreeBlocks: one loop per nest, the mask under a branch on the
  /// block index (--flash-tile-attention's mask-under-branch), else one
  /// masked loop where that spills. Without it the atomic search tries
  /// loops of their own, the branch and one masked loop in an order measured
  /// per chip and head dimension (docs/GPU-NOTES.md 98).
  bool maskUnderBranch = false;
  /// sm_90a backward kernels: shared-memory addresses in 32 bits in the
  /// PTX, as nvcc emits them (LLVM's NVPTX `nvptx-short-ptr` for their
  /// serialization), instead of 64: fewer registers, which lets the atomic
  /// dK/dV step overlap its products at every head dimension and the
  /// deterministic one at D = 128 take its producer warpgroup
  /// (docs/GPU-NOTES.md 99; measured 1.03-1.07x on those dK/dV launches,
  /// note 101).
  bool sharedPointers32 = true;
  /// mma.sync kernels: the tiles ldmatrix reads stored in the 128-byte
  /// swizzled layout (--flash-gpu-assign-tile-storage's swizzle-ldmatrix)
  /// instead of rows padded by 16 bytes, whose cp.async writes cost 2.6x
  /// the shared-memory wavefronts (docs/GPU-NOTES.md 92).
  bool swizzleLdmatrix = true;
  /// A CTA whose tile has no rows (a packed sequence's query or key block
  /// past its sequence's end: the grid counts the blocks of the longest)
  /// ends at once (--flash-gpu-map-to-blocks's exit-empty-tiles;
  /// docs/GPU-NOTES.md 100).
  bool exitEmptyTiles = true;
  /// Forward: split-KV (FlashDecoding) kernels, for few query rows against
  /// many keys: the keys of each query block cut into S runs computed by
  /// CTAs of their own (S chosen by the runtime, which allocates the
  /// partial results), then a second launch merging them by their LSE.
  bool keySplits = false;
  /// With keySplits on sm_90a: one launch, each query block's runs merged
  /// by the CTA of its last run to finish (arrival counters the runtime
  /// keeps, the manifest's split_counters workspace) instead of a second
  /// launch.
  bool mergeInLastCta = true;
  /// With TMA loads, the atomic backward's LSE and D rows by TMA too (the
  /// driver builds them without where that spills).
  bool tmaRowVectors = true;
  /// ptxas used to make cubins and to measure registers and spills; when it
  /// cannot be run, PTX and manifests are written without them.
  std::string ptxas = "/usr/local/cuda/bin/ptxas";
  /// One line per kernel written (tiles, registers, spills); null for none.
  llvm::raw_ostream *log = &llvm::outs();
};

/// Why `options` cannot be used (a negative size, wgmma on a chip without
/// it), or an empty string.
std::string checkKernelCompileOptions(const KernelCompileOptions &options);

/// The unit attribute of a function whose forward ops flash-compile builds
/// as split-KV kernels (as --key-splits does for every function).
constexpr llvm::StringLiteral kKeySplitsAttr = "flash.key_splits";

/// Fuses the attention in `module` (TOSA lowered to linalg first when there
/// is TOSA, then --flash-fuse-attention-backward and --flash-fuse-attention)
/// and compiles every flash op into `outputDir`
/// (created if needed). Kernels are named after their function, numbered
/// when it has several. Fails with a diagnostic when there is no attention.
LogicalResult compileAttentionKernels(ModuleOp module, StringRef outputDir,
                                      const KernelCompileOptions &options);

/// The kernel of one forward op, DIR/<name>.{ptx,cubin,json}; when it needs
/// 16-byte aligned rows (cp.async), also <name>_general for other strides.
LogicalResult compileAttentionKernel(AttentionOp op, StringRef name,
                                     StringRef outputDir,
                                     const KernelCompileOptions &options);

/// The two launches of one backward op (dQ, then dK/dV) in
/// DIR/<name>.{0,1}.{ptx,cubin} and DIR/<name>.json, and the general pair
/// <name>_general.
LogicalResult
compileAttentionBackwardKernels(AttentionBackwardOp op, StringRef name,
                                StringRef outputDir,
                                const KernelCompileOptions &options);

} // namespace mlir::flash

#endif // FLASH_DRIVER_DRIVER_H
