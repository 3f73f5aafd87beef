//===- Npy.h - Reading and writing NumPy .npy files -------------*- C++ -*-===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The subset of the .npy format that fmha-run exchanges with NumPy and
// PyTorch: format versions 1.0 and 2.0, C order, little-endian float32
// ('<f4') or float16 ('<f2') read into float; float32 written (version 1.0).
// Every failure is a one-line message naming the file and the problem.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_RUNTIME_NPY_H
#define FMHA_RUNTIME_NPY_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fmha::rt {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data; ///< Row-major, shape product elements.
  /// The element type of the file: "<f4", "<f2" or "<i4" (int32: the
  /// values in `ints`, `data` empty).
  std::string descr;
  std::vector<int32_t> ints;
};

/// Parses .npy bytes; `name` names the array in messages ("npy 'NAME': ...").
bool parseNpy(std::string_view bytes, const std::string &name, NpyArray *out,
              std::string *err);

/// Reads a .npy file.
bool readNpy(const std::string &path, NpyArray *out, std::string *err);

/// Checks that `array` (read from `name`) has shape `expected`; the message
/// shows both shapes, e.g. "npy 'q.npy': shape (2, 8, 64, 64) does not match
/// the expected (2, 8, 128, 64)".
bool checkNpyShape(const NpyArray &array, const std::string &name,
                   const std::vector<int64_t> &expected, std::string *err);

/// Formats a shape as NumPy prints it: "(2, 8, 128)", "(5,)", "()".
std::string formatShape(const std::vector<int64_t> &shape);

/// The .npy bytes of a float32 array.
std::string serializeNpy(const std::vector<int64_t> &shape, const float *data);
/// The .npy bytes of an int32 array ('<i4').
std::string serializeNpy(const std::vector<int64_t> &shape,
                         const int32_t *data);

/// Writes a float32 .npy file; `data` holds the shape product elements.
bool writeNpy(const std::string &path, const std::vector<int64_t> &shape,
              const float *data, std::string *err);
/// Writes an int32 .npy file.
bool writeNpy(const std::string &path, const std::vector<int64_t> &shape,
              const int32_t *data, std::string *err);

} // namespace fmha::rt

#endif // FMHA_RUNTIME_NPY_H
