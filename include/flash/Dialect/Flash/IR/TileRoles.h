//===- TileRoles.h - what the tiler's contractions compute ------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// The contract between the tiling passes and the GPU mapping: each
// contraction of a tiled loop nest carries `flash.contraction = "<role>"`,
// set where the tiler builds it, kept through bufferization (linalg ops keep
// their attributes), and read by the GPU passes instead of guessing from
// shapes which product is which.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_DIALECT_FLASH_IR_TILEROLES_H
#define FLASH_DIALECT_FLASH_IR_TILEROLES_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace mlir::flash {

enum class Contraction {
  Scores,              // S = Q Kᵀ (forward, dQ nest)
  Output,              // O += P V
  GradProbs,           // dP = dO Vᵀ
  GradQuery,           // dQ += dS K
  ScoresTransposed,    // Sᵀ = K Qᵀ (dK/dV nest)
  GradValue,           // dV += Pᵀ dO
  GradProbsTransposed, // dPᵀ = V dOᵀ
  GradKey,             // dK += dSᵀ Q
  GradQueryBlock,      // one key block's dS K, added to dQ outside the nest
};

inline constexpr llvm::StringLiteral kContractionAttrName = "flash.contraction";

llvm::StringRef stringifyContraction(Contraction c);
std::optional<Contraction> symbolizeContraction(llvm::StringRef name);

/// The role the tiler gave `op`, if any.
std::optional<Contraction> getContraction(Operation *op);
void setContraction(Operation *op, Contraction c);

/// Whether the contraction's C is the nest's accumulator, carried across
/// its inner loop (O, dQ, dK, dV): its rows are the rows the CTA owns.
bool isAccumulating(Contraction c);

/// Set by the tiler on the products of a masked key loop (S = Q Kᵀ and
/// O += P V), whose key tile may hold fewer valid keys than its static size:
/// the block that reaches past the last key. The tile's rows past the valid
/// ones are zero (a padded tile), so the GPU mapping may leave them out of
/// the MMAs; the products of the unmasked loop always see whole blocks.
inline constexpr llvm::StringLiteral kRaggedKeysAttrName = "flash.ragged_keys";
bool hasRaggedKeys(Operation *op);
void setRaggedKeys(Operation *op);

/// Set by the tiler on an scf.for whose iterations each load the tiles they
/// read (the dK/dV nest's loop over a GQA group's query heads, around its
/// masked and unmasked query-block loops): no tile flows from one iteration
/// to the next but through the loop's iter_args. The GPU mapping may then
/// give the tiles of the loops inside the same bytes, although
/// bufferization allocated them all before this loop.
inline constexpr llvm::StringLiteral kFreshTilesAttrName = "flash.fresh_tiles";

/// On the generic-space cast of a shared tile stored in the 128-byte
/// swizzled layout (--flash-gpu-assign-tile-storage), and on the
/// nvgpu.ldmatrix ops that read one: the driver rebuilds a causal forward
/// whose hoisted swizzled addresses take every register with per-iteration
/// lanes (docs/GPU-NOTES.md 95).
inline constexpr llvm::StringLiteral kSwizzledAttrName = "flash.swizzled_128b";

/// Set by the tiler on a nest without contractions whose work is one
/// element per thread (the split-KV merge): the threads of its CTA (an i64, a
/// multiple of 32 up to 1024), which the GPU mapping takes instead of its
/// `threads` option (that of the attention's nest).
inline constexpr llvm::StringLiteral kBlockThreadsAttrName =
    "flash.block_threads";

/// Set by the tiler on a nest whose first iterations along its last
/// dimension are the heaviest (the dK/dV nest: under a causal mask key block
/// 0 sees every query block): the GPU mapping launches that dimension from
/// its first iteration, instead of from its last (the forward's query
/// blocks, whose last sees the most keys).
inline constexpr llvm::StringLiteral kHeaviestFirstAttrName =
    "flash.heaviest_first";

/// Set by the tiler on a nest that reads only what the nest before it wrote
/// (the split-KV merge): its launch may be scheduled before that one's grid
/// has finished, waiting for it at its start.
inline constexpr llvm::StringLiteral kDependentLaunchAttrName =
    "flash.dependent_launch";

/// Set by the tiler on a split-KV nest (iterations (batch, head, query block
/// x S + run) over S runs of keys) whose query block q holds rows
/// [q Br, (q + 1) Br) of its (batch, head): Br (an i64). Packed sequences'
/// nests and causal blocks aligned to the last row go without it.
inline constexpr llvm::StringLiteral kKeySplitRowsAttrName =
    "flash.key_split_rows";

/// Set by the tiler on the split-KV merge nest (iterations (batch, head,
/// row block)): the rows of one iteration (an i64, dividing the split
/// nest's Br).
inline constexpr llvm::StringLiteral kMergeRowsAttrName = "flash.merge_rows";

/// The tag (`flash.workspace`) of the function argument that holds the
/// split-KV pair's arrival counters, i32 [B, Hq, >= query blocks], zero
/// between calls: where a function has one, the GPU mapping merges each
/// query block's runs in the CTA of its last run to finish
/// (--flash-gpu-merge-splits-in-last-cta).
inline constexpr llvm::StringLiteral kSplitCountersWorkspace = "split_counters";

} // namespace mlir::flash

#endif // FLASH_DIALECT_FLASH_IR_TILEROLES_H
