//===- KernelABI.h - kernel functions and their parameters ------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// The kernel ABI: for one flash op, a standalone function whose tensors have
// dynamic batch, heads and sequence lengths and whose outputs are written in
// place into arguments, and the manifest's description of its parameters and
// grid.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_DRIVER_KERNELABI_H
#define FLASH_LIB_DRIVER_KERNELABI_H

#include "flash/Dialect/Flash/IR/FlashOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace mlir::flash::driver {

/// A kernel parameter: its name in the manifest and its tensor type.
struct Param {
  std::string name;
  RankedTensorType type;
  /// A scalar parameter instead (then `type` is null), with the unit
  /// argument attribute `tag` that the passes read.
  Type scalar = {};
  std::string tag = {};
};

/// How MLIR prints `t` (f16, bf16, f32, ...).
std::string typeName(Type t);

/// func @name(q, k, v, [bias], [mask], [sinks], [mod0, ...], o, [lse])
/// writing o and lse in place.
OwningOpRef<ModuleOp> buildKernelModule(AttentionOp op, StringRef name,
                                        SmallVectorImpl<Param> &params);

/// Appends the split-KV partial results to the kernel function of `module`
/// (from buildKernelModule): o_split [S, B, Hq, M, Dv] and lse_split
/// [S, B, Hq, M], f32, tagged as the workspaces the runtime allocates, so
/// that --flash-tile-attention splits the keys into S runs, S the size the
/// runtime chose. With `counters`, also split_counters (i32 [B, Hq, M],
/// zero between calls), so that the GPU mapping merges the runs in the CTA
/// of the last to finish.
void addKeySplitParams(ModuleOp module, int64_t valueDim, bool counters,
                       SmallVectorImpl<Param> &params);

/// func @name(q, k, v, o, do, lse, [bias], [mask], [cu_seqlens_q,
/// cu_seqlens_k, max_seqlen_q, max_seqlen_k], dq, dk, dv) writing the
/// gradients in place (--flash-workspace-to-arguments appends `d`).
OwningOpRef<ModuleOp> buildBackwardKernelModule(AttentionBackwardOp op,
                                                StringRef name,
                                                SmallVectorImpl<Param> &params);

/// The tensors that `op`'s score_mod region reads from above, which become
/// kernel parameters `mod0`, `mod1`, ... (constant scalars are cloned into
/// the kernel). Fails, with `why`, on any other value from above.
FailureOr<SmallVector<Value>> scoreModTensors(Operation *op, Region &scoreMod,
                                              std::string &why);

/// The score_mod region as the manifest prints it (one line), or null.
llvm::json::Value describeScoreMod(Region &scoreMod);

/// A kernel parameter in a manifest.
llvm::json::Object describeParam(const Param &p);

/// A grid dimension of a launch as the runtime computes it: a constant, or
/// a size of a kernel argument divided by a constant, rounding up, or the
/// product of two of those.
std::optional<llvm::json::Object> describeGridDim(Value v,
                                                  ArrayRef<Param> params);

} // namespace mlir::flash::driver

#endif // FLASH_LIB_DRIVER_KERNELABI_H
