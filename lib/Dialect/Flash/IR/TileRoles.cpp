//===- TileRoles.cpp - what the tiler's contractions compute ----*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/Flash/IR/TileRoles.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::flash;

StringRef flash::stringifyContraction(Contraction c) {
  switch (c) {
  case Contraction::Scores:
    return "scores";
  case Contraction::Output:
    return "output";
  case Contraction::GradProbs:
    return "grad_probs";
  case Contraction::GradQuery:
    return "grad_query";
  case Contraction::ScoresTransposed:
    return "scores_transposed";
  case Contraction::GradValue:
    return "grad_value";
  case Contraction::GradProbsTransposed:
    return "grad_probs_transposed";
  case Contraction::GradKey:
    return "grad_key";
  case Contraction::GradQueryBlock:
    return "grad_query_block";
  }
  llvm_unreachable("unknown contraction");
}

std::optional<Contraction> flash::symbolizeContraction(StringRef name) {
  return llvm::StringSwitch<std::optional<Contraction>>(name)
      .Case("scores", Contraction::Scores)
      .Case("output", Contraction::Output)
      .Case("grad_probs", Contraction::GradProbs)
      .Case("grad_query", Contraction::GradQuery)
      .Case("scores_transposed", Contraction::ScoresTransposed)
      .Case("grad_value", Contraction::GradValue)
      .Case("grad_probs_transposed", Contraction::GradProbsTransposed)
      .Case("grad_key", Contraction::GradKey)
      .Case("grad_query_block", Contraction::GradQueryBlock)
      .Default(std::nullopt);
}

std::optional<Contraction> flash::getContraction(Operation *op) {
  auto name = op->getAttrOfType<StringAttr>(kContractionAttrName);
  return name ? symbolizeContraction(name.getValue()) : std::nullopt;
}

void flash::setContraction(Operation *op, Contraction c) {
  op->setAttr(kContractionAttrName,
              StringAttr::get(op->getContext(), stringifyContraction(c)));
}

bool flash::isAccumulating(Contraction c) {
  return c == Contraction::Output || c == Contraction::GradQuery ||
         c == Contraction::GradValue || c == Contraction::GradKey;
}
