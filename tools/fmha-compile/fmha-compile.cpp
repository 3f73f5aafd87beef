//===- fmha-compile.cpp - Problem signature -> kernel bundle --------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Builds an fmha.attention for one problem signature (dtype, heads, head dims,
// mask, scale, softcap; batch and sequence lengths stay dynamic), or with
// --bwd its fmha.attention_bwd, with --merge an fmha.merge, or with
// --accumulate an fmha.accumulate (acc += x, flat), runs the
// target's pipeline and writes a bundle the runtime loads, or prints the IR
// after the pipeline (--emit=mlir), the LLVM IR (--emit=llvm) or the target
// assembly (--emit=isa).
//
//===----------------------------------------------------------------------===//

#include "CompileOptions.h"
#include "LaunchManifest.h"

#include "fmha/Conversion/Passes.h"
#include "fmha/Dialect/FmhaOps.h"
#include "fmha/InitAllFmha.h"
#include "fmha/Runtime/Bundle.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

#include <cmath>
#include <memory>
#include <string>

using namespace mlir;
namespace cl = llvm::cl;
namespace rt = ::fmha::rt;
using namespace ::fmha::compile;

namespace {

[[noreturn]] void fail(const llvm::Twine &message) {
  llvm::errs() << "fmha-compile: error: " << message << "\n";
  std::exit(2);
}

Type elementType(MLIRContext &ctx, rt::DType t) {
  switch (t) {
  case rt::DType::F16:
    return Float16Type::get(&ctx);
  case rt::DType::BF16:
    return BFloat16Type::get(&ctx);
  case rt::DType::F32:
    break;
  }
  return Float32Type::get(&ctx);
}

/// The kernel function of the bundle: `fmha.attention` over (q, k, v, o,
/// lse), for kind=bwd `fmha.attention_bwd` over (q, k, v, o, lse, dO, dq,
/// dk, dv), for kind=merge `fmha.merge` over (o1, lse1, o2, lse2, o, lse), on
/// memrefs with dynamic B and S, for kind=acc `fmha.accumulate` over (x:
/// memref<?xT>, acc: memref<?xf32>) (the runtime's host ABIs, Runtime.h).
OwningOpRef<ModuleOp> buildKernel(MLIRContext &ctx,
                                  const rt::BundleMeta &meta) {
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  Type elt = elementType(ctx, meta.dtype);
  int64_t dyn = ShapedType::kDynamic;
  // A variable-length batch: batch 1, the sequences back to back.
  const int64_t batch = meta.varlen ? 1 : dyn;
  auto qType = MemRefType::get({batch, meta.hq, dyn, meta.d}, elt);
  // A paged cache: k and v are pages [pages, Hk, P, D].
  const bool paged = meta.pageSize > 0;
  const int64_t kvBatch = paged ? dyn : batch;
  const int64_t kvRows = paged ? meta.pageSize : dyn;
  auto kType = MemRefType::get({kvBatch, meta.hk, kvRows, meta.d}, elt);
  auto vType = MemRefType::get({kvBatch, meta.hk, kvRows, meta.dv}, elt);
  auto oType = MemRefType::get({batch, meta.hq, dyn, meta.dv}, elt);
  auto lseType = MemRefType::get({batch, meta.hq, dyn}, b.getF32Type());
  bool backward = meta.kind == rt::KernelKind::Backward;
  bool merge = meta.kind == rt::KernelKind::Merge;
  bool accumulate = meta.kind == rt::KernelKind::Accumulate;
  SmallVector<Type> argTypes = {qType, kType, vType, oType, lseType};
  if (merge) // o1, lse1, o2, lse2, o, lse
    argTypes = {oType, lseType, oType, lseType, oType, lseType};
  if (accumulate) // x, acc
    argTypes = {MemRefType::get({dyn}, elt),
                MemRefType::get({dyn}, b.getF32Type())};
  if (backward)
    argTypes.append({oType, qType, kType, vType}); // dO, dq, dk, dv
  // Learned sink logits: sinks f32 [Hq] after v; the backward's dsinks
  // (f32 [Hq]) last.
  const bool withSinks = meta.sinks && !merge && !accumulate;
  if (withSinks)
    argTypes.insert(argTypes.begin() + 3,
                    MemRefType::get({meta.hq}, b.getF32Type()));
  if (withSinks && backward)
    argTypes.push_back(MemRefType::get({meta.hq}, b.getF32Type()));
  // cu_seqlens_q, cu_seqlens_k (i32 [B + 1]; of a paged cache q's only)
  // and a paged cache's block_table (i32 [B, max_pages]) and seqlens_k (i32
  // [B]) after v and the sinks.
  const int varlenInputs = meta.varlen ? (paged ? 1 : 2) : 0;
  const int pagedInputs = paged ? 2 : 0;
  auto i32Vector = MemRefType::get({dyn}, b.getI32Type());
  if (meta.varlen)
    argTypes.insert(argTypes.begin() + 3 + (withSinks ? 1 : 0), varlenInputs,
                    i32Vector);
  if (paged)
    argTypes.insert(argTypes.begin() + 3 + (withSinks ? 1 : 0) + varlenInputs,
                    {MemRefType::get({dyn, dyn}, b.getI32Type()), i32Vector});
  // --strides=any: each tensor of an attention bundle in any strides but a
  // contiguous head-dim axis (DESIGN.md section 1, strides).
  if (strides == "any" && !merge && !accumulate)
    for (Type &t : argTypes) {
      auto m = cast<MemRefType>(t);
      SmallVector<int64_t> layout(m.getRank(), ShapedType::kDynamic);
      layout.back() = 1;
      t = MemRefType::get(
          m.getShape(), m.getElementType(),
          StridedLayoutAttr::get(&ctx, ShapedType::kDynamic, layout));
    }
  // --from-tensors: the op on tensors, which the pipeline bufferizes. With
  // contiguous operands the function is on tensors and returns the op's
  // outs (bufferized into the form above); with --strides=any it keeps the
  // strided memrefs above and takes each as a tensor
  // (bufferization.to_tensor), the outs written back in place
  // (materialize_in_destination), so that the kernels take the strides.
  const bool stridedTensors =
      fromTensors && strides == "any" && !merge && !accumulate;
  SmallVector<Type> memrefTypes = argTypes;
  SmallVector<Type> resultTypes;
  size_t firstOut = (accumulate ? 1
                     : merge    ? 4
                     : backward ? 6
                                : 3) +
                    (withSinks ? 1 : 0) + varlenInputs + pagedInputs;
  if (fromTensors) {
    for (Type &t : argTypes) {
      auto m = cast<MemRefType>(t);
      t = RankedTensorType::get(m.getShape(), m.getElementType());
    }
    resultTypes.assign(argTypes.begin() + firstOut, argTypes.end());
  }
  auto funcType = stridedTensors ? b.getFunctionType(memrefTypes, {})
                                 : b.getFunctionType(argTypes, resultTypes);
  auto func = func::FuncOp::create(b, loc, meta.kernel, funcType);
  func->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  Block *body = func.addEntryBlock();
  b.setInsertionPointToStart(body);
  SmallVector<Value> args(body->getArguments());
  if (stridedTensors)
    for (auto [i, arg] : llvm::enumerate(args))
      arg = bufferization::ToTensorOp::create(b, loc, argTypes[i], arg,
                                              /*restrict=*/true,
                                              /*writable=*/i >= firstOut);
  TypeRange results(resultTypes);
  mlir::fmha::MaskAttr maskAttr;
  if (!meta.mask.isNone())
    maskAttr = mlir::fmha::MaskAttr::get(&ctx, meta.mask);
  FloatAttr scaleAttr, softcapAttr;
  if (meta.scale > 0)
    scaleAttr = b.getF32FloatAttr(meta.scale);
  if (meta.softcap > 0)
    softcapAttr = b.getF32FloatAttr(meta.softcap);
  Operation *op;
  if (accumulate)
    op = mlir::fmha::AccumulateOp::create(b, loc, results, args[0], args[1]);
  else if (merge)
    op = mlir::fmha::MergeOp::create(b, loc, results, args[0], args[1], args[2],
                                     args[3], args[4], args[5]);
  else if (backward && withSinks) {
    // The sinks change dq, dk and dv only through lse: the backward beside
    // the sinks' gradient (fmha.sinks_grad).
    // (q, k, v, sinks, o, lse, dO, dq, dk, dv, dsinks)
    op = mlir::fmha::AttentionBwdOp::create(
        b, loc, results, args[0], args[1], args[2], args[4], args[5], args[6],
        args[7], args[8], args[9], maskAttr, scaleAttr, softcapAttr,
        meta.deterministic);
    mlir::fmha::SinksGradOp::create(b, loc, TypeRange{}, args[4], args[5],
                                    args[6], args[3], args[10]);
  } else if (backward)
    op = mlir::fmha::AttentionBwdOp::create(
        b, loc, results, args[0], args[1], args[2], args[3], args[4], args[5],
        args[6], args[7], args[8], maskAttr, scaleAttr, softcapAttr,
        meta.deterministic);
  else {
    // (q, k, v, [sinks], [cu_seqlens_q, [cu_seqlens_k]], [block_table,
    // seqlens_k], o, lse)
    size_t next = withSinks ? 4 : 3;
    auto take = [&](bool present) { return present ? args[next++] : Value(); };
    Value sinksArg = withSinks ? args[3] : Value();
    Value cuQ = take(meta.varlen), cuK = take(meta.varlen && !paged);
    Value table = take(paged), seqlensK = take(paged);
    op = mlir::fmha::AttentionOp::create(
        b, loc, results, args[0], args[1], args[2], sinksArg, cuQ, cuK, table,
        seqlensK, args[firstOut], args[firstOut + 1], maskAttr, scaleAttr,
        softcapAttr);
  }
  if (stridedTensors) {
    for (auto [result, out] :
         llvm::zip(op->getResults(), body->getArguments().drop_front(firstOut)))
      bufferization::MaterializeInDestinationOp::create(
          b, loc, /*result=*/Type(), result, out, /*restrict=*/true,
          /*writable=*/true);
    func::ReturnOp::create(b, loc);
  } else {
    func::ReturnOp::create(b, loc, op->getResults());
  }
  return module;
}

std::unique_ptr<llvm::TargetMachine> hostTargetMachine(std::string cpu) {
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string error;
  const llvm::Target *t = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!t)
    fail("no LLVM target for host triple '" + triple.str() + "': " + error);
  std::string features;
  if (cpu.empty() || cpu == "native") {
    cpu = llvm::sys::getHostCPUName().str();
    for (auto &feature : llvm::sys::getHostCPUFeatures())
      features += (feature.second ? "+" : "-") + feature.first().str() + ",";
  }
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(
      t->createTargetMachine(triple, cpu, features, options, llvm::Reloc::PIC_,
                             std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!tm)
    fail("cannot create a target machine for CPU '" + cpu + "'");
  return tm;
}

std::string emitToString(llvm::TargetMachine &tm, llvm::Module &module,
                         llvm::CodeGenFileType type) {
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, type))
    fail("the target cannot emit this file type");
  pm.run(module);
  return std::string(buffer.str());
}

