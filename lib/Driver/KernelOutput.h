//===- KernelOutput.h - PTX, cubin and manifest files -----------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// What a compiled kernel is written as: its PTX, a cubin through ptxas (with
// the registers and spill bytes ptxas reports, which the tile search reads)
// and the JSON manifest.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_DRIVER_KERNELOUTPUT_H
#define FLASH_LIB_DRIVER_KERNELOUTPUT_H

#include "KernelABI.h"

#include "mlir/Support/LLVM.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <type_traits>

namespace mlir::flash::driver {

struct PtxasReport {
  /// ptxas ran and exited 0.
  bool ran = false;
  /// ... and wrote a non-empty cubin.
  bool wroteCubin = false;
  int64_t registers = -1, spillBytes = -1;
  std::string log;
};

/// Assembles `ptxPath` into `cubinPath` for `arch` with `ptxas -v`; `ran` is
/// false when ptxas cannot be run or fails (its log says why). Any earlier
/// file at `cubinPath` is removed first.
PtxasReport assemble(StringRef ptxas, StringRef arch, StringRef ptxPath,
                     StringRef cubinPath);

/// Writes `data` to `path`, reporting a failure on stderr.
LogicalResult writeFile(StringRef path, StringRef data);

/// Removes DIR/<name>.{ptx,cubin,json} (those that exist).
LogicalResult removeKernel(StringRef outputDir, StringRef name);

/// Writes `manifest` to `path` with the alignment requirement and, for a
/// kernel that has it, the general kernel to use for other rows.
LogicalResult writeManifest(StringRef path, llvm::json::Object manifest,
                            StringRef general, bool requiresAlignedRows);

/// The manifest fields that describe the attention itself (forward or
/// backward): element type, head dims, scale and masking.
template <typename AttentionLikeOp>
void describeAttention(llvm::json::Object &manifest, AttentionLikeOp op) {
  namespace json = llvm::json;
  RankedTensorType q = op.getQuery().getType();
  RankedTensorType v = op.getValue().getType();
  manifest["dtype"] = typeName(q.getElementType());
  manifest["head_dim"] = q.getShape().back();
  manifest["value_dim"] = v.getShape().back();
  manifest["scale"] = op.getEffectiveScale();
  manifest["causal"] = op.getCausal();
  manifest["window"] =
      op.getWindow() ? json::Value(*op.getWindow()) : json::Value(nullptr);
  manifest["has_bias"] = static_cast<bool>(op.getBias());
  manifest["has_mask"] = static_cast<bool>(op.getMask());
  if constexpr (std::is_same_v<AttentionLikeOp, AttentionOp>)
    manifest["has_sinks"] = static_cast<bool>(op.getSinks());
  manifest["score_mod"] = describeScoreMod(op.getScoreMod());
}

} // namespace mlir::flash::driver

#endif // FLASH_LIB_DRIVER_KERNELOUTPUT_H
