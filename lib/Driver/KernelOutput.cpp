//===- KernelOutput.cpp - PTX, cubin and manifest files ---------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "KernelOutput.h"
#include "KernelLaunch.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::driver;
using llvm::formatv;
using llvm::raw_string_ostream;
using llvm::SmallString;
namespace json = llvm::json;
namespace sys = llvm::sys;

PtxasReport driver::assemble(StringRef ptxas, StringRef arch, StringRef ptxPath,
                             StringRef cubinPath) {
  PtxasReport report;
  if (!sys::fs::can_execute(ptxas))
    return report;
  // A cubin of an earlier run must not pass for this one's.
  sys::fs::remove(cubinPath);
  SmallString<128> logPath;
  sys::fs::createTemporaryFile("ptxas", "log", logPath);
  std::string archFlag = ("-arch=" + arch).str();
  SmallVector<StringRef> args = {ptxas, archFlag,  "-v",
                                 "-o",  cubinPath, ptxPath};
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(logPath),
                                          StringRef(logPath)};
  int rc = sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects);
  if (auto buf = llvm::MemoryBuffer::getFile(logPath))
    report.log = (*buf)->getBuffer().str();
  sys::fs::remove(logPath);
  uint64_t cubinBytes = 0;
  report.ran = rc == 0;
  report.wroteCubin =
      report.ran && !sys::fs::file_size(cubinPath, cubinBytes) && cubinBytes;
  SmallVector<StringRef> m;
  if (llvm::Regex("Used ([0-9]+) registers").match(report.log, &m))
    m[1].getAsInteger(10, report.registers);
  int64_t stores = 0, loads = 0;
  SmallVector<StringRef> s;
  if (llvm::Regex("([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads")
          .match(report.log, &s)) {
    s[1].getAsInteger(10, stores);
    s[2].getAsInteger(10, loads);
    report.spillBytes = stores + loads;
  }
  return report;
}

LogicalResult driver::writeFile(StringRef path, StringRef data) {
  std::string error;
  auto file = openOutputFile(path, &error);
  if (!file) {
    llvm::errs() << "flash-compile: " << error << "\n";
    return failure();
  }
  file->os() << data;
  file->keep();
  return success();
}

LogicalResult driver::removeKernel(StringRef outputDir, StringRef name) {
  for (StringRef extension : {".ptx", ".cubin", ".json"}) {
    std::string path = kernelPath(outputDir, name, extension);
    if (std::error_code error = sys::fs::remove(path)) {
      llvm::errs() << "flash-compile: cannot remove " << path << ": "
                   << error.message() << "\n";
      return failure();
    }
  }
  return success();
}

LogicalResult driver::writeManifest(StringRef path, json::Object manifest,
                                    StringRef general,
                                    bool requiresAlignedRows) {
  manifest["requires_aligned_rows"] = requiresAlignedRows;
  manifest["general"] = general.empty() || !requiresAlignedRows
                            ? json::Value(nullptr)
                            : json::Value((general + ".json").str());
  std::string text;
  raw_string_ostream os(text);
  os << formatv("{0:2}", json::Value(std::move(manifest))) << "\n";
  return writeFile(path, text);
}