std::string findLinker() {
  if (llvm::sys::fs::can_execute(FMHA_LD_LLD))
    return FMHA_LD_LLD;
  for (const char *name : {"ld.lld-22", "ld.lld"})
    if (auto path = llvm::sys::findProgramByName(name))
      return *path;
  fail("cannot find ld.lld (looked for " FMHA_LD_LLD
       ", ld.lld-22 and ld.lld on PATH); install lld-22");
}

/// Links an object into a shared object with ld.lld and returns its bytes.
std::string linkSharedObject(const std::string &object) {
  llvm::SmallString<128> objPath, soPath;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("fmha-kernel", "o", fd, objPath))
    fail("cannot create a temporary file");
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << object;
  }
  if (llvm::sys::fs::createTemporaryFile("fmha-kernel", "so", soPath))
    fail("cannot create a temporary file");
  std::string linker = findLinker();
  llvm::SmallVector<llvm::StringRef> args = {
      linker, "-shared", "--no-undefined-version", "-o", soPath, objPath};
  std::string error;
  int rc =
      llvm::sys::ExecuteAndWait(linker, args, std::nullopt, {}, 0, 0, &error);
  llvm::sys::fs::remove(objPath);
  if (rc != 0) {
    llvm::sys::fs::remove(soPath);
    fail("linking the kernel with " + linker + " failed" +
         (error.empty() ? "" : ": " + error));
  }
  auto buffer = llvm::MemoryBuffer::getFile(soPath);
  llvm::sys::fs::remove(soPath);
  if (!buffer)
    fail("cannot read the linked kernel");
  return (*buffer)->getBuffer().str();
}

