//===- Random.h - Deterministic standard normal values ----------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The generator of the tools' random inputs (fmha-run, fmha-ring): the same
// seed gives the same values on every machine and in every process.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_RUNTIME_RANDOM_H
#define FMHA_RUNTIME_RANDOM_H

#include <cmath>
#include <cstdint>

namespace fmha::rt {

/// splitmix64 with Box-Muller normals.
class Normal {
public:
  explicit Normal(uint64_t seed) : state_(seed) {}
  double next() {
    if (hasSpare_) {
      hasSpare_ = false;
      return spare_;
    }
    // u1 in (0, 1] so that log(u1) is finite; u2 in [0, 1).
    double u1 = static_cast<double>((bits() >> 11) + 1) * 0x1.0p-53;
    double u2 = static_cast<double>(bits() >> 11) * 0x1.0p-53;
    double r = std::sqrt(-2.0 * std::log(u1));
    double theta = 2.0 * M_PI * u2;
    spare_ = r * std::sin(theta);
    hasSpare_ = true;
    return r * std::cos(theta);
  }

private:
  uint64_t bits() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t state_;
  double spare_ = 0.0;
  bool hasSpare_ = false;
};

} // namespace fmha::rt

#endif // FMHA_RUNTIME_RANDOM_H
