//===- TosaPipeline.cpp - --flash-tosa-to-attention -------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// TOSA programs spell attention as tosa.matmul, tosa.reduce_max, tosa.exp,
// ...; the fusion matches linalg, so TOSA is lowered first with upstream's
// own TOSA-to-linalg passes, then fused.
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/Flash/Transforms/Passes.h"
#include "flash/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/TosaToLinalg/TosaToLinalg.h"

using namespace mlir;

void flash::buildTosaToLinalgPipeline(OpPassManager &pm) {
  // What --tosa-to-linalg-pipeline runs (named ops first, then generics),
  // without its validation: profiles are the frontend's business.
  tosa::addTosaToLinalgPasses(pm, TosaToLinalgOptions(),
                              TosaToLinalgNamedOptions(),
                              /*validationOptions=*/std::nullopt);
  // tosa.const and the remaining scalar forms to arith.
  pm.addPass(createTosaToArithPass());
}

void flash::buildFlashTosaToAttentionPipeline(
    OpPassManager &pm, const FlashTosaToAttentionOptions &options) {
  buildTosaToLinalgPipeline(pm);
  FlashFuseAttentionPassOptions fusion;
  fusion.report = options.report;
  pm.addPass(createFlashFuseAttentionPass(fusion));
}
