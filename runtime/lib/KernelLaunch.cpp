//===- KernelLaunch.cpp - The generic launch path of a Kernel -------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Kernel::launch binds named arguments to the bundle's manifest, finds the
// workspace and scratch memory, evaluates the plan, checks every launch
// against the device and hands the plan to the backend. Every per-kind
// entry point of Runtime.h ends here.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Runtime.h"

#include <algorithm>
#include <vector>

namespace fmha::rt {

namespace {

constexpr uintptr_t kWorkspaceAlignment = 256;

} // namespace

Kernel::~Kernel() {
  if (workspace_) {
    // A launch queued with it may still run.
    (void)backend_->synchronize(nullptr);
    backend_->deallocate(workspace_);
  }
}

Status Kernel::bind(const LaunchArgs &args, bool launching,
                    LaunchBinding *binding) const {
  std::string err;
  if (bindLaunch(meta_.manifest, args, backend_->multiprocessors(),
                 meta_.indexBits, /*requireOperands=*/launching, binding, &err))
    return Status::success();
  return Status::error(ErrorCode::InvalidArgument,
                       "bundle '" + name_ + "': " + err +
                           (launching ? "; nothing was launched" : ""));
}

Expected<size_t> Kernel::workspaceBytes(const LaunchArgs &args) const {
  LaunchBinding binding;
  Status s = bind(args, /*launching=*/false, &binding);
  if (!s.ok())
    return s;
  return binding.workspaceBytes;
}

Expected<LaunchPlan> Kernel::plan(const LaunchArgs &args) const {
  LaunchBinding binding;
  Status s = bind(args, /*launching=*/false, &binding);
  if (!s.ok())
    return s;
  std::string err;
  std::vector<const void *> addresses;
  for (const ManifestOperand &o : meta_.manifest.operands) {
    auto it = args.tensors.find(o.name);
    addresses.push_back(it == args.tensors.end() ? nullptr : it->second.data);
  }
  LaunchPlan plan;
  if (!planLaunch(meta_.manifest, binding, addresses, nullptr, &plan, &err))
    return Status::error(ErrorCode::InvalidArgument,
                         "bundle '" + name_ + "': " + err);
  for (const PlannedLaunch &launch : plan.launches) {
    Status s = loaded_->checkLaunch(launch);
    if (!s.ok())
      return s;
  }
  return plan;
}

/// The offsets of a variable-length batch in host memory (a cpu bundle):
/// 0 first, nondecreasing, within Sq and Sk (checkSeqlens), before the
/// kernel reads past them.
static Status checkHostOffsets(const BundleMeta &meta, const LaunchArgs &args) {
  if ((!meta.varlen && !meta.pageSize) || meta.target != Target::Cpu)
    return Status::success();
  auto size = [&](const char *name) {
    auto it = args.sizes.find(name);
    return it == args.sizes.end() ? int64_t(0) : it->second;
  };
  auto table = [&](const char *name, const int32_t **out) {
    auto it = args.tensors.find(name);
    if (it == args.tensors.end() || !it->second.data)
      return Status::error(ErrorCode::InvalidArgument,
                           std::string("null pointer for ") + name +
                               "; nothing was launched");
    *out = static_cast<const int32_t *>(it->second.data);
    return Status::success();
  };
  auto launched = [](Status s) {
    return s.ok() ? s
                  : Status::error(s.code(),
                                  s.message() + "; nothing was launched");
  };
  std::vector<std::pair<const char *, int64_t>> offsets;
  if (meta.varlen)
    offsets.push_back({"cu_seqlens_q", size("sq")});
  if (meta.varlen && !meta.pageSize)
    offsets.push_back({"cu_seqlens_k", size("sk")});
  for (auto [name, total] : offsets) {
    const int32_t *cu = nullptr;
    Status s = table(name, &cu);
    if (s.ok())
      s = launched(checkSeqlens(name, cu, size("b"), total));
    if (!s.ok())
      return s;
  }
  if (!meta.pageSize)
    return Status::success();
  Problem p;
  p.b = size("b");
  p.pageSize = meta.pageSize;
  p.pages = size("pages");
  p.maxPages = size("max_pages");
  const int32_t *blockTable = nullptr, *seqlensK = nullptr;
  Status s = table("block_table", &blockTable);
  if (s.ok())
    s = table("seqlens_k", &seqlensK);
  return s.ok() ? launched(checkPaged(p, blockTable, seqlensK)) : s;
}

Status Kernel::launch(const LaunchArgs &args, void *stream, void *workspace,
                      size_t workspaceBytes) const {
  LaunchBinding binding;
  Status bound = bind(args, /*launching=*/true, &binding);
  if (bound.ok())
    bound = checkHostOffsets(meta_, args);
  if (!bound.ok())
    return bound;
  const size_t need = binding.workspaceBytes;
  if (need == 0)
    return launchBound(args, binding, stream, nullptr);
  if (workspace) {
    if (workspaceBytes < need)
      return Status::error(
          ErrorCode::InvalidArgument,
          "workspace of " + std::to_string(workspaceBytes) +
              " bytes is too small: this launch needs " + std::to_string(need) +
              " bytes (workspaceBytes; C API: fmhaKernelWorkspaceBytes); "
              "nothing was launched");
    if (reinterpret_cast<uintptr_t>(workspace) % kWorkspaceAlignment != 0)
      return Status::error(ErrorCode::InvalidArgument,
                           "the workspace must be 256-byte aligned; nothing "
                           "was launched");
    return launchBound(args, binding, stream, workspace);
  }
  // The kernel object's own workspace, one launch sequence at a time.
  std::lock_guard<std::mutex> lock(workspaceMutex_);
  const bool grow = need > workspaceCapacity_;
  if (workspace_ && (grow || stream != workspaceStream_)) {
    // The last launch may still use it on its stream.
    Status s = backend_->synchronize(nullptr);
    if (!s.ok())
      return Status::error(s.code(), s.message() +
                                         " (waiting for the device before "
                                         "reusing the workspace)");
  }
  if (grow) {
    if (workspace_)
      backend_->deallocate(workspace_);
    workspace_ = nullptr;
    workspaceCapacity_ = 0;
    Expected<void *> allocated = backend_->allocate(need);
    if (!allocated.ok())
      return Status::error(allocated.status().code(),
                           allocated.message() + " (the workspace)");
    workspace_ = *allocated;
    workspaceCapacity_ = need;
  }
  workspaceStream_ = stream;
  return launchBound(args, binding, stream, workspace_);
}

Status Kernel::launchBound(const LaunchArgs &args, const LaunchBinding &binding,
                           void *stream, void *workspace) const {
  const Manifest &m = meta_.manifest;
  std::vector<const void *> addresses;
  std::vector<DeviceBuffer> scratch;
  for (size_t i = 0; i < m.operands.size(); ++i) {
    const ManifestOperand &o = m.operands[i];
    if (binding.operands[i].given) {
      addresses.push_back(args.tensors.find(o.name)->second.data);
      continue;
    }
    // An optional operand left out: scratch memory the kernels write.
    size_t bytes =
        static_cast<size_t>(binding.operands[i].span) * scalarSize(o.type);
    Expected<DeviceBuffer> buffer = DeviceBuffer::allocate(*backend_, bytes);
    if (!buffer.ok())
      return buffer.status();
    addresses.push_back(buffer->get());
    scratch.push_back(buffer.take());
  }
  LaunchPlan plan;
  std::string err;
  if (!planLaunch(m, binding, addresses, workspace, &plan, &err))
    return Status::error(ErrorCode::InvalidArgument,
                         "bundle '" + name_ + "': " + err +
                             "; nothing was launched");
  // Every launch is checked before any runs.
  for (const PlannedLaunch &launch : plan.launches) {
    Status s = loaded_->checkLaunch(launch);
    if (!s.ok())
      return s;
  }
  Status launched = loaded_->launch(plan, stream);
  if (!launched.ok() || scratch.empty())
    return launched;
  // The scratch buffers are freed on return: wait for the kernels first.
  return backend_->synchronize(stream);
}

Status Kernel::launchHost(const LaunchArgs &hostArgs, void *stream) const {
  if (backend_->target() == Target::Cpu)
    return launch(hostArgs, stream);
  LaunchBinding binding;
  const Manifest &m = meta_.manifest;
  Status bound = bind(hostArgs, /*launching=*/true, &binding);
  if (!bound.ok())
    return bound;
  LaunchArgs deviceArgs;
  deviceArgs.sizes = hostArgs.sizes;
  std::vector<DeviceBuffer> buffers(m.operands.size());
  std::vector<size_t> bytes(m.operands.size(), 0);
  for (size_t i = 0; i < m.operands.size(); ++i) {
    if (!binding.operands[i].given)
      continue;
    const ManifestOperand &o = m.operands[i];
    const LaunchArgs::Tensor &host = hostArgs.tensors.find(o.name)->second;
    bytes[i] =
        static_cast<size_t>(binding.operands[i].span) * scalarSize(o.type);
    Expected<DeviceBuffer> buffer = DeviceBuffer::allocate(*backend_, bytes[i]);
    if (!buffer.ok())
      return buffer.status();
    buffers[i] = buffer.take();
    if (o.role != ManifestOperand::Role::Out) {
      Status copied =
          backend_->copyToDevice(buffers[i].get(), host.data, bytes[i]);
      if (!copied.ok())
        return copied;
    }
    deviceArgs.tensor(o.name, buffers[i].get(), host.strides);
  }
  Status launched = launch(deviceArgs, stream);
  if (!launched.ok())
    return launched;
  Status synced = backend_->synchronize(stream);
  if (!synced.ok())
    return synced;
  for (size_t i = 0; i < m.operands.size(); ++i) {
    const ManifestOperand &o = m.operands[i];
    if (!binding.operands[i].given || o.role == ManifestOperand::Role::In)
      continue;
    void *host = const_cast<void *>(hostArgs.tensors.find(o.name)->second.data);
    Status copied = backend_->copyToHost(host, buffers[i].get(), bytes[i]);
    if (!copied.ok())
      return copied;
  }
  return Status::success();
}

} // namespace fmha::rt
