//===- Npy.cpp - Reading and writing NumPy .npy files ---------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// Format: "\x93NUMPY", major, minor, header length (uint16 for 1.0, uint32
// for 2.0, little-endian), then a Python dict literal
// {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with spaces
// and ended by '\n', then the raw data.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/Npy.h"

#include "fmha/Runtime/Half.h"

#include "Util.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the .npy reader assumes a little-endian host"
#endif

namespace fmha::rt {

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

/// A cursor over the header dict; each parse method returns false on a
/// syntax error and leaves the message in `error`.
class DictParser {
public:
  explicit DictParser(std::string_view text) : text_(text) {}

  std::string error;

  void skipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n'))
      ++pos_;
  }
  bool atEnd() const { return pos_ >= text_.size(); }
  bool consume(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  char peek() {
    skipSpace();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }

  std::optional<std::string> string() {
    skipSpace();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      error = "expected a quoted string at offset " + std::to_string(pos_);
      return std::nullopt;
    }
    char q = text_[pos_++];
    size_t end = text_.find(q, pos_);
    if (end == std::string_view::npos) {
      error = "unterminated string";
      return std::nullopt;
    }
    std::string s(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }

  std::optional<bool> boolean() {
    skipSpace();
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    error = "expected True or False at offset " + std::to_string(pos_);
    return std::nullopt;
  }

  std::optional<std::vector<int64_t>> tuple() {
    if (!consume('(')) {
      error = "expected a shape tuple at offset " + std::to_string(pos_);
      return std::nullopt;
    }
    std::vector<int64_t> dims;
    while (true) {
      if (consume(')'))
        return dims;
      if (dims.size() >= 32) {
        error = "shape has more than 32 dimensions";
        return std::nullopt;
      }
      skipSpace();
      size_t start = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9')
        ++pos_;
      std::optional<int64_t> v =
          detail::parseInt(text_.substr(start, pos_ - start));
      if (!v) {
        error = "expected a non-negative integer in the shape at offset " +
                std::to_string(start);
        return std::nullopt;
      }
      if (pos_ < text_.size() && text_[pos_] == 'L')
        ++pos_;
      dims.push_back(*v);
      if (consume(','))
        continue;
      if (peek() != ')') {
        error = "expected ',' or ')' in the shape at offset " +
                std::to_string(pos_);
        return std::nullopt;
      }
    }
  }

private:
  std::string_view text_;
  size_t pos_ = 0;
};

uint32_t readLE(std::string_view bytes, size_t at, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + i]))
         << (8 * i);
  return v;
}

} // namespace

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    s += ",";
  return s + ")";
}

bool parseNpy(std::string_view bytes, const std::string &name, NpyArray *out,
              std::string *err) {
  auto fail = [&](const std::string &problem) {
    *err = detail::printable("npy '" + name + "': " + problem);
    return false;
  };
  if (bytes.size() < 10 || bytes.substr(0, kMagic.size()) != kMagic)
    return fail("bad magic: not a .npy file");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  unsigned minor = static_cast<unsigned char>(bytes[7]);
  if ((major != 1 && major != 2) || minor != 0)
    return fail("unsupported .npy format version " + std::to_string(major) +
                "." + std::to_string(minor) + " (reads 1.0 and 2.0)");
  size_t lenSize = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + lenSize)
    return fail("truncated header");
  uint64_t headerLen = readLE(bytes, 8, lenSize);
  uint64_t dataStart = 8 + lenSize + headerLen;
  if (dataStart > bytes.size())
    return fail("truncated header: it claims " + std::to_string(headerLen) +
                " bytes, file has " +
                std::to_string(bytes.size() - 8 - lenSize));
  std::string_view header = bytes.substr(8 + lenSize, headerLen);

  DictParser p(header);
  std::optional<std::string> descr;
  std::optional<bool> fortran;
  std::optional<std::vector<int64_t>> shape;
  auto malformed = [&](const std::string &why) {
    return fail("malformed header: " + why);
  };
  if (!p.consume('{'))
    return malformed("expected '{'");
  while (!p.consume('}')) {
    std::optional<std::string> key = p.string();
    if (!key)
      return malformed(p.error);
    if (!p.consume(':'))
      return malformed("expected ':' after " + detail::quote(*key));
    if (*key == "descr" && !descr) {
      if (!(descr = p.string()))
        return malformed(p.error);
    } else if (*key == "fortran_order" && !fortran) {
      if (!(fortran = p.boolean()))
        return malformed(p.error);
    } else if (*key == "shape" && !shape) {
      if (!(shape = p.tuple()))
        return malformed(p.error);
    } else {
      return malformed((descr && *key == "descr") ||
                               (fortran && *key == "fortran_order") ||
                               (shape && *key == "shape")
                           ? "key " + detail::quote(*key) + " appears twice"
                           : "unknown key " + detail::quote(*key));
    }
    if (!p.consume(',') && p.peek() != '}')
      return malformed("expected ',' or '}'");
  }
  p.skipSpace();
  if (!p.atEnd())
    return malformed("unexpected text after the dict");
  if (!descr)
    return malformed("missing key 'descr'");
  if (!fortran)
    return malformed("missing key 'fortran_order'");
  if (!shape)
    return malformed("missing key 'shape'");
  if (*fortran)
    return fail("fortran_order True is not supported (save a C-order array)");
  size_t itemSize;
  if (*descr == "<f4" || *descr == "<i4")
    itemSize = 4;
  else if (*descr == "<f2")
    itemSize = 2;
  else
    return fail("unsupported dtype " + detail::quote(*descr) +
                " (expected '<f4' float32, '<f2' float16 or '<i4' int32)");

  int64_t count = 1;
  for (int64_t dim : *shape)
    if (detail::mulOverflows(count, dim, &count))
      return fail("shape " + formatShape(*shape) + " is too large");
  int64_t needed;
  if (detail::mulOverflows(count, static_cast<int64_t>(itemSize), &needed))
    return fail("shape " + formatShape(*shape) + " is too large");
  uint64_t have = bytes.size() - dataStart;
  if (static_cast<uint64_t>(needed) > have)
    return fail("truncated data: shape " + formatShape(*shape) + " of " +
                *descr + " needs " + std::to_string(needed) +
                " bytes, file has " + std::to_string(have));
  if (static_cast<uint64_t>(needed) < have)
    return fail("trailing data: shape " + formatShape(*shape) + " of " +
                *descr + " needs " + std::to_string(needed) +
                " bytes, file has " + std::to_string(have));

  NpyArray a;
  a.shape = *shape;
  a.descr = *descr;
  const char *src = bytes.data() + dataStart;
  if (*descr == "<i4") {
    a.ints.resize(static_cast<size_t>(count));
    if (count)
      std::memcpy(a.ints.data(), src, static_cast<size_t>(needed));
    *out = std::move(a);
    return true;
  }
  a.data.resize(static_cast<size_t>(count));
  if (itemSize == 4) {
    if (count)
      std::memcpy(a.data.data(), src, static_cast<size_t>(needed));
  } else {
    for (int64_t i = 0; i < count; ++i) {
      uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      a.data[i] = halfBitsToFloat(h);
    }
  }
  *out = std::move(a);
  return true;
}