void writeText(const std::string &text) {
  std::string path = output.empty() ? "-" : output.getValue();
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    fail("cannot write '" + path + "': " + ec.message());
  os << text;
}

/// Whether the compiler reported an error; some MLIR stages (the GPU binary
/// serializers among them) report one and still produce output.
bool sawError = false;

/// Whether `dir` is a CUDA toolkit that gpu-module-to-binary can use: ptxas in
/// bin/ and libdevice, which the serializer links whenever it has a toolkit.
bool isCudaToolkit(llvm::StringRef dir) {
  llvm::SmallString<128> ptxas(dir), libdevice(dir);
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  llvm::sys::path::append(libdevice, "nvvm", "libdevice", "libdevice.10.bc");
  return llvm::sys::fs::can_execute(ptxas) &&
         llvm::sys::fs::is_regular_file(libdevice);
}

/// The CUDA toolkit: the one $CUDA_ROOT, $CUDA_HOME or $CUDA_PATH names
/// (which then must be one), else the toolkit above the ptxas on PATH, else
/// /usr/local/cuda or /opt/cuda. Empty when there is none (PTX is written
/// instead of a cubin).
std::string findCudaToolkit() {
  for (const char *var : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"}) {
    const char *value = std::getenv(var);
    if (!value || !*value)
      continue;
    if (!isCudaToolkit(value))
      fail(llvm::Twine("$") + var + "='" + value +
           "' is not a CUDA toolkit (it needs bin/ptxas and "
           "nvvm/libdevice/libdevice.10.bc); unset it to write PTX");
    return value;
  }
  llvm::SmallVector<std::string> candidates;
  if (auto ptxas = llvm::sys::findProgramByName("ptxas")) {
    llvm::SmallString<128> real;
    if (llvm::sys::fs::real_path(*ptxas, real))
      real = *ptxas;
    llvm::sys::path::remove_filename(real); // .../bin
    llvm::sys::path::remove_filename(real); // the toolkit
    candidates.push_back(real.str().str());
  }
  candidates.push_back("/usr/local/cuda");
  candidates.push_back("/opt/cuda");
  for (const std::string &dir : candidates)
    if (isCudaToolkit(dir))
      return dir;
  return {};
}

