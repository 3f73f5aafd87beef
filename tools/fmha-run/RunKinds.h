//===- RunKinds.h - fmha-run per kernel kind ------------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// One entry per kernel kind: runs a problem through the bundle, --validate
// against the float64 reference, --bench, --save. Each returns the exit
// status (0 passed, 1 --validate failed) and fails (exit 2) on errors.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TOOLS_FMHA_RUN_RUNKINDS_H
#define FMHA_TOOLS_FMHA_RUN_RUNKINDS_H

#include "RunSupport.h"

namespace fmha::runtool {

/// A forward bundle (RunAttention.cpp).
int runForwardKernel(const CommandLine &cl, Kernel &kernel, const Problem &p,
                     const Signature &sig, const Inputs &in,
                     BenchCounts counts);
/// A backward bundle; `fwd`, when given, computes its o and lse
/// (RunAttention.cpp).
int runBackwardKernel(const CommandLine &cl, Kernel &kernel, Kernel *fwd,
                      const Problem &p, const Signature &sig, const Inputs &in,
                      BenchCounts counts);
/// Why the forward bundle `f` cannot give the o and lse of the backward
/// bundle `b`'s problem, or "" when it can (--fwd).
std::string forwardForBackwardMismatch(const BundleMeta &f,
                                       const BundleMeta &b);
/// A kind=merge bundle (RunElementwise.cpp).
int runMergeKernel(const CommandLine &cl, Kernel &kernel, const MergeProblem &p,
                   const Signature &sig, uint64_t seed, BenchCounts counts);
/// A kind=acc bundle (RunElementwise.cpp).
int runAccumulateKernel(const CommandLine &cl, Kernel &kernel, int64_t n,
                        DType dtype, uint64_t seed, BenchCounts counts);

} // namespace fmha::runtool

#endif // FMHA_TOOLS_FMHA_RUN_RUNKINDS_H
