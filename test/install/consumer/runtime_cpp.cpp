//===- runtime_cpp.cpp - A C++ program on the installed FMHA runtime ------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Links only the installed FMHA::FMHARuntime: loads a cpu forward bundle
// (f32, no mask) with fmha::rt::Kernel and launches it by name on q, k, v
// and o in BSHD memory (their strides given), then checks o against a
// float64 attention written here.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Runtime.h"

extern "C" {
#include "reference.h"
}

#include <cmath>
#include <cstdio>
#include <vector>

int main(int argc, char **argv) {
  using namespace fmha::rt;
  if (argc != 2) {
    std::fprintf(stderr, "usage: fmha-runtime-cpp BUNDLE\n");
    return 2;
  }
  Expected<std::unique_ptr<Kernel>> loaded = Kernel::loadFile(argv[1]);
  if (!loaded.ok()) {
    std::fprintf(stderr, "fmha-runtime-cpp: %s\n",
                 loaded.status().message().c_str());
    return 1;
  }
  const Kernel &kernel = **loaded;
  const BundleMeta &m = kernel.meta();
  const int64_t B = 2, sq = 9, sk = 6, hq = m.hq, hk = m.hk, D = m.d, dv = m.dv;
  // BSHD memory: logical [b][h][s][d] at ((b S + s) H + h) D + d.
  auto bshd = [](int64_t h, int64_t s, int64_t d) {
    return std::vector<int64_t>{s * h * d, d, h * d, 1};
  };
  std::vector<float> q(B * sq * hq * D), k(B * sk * hk * D),
      v(B * sk * hk * dv), o(B * sq * hq * dv, NAN);
  for (size_t i = 0; i < q.size(); ++i)
    q[i] = static_cast<float>(std::sin(0.31 * i));
  for (size_t i = 0; i < k.size(); ++i)
    k[i] = static_cast<float>(std::cos(0.17 * i));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(std::sin(0.07 * i + 2.0));
  LaunchArgs args;
  args.size("b", B).size("sq", sq).size("sk", sk);
  args.tensor("q", q.data(), bshd(hq, sq, D))
      .tensor("k", k.data(), bshd(hk, sk, D))
      .tensor("v", v.data(), bshd(hk, sk, dv))
      .tensor("o", o.data(), bshd(hq, sq, dv));
  Status s = kernel.launch(args);
  if (!s.ok()) {
    std::fprintf(stderr, "fmha-runtime-cpp: %s\n", s.message().c_str());
    return 1;
  }
  const std::vector<int64_t> qs = bshd(hq, sq, D), ks = bshd(hk, sk, D),
                             vs = bshd(hk, sk, dv), os = bshd(hq, sq, dv);
  const double err = fmhaTestMaxError(
      B, hq, hk, sq, sk, D, dv, m.effectiveScale(), q.data(), qs.data(),
      k.data(), ks.data(), v.data(), vs.data(), o.data(), os.data());
  std::printf("fmha-runtime-cpp: max |o - reference| = %.3g (BSHD strides)\n",
              err);
  return err <= 1e-5 ? 0 : 1;
}