/// The arguments of the function buildKernel makes, for the manifest.
std::vector<OperandSpec> operandSpecs(const rt::BundleMeta &meta) {
  using Role = rt::ManifestOperand::Role;
  switch (meta.kind) {
  case rt::KernelKind::Accumulate:
    return {{"x", Role::In, false, {"n"}}, {"acc", Role::InOut, false, {"n"}}};
  case rt::KernelKind::Merge: {
    std::vector<std::string> dims = {"b", "s"};
    return {{"o1", Role::In, false, dims}, {"lse1", Role::In, false, dims},
            {"o2", Role::In, false, dims}, {"lse2", Role::In, false, dims},
            {"o", Role::Out, false, dims}, {"lse", Role::Out, false, dims}};
  }
  case rt::KernelKind::Forward:
  case rt::KernelKind::Backward:
    break;
  }
  std::vector<std::string> q = {"b", "sq"}, k = {"b", "sk"};
  if (meta.varlen) // batch 1 (static)
    q = {"sq"}, k = {"sk"};
  if (meta.pageSize) // pages [pages, Hk, P, D]
    k = {"pages"};
  if (meta.kind == rt::KernelKind::Forward) {
    std::vector<OperandSpec> specs = {{"q", Role::In, false, q},
                                      {"k", Role::In, false, k},
                                      {"v", Role::In, false, k},
                                      {"o", Role::Out, false, q},
                                      {"lse", Role::Out, /*optional=*/true, q}};
    if (meta.pageSize) // i32 [B, max_pages] and [B]
      specs.insert(specs.begin() + 3,
                   {{"block_table", Role::In, false, {"b", "max_pages"}},
                    {"seqlens_k", Role::In, false, {"b"}}});
    if (meta.varlen && meta.pageSize) // i32 [B + 1]
      specs.insert(specs.begin() + 3,
                   {"cu_seqlens_q", Role::In, false, {"b+1"}});
    else if (meta.varlen) // i32 [B + 1] each
      specs.insert(specs.begin() + 3,
                   {{"cu_seqlens_q", Role::In, false, {"b+1"}},
                    {"cu_seqlens_k", Role::In, false, {"b+1"}}});
    if (meta.sinks) // f32 [Hq]: no dynamic size.
      specs.insert(specs.begin() + 3, {"sinks", Role::In, false, {}});
    return specs;
  }
  std::vector<OperandSpec> specs = {
      {"q", Role::In, false, q},   {"k", Role::In, false, k},
      {"v", Role::In, false, k},   {"o", Role::In, false, q},
      {"lse", Role::In, false, q}, {"dO", Role::In, false, q},
      {"dq", Role::Out, false, q}, {"dk", Role::Out, false, k},
      {"dv", Role::Out, false, k}};
  if (meta.sinks) { // sinks in after v, dsinks out last: f32 [Hq]
    specs.insert(specs.begin() + 3, {"sinks", Role::In, false, {}});
    specs.push_back({"dsinks", Role::Out, false, {}});
  }
  return specs;
}

