//===- TargetOptions.h - the fixed choices of flash options -----*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// The values that target, chip, tensor-core and binary-format options choose
// among, as enums: pass options (Passes.td), pipeline options (Pipelines.h)
// and flash-compile's command line parse them with cl::values, so a bad
// value is rejected where it is written and no pass compares strings.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_TARGET_TARGETOPTIONS_H
#define FLASH_TARGET_TARGETOPTIONS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/ErrorHandling.h"

namespace mlir::flash {

/// What --flash-tile-attention sizes tiles for.
enum class TileTarget { Cpu, Sm80, Sm90a };

/// A GPU architecture; Any where a pass is not told (it then picks nothing
/// that needs one).
enum class Chip { Any, Sm80, Sm90a };

/// Which instructions the GPU mapping gives the tile contractions.
enum class TensorCores { Auto, MmaSync, Wgmma, Wmma, None };

/// What gpu-module-to-binary makes: PTX text or a cubin (through ptxas).
enum class BinaryFormat { Isa, Bin };

inline llvm::StringRef stringifyTileTarget(TileTarget target) {
  switch (target) {
  case TileTarget::Cpu:
    return "cpu";
  case TileTarget::Sm80:
    return "sm_80";
  case TileTarget::Sm90a:
    return "sm_90a";
  }
  llvm_unreachable("unknown tile target");
}

inline llvm::StringRef stringifyChip(Chip chip) {
  switch (chip) {
  case Chip::Any:
    return "any";
  case Chip::Sm80:
    return "sm_80";
  case Chip::Sm90a:
    return "sm_90a";
  }
  llvm_unreachable("unknown chip");
}

inline llvm::StringRef stringifyTensorCores(TensorCores cores) {
  switch (cores) {
  case TensorCores::Auto:
    return "auto";
  case TensorCores::MmaSync:
    return "mma-sync";
  case TensorCores::Wgmma:
    return "wgmma";
  case TensorCores::Wmma:
    return "wmma";
  case TensorCores::None:
    return "none";
  }
  llvm_unreachable("unknown tensor-core choice");
}

inline llvm::StringRef stringifyBinaryFormat(BinaryFormat format) {
  return format == BinaryFormat::Isa ? "isa" : "bin";
}

/// What tensor-cores=auto means on `chip`: Hopper's warpgroup MMA on sm_90a;
/// elsewhere auto stays auto (the mapping then takes WMMA for f16 and
/// mma.sync for bf16). Other choices are kept.
inline TensorCores resolveTensorCores(TensorCores cores, Chip chip) {
  if (cores == TensorCores::Auto && chip == Chip::Sm90a)
    return TensorCores::Wgmma;
  return cores;
}

/// The tile sizes of a GPU chip's kernels (a chip that is not known tiles
/// as on the CPU).
inline TileTarget tileTargetOf(Chip chip) {
  switch (chip) {
  case Chip::Any:
    return TileTarget::Cpu;
  case Chip::Sm80:
    return TileTarget::Sm80;
  case Chip::Sm90a:
    return TileTarget::Sm90a;
  }
  llvm_unreachable("unknown chip");
}

} // namespace mlir::flash

/// cl::values lists for the enums, shared by pass options, pipeline options
/// and flash-compile.
#define FLASH_TILE_TARGET_VALUES                                               \
  ::llvm::cl::values(                                                          \
      clEnumValN(::mlir::flash::TileTarget::Cpu, "cpu",                        \
                 "one CPU core, 32 KiB of L1 data cache"),                     \
      clEnumValN(::mlir::flash::TileTarget::Sm80, "sm_80",                     \
                 "Ampere: 164 KiB shared memory, tensor-core tiles"),          \
      clEnumValN(::mlir::flash::TileTarget::Sm90a, "sm_90a",                   \
                 "Hopper: 227 KiB shared memory, tensor-core tiles"))
#define FLASH_GPU_CHIP_VALUES                                                  \
  clEnumValN(::mlir::flash::Chip::Sm80, "sm_80",                               \
             "Ampere (mma.sync, cp.async)"),                                   \
      clEnumValN(::mlir::flash::Chip::Sm90a, "sm_90a",                         \
                 "Hopper (warpgroup MMA)")
#define FLASH_TENSOR_CORES_VALUES                                              \
  ::llvm::cl::values(                                                          \
      clEnumValN(::mlir::flash::TensorCores::Auto, "auto",                     \
                 "wgmma on sm_90a; elsewhere wmma for f16 and mma-sync for "   \
                 "bf16"),                                                      \
      clEnumValN(::mlir::flash::TensorCores::MmaSync, "mma-sync",              \
                 "mma.sync.m16n8k16 (f16 and bf16)"),                          \
      clEnumValN(::mlir::flash::TensorCores::Wgmma, "wgmma",                   \
                 "Hopper's warpgroup MMA for the warp register tiles "         \
                 "(sm_90a), mma-sync elsewhere"),                              \
      clEnumValN(::mlir::flash::TensorCores::Wmma, "wmma",                     \
                 "16x16x16 fragments, f16 only"),                              \
      clEnumValN(::mlir::flash::TensorCores::None, "none",                     \
                 "no tensor cores: SIMT loops"))

#endif // FLASH_TARGET_TARGETOPTIONS_H