bool readNpy(const std::string &path, NpyArray *out, std::string *err) {
  std::string bytes, problem;
  if (!detail::readFile(path, &bytes, &problem)) {
    *err = detail::printable("npy '" + path + "': " + problem);
    return false;
  }
  return parseNpy(bytes, path, out, err);
}

bool checkNpyShape(const NpyArray &array, const std::string &name,
                   const std::vector<int64_t> &expected, std::string *err) {
  if (array.shape == expected)
    return true;
  *err = detail::printable(
      "npy '" + name + "': shape " + formatShape(array.shape) +
      " does not match the expected " + formatShape(expected));
  return false;
}

namespace {

/// The .npy bytes of `shape` elements of 4 bytes at `data` of type `descr`.
std::string serializeNpy4(const char *descr, const std::vector<int64_t> &shape,
                          const void *data) {
  std::string dict =
      std::string("{'descr': '") + descr +
      "', 'fortran_order': False, 'shape': " + formatShape(shape) + ", }";
  // Pad with spaces so that the data starts at a multiple of 64 bytes; the
  // header ends with '\n'.
  size_t prefix = 10;
  size_t total = prefix + dict.size() + 1;
  bool v2 = false;
  if ((total + 63) / 64 * 64 - prefix > 0xffff) {
    v2 = true;
    prefix = 12;
    total = prefix + dict.size() + 1;
  }
  size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  size_t headerLen = dict.size();
  std::string out(kMagic);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i)
    out += static_cast<char>((headerLen >> (8 * i)) & 0xff);
  out += dict;
  size_t count = 1;
  for (int64_t dim : shape)
    count *= static_cast<size_t>(dim);
  if (count)
    out.append(static_cast<const char *>(data), count * 4);
  return out;
}

/// A shape with no negative dimension; else false and *err.
bool checkWritableShape(const std::string &path,
                        const std::vector<int64_t> &shape, std::string *err) {
  for (int64_t dim : shape) {
    if (dim < 0) {
      *err = "npy '" + path + "': negative dimension in shape " +
             formatShape(shape);
      return false;
    }
  }
  return true;
}

bool writeNpyBytes(const std::string &path, const std::string &bytes,
                   std::string *err) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) {
    *err = "npy '" + path + "': cannot create file: " + std::strerror(errno);
    return false;
  }
  size_t written = std::fwrite(bytes.data(), 1, bytes.size(), f);
  int savedErrno = errno;
  bool closeFailed = std::fclose(f) != 0;
  if (written != bytes.size() || closeFailed) {
    *err = "npy '" + path + "': cannot write file: " +
           std::strerror(closeFailed ? errno : savedErrno);
    return false;
  }
  return true;
}

} // namespace

std::string serializeNpy(const std::vector<int64_t> &shape, const float *data) {
  return serializeNpy4("<f4", shape, data);
}

std::string serializeNpy(const std::vector<int64_t> &shape,
                         const int32_t *data) {
  return serializeNpy4("<i4", shape, data);
}

bool writeNpy(const std::string &path, const std::vector<int64_t> &shape,
              const float *data, std::string *err) {
  return checkWritableShape(path, shape, err) &&
         writeNpyBytes(path, serializeNpy(shape, data), err);
}

bool writeNpy(const std::string &path, const std::vector<int64_t> &shape,
              const int32_t *data, std::string *err) {
  return checkWritableShape(path, shape, err) &&
         writeNpyBytes(path, serializeNpy(shape, data), err);
}

} // namespace fmha::rt