/// The bundle's launch manifest: the operands of the kernel function and,
/// for GPU targets, the launches the pipeline left in it.
void setManifest(ModuleOp module, const rt::Manifest &host,
                 rt::BundleMeta &meta) {
  meta.manifest = host;
  if (meta.target != rt::Target::Cpu) {
    auto func = module.lookupSymbol<func::FuncOp>(meta.kernel);
    if (!func)
      fail("the GPU pipeline left no host function '" + meta.kernel + "'");
    std::string error;
    if (!gpuManifest(func, meta.indexBits, &meta.manifest, &error))
      fail(error);
  }
  if (bundleVersion == 2)
    meta.abi = rt::kAbiManifest;
}

/// The GPU pipeline of the target: cuda writes a cubin (ptxas present) or
/// PTX bundle, hip an hsaco bundle; --emit prints the IR, the kernel's LLVM
/// IR or its assembly (PTX, AMDGPU ISA) instead.
int compileGpu(ModuleOp module, const rt::Manifest &host,
               rt::BundleMeta &meta) {
  PassManager pm(module.getContext());
  std::string format;
  if (meta.target == rt::Target::Cuda) {
    mlir::fmha::NVVMPipelineOptions options;
    options.chip = meta.chip;
    options.blockM = meta.blockM;
    options.blockN = meta.blockN;
    options.warpRows = warpRows;
    options.qInShared = qInShared;
    options.rescale = rescale;
    options.mma = mma;
    options.kernelName = meta.kernel;
    options.vectorTiles = vectorTiles;
    options.kvStages = kvStages;
    options.deferPV = deferPV;
    options.bulkAdd = bulkAdd;
    options.indexBitwidth = meta.indexBits;
    // --cuda-binary=ptx: no toolkit (PTX, nothing of libdevice linked).
    std::string toolkit = cudaBinary == "ptx" ? "" : findCudaToolkit();
    if (cudaBinary == "cubin" && toolkit.empty())
      fail("--cuda-binary=cubin needs a CUDA toolkit (bin/ptxas and "
           "nvvm/libdevice/libdevice.10.bc): set $CUDA_HOME or put ptxas on "
           "PATH, or write --cuda-binary=ptx");
    if (emit == "llvm")
      options.format = "llvm";
    else if (emit == "bundle" && !toolkit.empty())
      options.format = "bin";
    else
      options.format = "isa";
    format = options.format;
    mlir::fmha::buildFmhaToNVVMPipeline(pm, options);
    // gpu-module-to-binary finds ptxas and libdevice through $CUDA_ROOT;
    // empty, it needs neither (the kernel calls no libdevice function).
    setenv("CUDA_ROOT", toolkit.c_str(), /*overwrite=*/1);
  } else {
    mlir::fmha::ROCDLPipelineOptions options;
    options.chip = meta.chip;
    options.indexBitwidth = meta.indexBits;
    options.blockM = meta.blockM;
    options.blockN = meta.blockN;
    options.warpRows = warpRows;
    options.qInShared = qInShared;
    options.rescale = rescale;
    options.mfma = mfma;
    options.kernelName = meta.kernel;
    options.vectorTiles = vectorTiles;
    options.format = emit == "llvm" ? "llvm" : emit == "bundle" ? "bin" : "isa";
    format = options.format;
    mlir::fmha::buildFmhaToROCDLPipeline(pm, options);
    // The device libraries and ld.lld are found under ROCM_PATH.
    setenv("ROCM_PATH", FMHA_ROCM_PATH, /*overwrite=*/0);
  }
  if (failed(pm.run(module)) || sawError)
    fail("the " + target + " GPU pipeline failed (see above)");
  if (emit == "mlir") {
    std::string text;
    llvm::raw_string_ostream os(text);
    module.print(os);
    writeText(text);
    return 0;
  }
  // The launch configuration the lowering chose: the largest block and
  // constant workgroup memory of the launches (the bundle's summary; each
  // launch's own are in the manifest: the backward with learned sinks adds
  // small kernels of another block size).
  std::optional<std::pair<int64_t, int64_t>> launchConfig;
  module.walk([&](gpu::LaunchFuncOp launch) {
    auto threads = getConstantIntValue(launch.getBlockSizeX());
    std::optional<int64_t> shared = 0;
    if (Value bytes = launch.getDynamicSharedMemorySize())
      shared = getConstantIntValue(bytes);
    if (!threads)
      return;
    std::pair<int64_t, int64_t> config(*threads, shared.value_or(0));
    if (!launchConfig)
      launchConfig = config;
    launchConfig = std::pair(std::max(launchConfig->first, config.first),
                             std::max(launchConfig->second, config.second));
  });
  if (!launchConfig)
    fail("the pipeline produced no kernel launch of a constant block size");
  meta.blockThreads = launchConfig->first;
  meta.sharedBytes = launchConfig->second;
  std::string binary;
  module.walk([&](gpu::BinaryOp op) {
    for (Attribute attr : op.getObjectsAttr())
      if (auto object = dyn_cast<gpu::ObjectAttr>(attr))
        binary = object.getObject().getValue().str();
  });
  if (binary.empty())
    fail("the pipeline produced no GPU binary");
  setManifest(module, host, meta);
  if (emit == "llvm") {
    llvm::LLVMContext llvmContext;
    auto parsed = llvm::parseBitcodeFile(
        llvm::MemoryBufferRef(binary, "kernel"), llvmContext);
    if (!parsed)
      fail("cannot read the kernel's LLVM bitcode: " +
           llvm::toString(parsed.takeError()));
    std::string text;
    llvm::raw_string_ostream os(text);
    (*parsed)->print(os, nullptr);
    writeText(text);
    return 0;
  }
  if (emit == "isa") {
    writeText(binary);
    return 0;
  }
  if (meta.target == rt::Target::Hip) {
    meta.binaryFormat = rt::BinaryFormat::Hsaco;
  } else if (format == "bin") {
    meta.binaryFormat = rt::BinaryFormat::Cubin;
  } else {
    meta.binaryFormat = rt::BinaryFormat::Ptx;
    binary.push_back('\0'); // cuModuleLoadData takes PTX as a C string.
  }
  std::string error;
  if (!rt::writeBundle(output, meta, binary, &error, bundleVersion))
    fail(error);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "fmha-compile: compile one attention problem signature into a "
          "bundle\n\n  fmha-compile --target=cpu --dtype=f32 --hq=8 --hk=2 "
          "-d 64 --mask=b -o attn.fmha\n",
          &llvm::errs()))
    return 2;

  // --- Validate the signature (DESIGN.md section 1). ---
  std::string optionError;
  std::optional<rt::BundleMeta> checked =
      ::fmha::compile::bundleMetaFromOptions(&optionError);
  if (!checked)
    fail(optionError);
  rt::BundleMeta meta = *checked;

  // --- Build and lower. ---
  DialectRegistry registry;
  mlir::fmha::registerAllFmhaDialects(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  ScopedDiagnosticHandler diagnostics(&ctx, [](Diagnostic &diag) {
    const char *severity = "note";
    switch (diag.getSeverity()) {
    case DiagnosticSeverity::Error:
      severity = "error";
      sawError = true;
      break;
    case DiagnosticSeverity::Warning:
      severity = "warning";
      break;
    case DiagnosticSeverity::Remark:
      severity = "remark";
      break;
    case DiagnosticSeverity::Note:
      break;
    }
    llvm::errs() << "fmha-compile: " << severity << ": " << diag << "\n";
    return success();
  });

  OwningOpRef<ModuleOp> module = buildKernel(ctx, meta);
  if (failed(verify(*module)))
    fail("the attention op does not verify (see above)");
  rt::Manifest host;
  {
    auto func = module->lookupSymbol<func::FuncOp>(meta.kernel);
    std::string error;
    if (!func || !hostManifest(func, operandSpecs(meta), &host, &error))
      fail("launch manifest: " + (func ? error : "no kernel function"));
  }
  if (meta.target != rt::Target::Cpu)
    return compileGpu(*module, host, meta);

  PassManager pm(&ctx);
  mlir::fmha::CpuPipelineOptions options;
  options.blockM = blockM;
  options.blockN = blockN;
  options.staticTiles = staticTiles;
  options.vectorTiles = vectorTiles;
  options.deferPV = deferPV;
  options.chip = chip;
  mlir::fmha::buildFmhaToCpuPipeline(pm, options);
  if (failed(pm.run(*module)) || sawError)
    fail("the fmha-to-cpu pipeline failed (see above)");
  if (emit == "mlir") {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    writeText(text);
    return 0;
  }

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*module, llvmContext, "fmha");
  if (!llvmModule)
    fail("translation to LLVM IR failed");
  std::unique_ptr<llvm::TargetMachine> tm = hostTargetMachine(chip);
  llvmModule->setTargetTriple(tm->getTargetTriple());
  llvmModule->setDataLayout(tm->createDataLayout());
  auto optimize = makeOptimizingTransformer(3, 0, tm.get());
  if (llvm::Error err = optimize(llvmModule.get()))
    fail("LLVM optimization failed: " + llvm::toString(std::move(err)));

  if (emit == "llvm") {
    std::string text;
    llvm::raw_string_ostream os(text);
    llvmModule->print(os, nullptr);
    writeText(text);
    return 0;
  }
  if (emit == "isa") {
    writeText(
        emitToString(*tm, *llvmModule, llvm::CodeGenFileType::AssemblyFile));
    return 0;
  }
  std::string object =
      emitToString(*tm, *llvmModule, llvm::CodeGenFileType::ObjectFile);
  std::string shared = linkSharedObject(object);
  setManifest(*module, host, meta);
  std::string error;
  if (!rt::writeBundle(output, meta, shared, &error, bundleVersion))
    fail(error);
  return 0;
}
