//===- RunPaged.cpp - fmha-run's paged K/V cache
//---------------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// The block table and lengths of a paged bundle's cache (page_size=P):
// drawn from the lengths (its pages in a random order, the entries past a
// sequence's pages out of range, so that a kernel reading one faults or
// fails --validate) or read from --load's block_table.npy and seqlens_k.npy.
//
//===----------------------------------------------------------------------===//

#include "RunSupport.h"

#include "fmha/Runtime/Random.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace fmha::runtool {

namespace {

/// DIR/FILE: an int32 array of `rank` dims.
NpyArray loadInts(const std::string &dir, const char *file, size_t rank,
                  const char *what) {
  NpyArray a;
  std::string err;
  if (!readNpy(joinPath(dir, file), &a, &err))
    fail(err);
  if (a.descr != "<i4" || a.shape.size() != rank)
    fail("npy '" + joinPath(dir, file) + "': expected " + what + ", got " +
         a.descr + " of shape " + formatShape(a.shape));
  return a;
}

int64_t pagesOf(int64_t length, int64_t pageSize) {
  return (length + pageSize - 1) / pageSize;
}

} // namespace

PagedCache pagedCache(const CommandLine &cl, int64_t pageSize,
                      std::optional<int64_t> &b, std::optional<int64_t> sk,
                      const std::optional<std::string> &loadDir,
                      int64_t loadedPages, uint64_t seed) {
  PagedCache cache;
  if (loadDir) {
    for (const char *flag : {"seqlens-k", "pages", "max-pages"})
      if (cl.has(flag))
        fail(flagName(flag) + ": --load reads a paged cache from "
                              "block_table.npy, seqlens_k.npy and "
                              "k_cache.npy");
    NpyArray lengths =
        loadInts(*loadDir, "seqlens_k.npy", 1, "int32 lengths [B]");
    NpyArray table = loadInts(*loadDir, "block_table.npy", 2,
                              "an int32 table [B, max_pages]");
    if (b && *b != lengths.shape[0])
      fail("seqlens_k.npy holds " + std::to_string(lengths.shape[0]) +
           " lengths for " + std::to_string(*b) + " sequences");
    if (table.shape[0] != lengths.shape[0] || table.shape[1] < 1)
      fail("block_table.npy has shape " + formatShape(table.shape) +
           ", expected [B, max_pages] with B = " +
           std::to_string(lengths.shape[0]) +
           " (seqlens_k.npy) and max_pages >= 1");
    b = lengths.shape[0];
    cache.seqlensK = std::move(lengths.ints);
    cache.blockTable = std::move(table.ints);
    cache.maxPages = table.shape[1];
    cache.pages = loadedPages;
    return cache;
  }
  std::vector<int64_t> lengths;
  if (std::optional<std::vector<int64_t>> given =
          cl.lengths("seqlens-k", kMaxSequence)) {
    if (cl.has("sk"))
      fail("--sk: a paged bundle's cache lengths are --seqlens-k's (its Sk "
           "is --max-pages * the page size)");
    if (b && *b != static_cast<int64_t>(given->size()))
      fail("--seqlens-k gives " + std::to_string(given->size()) +
           " lengths for " + std::to_string(*b) + " sequences");
    lengths = *given;
  } else {
    if (!b || !sk)
      fail("a paged bundle (page_size=" + std::to_string(pageSize) +
           ") needs --seqlens-k (each sequence's cache length) or --sk "
           "(every sequence's, with -b unless --seqlens-q gives them)");
    lengths.assign(*b, *sk);
  }
  b = static_cast<int64_t>(lengths.size());
  int64_t needed = 0, longest = 1;
  for (int64_t length : lengths) {
    needed += pagesOf(length, pageSize);
    longest = std::max(longest, pagesOf(length, pageSize));
  }
  cache.maxPages = cl.integer("max-pages", 1).value_or(longest);
  cache.pages = cl.integer("pages", 1).value_or(std::max<int64_t>(needed, 1));
  if (cache.maxPages < longest)
    fail("--max-pages=" + std::to_string(cache.maxPages) +
         " is less than the " + std::to_string(longest) +
         " pages of the longest sequence");
  if (cache.pages < needed)
    fail("--pages=" + std::to_string(cache.pages) + " is less than the " +
         std::to_string(needed) + " pages the lengths fill");
  if (cache.pages > std::numeric_limits<int32_t>::max() ||
      *b > kMaxSequence / cache.maxPages)
    fail("the paged cache is too large: --pages up to 2^31 - 1 and -b * "
         "--max-pages up to 2^30");
  // The pages in a random order, dealt to the sequences in turn.
  std::vector<double> keys(cache.pages);
  Normal rng(seed ^ 0x7061676573ull); // "pages"
  for (double &key : keys)
    key = rng.next();
  std::vector<int32_t> order(cache.pages);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t x, int32_t y) { return keys[x] < keys[y]; });
  cache.blockTable.assign(*b * cache.maxPages,
                          std::numeric_limits<int32_t>::max());
  size_t next = 0;
  for (int64_t n = 0; n < *b; ++n) {
    cache.seqlensK.push_back(static_cast<int32_t>(lengths[n]));
    for (int64_t j = 0; j < pagesOf(lengths[n], pageSize); ++j)
      cache.blockTable[n * cache.maxPages + j] = order[next++];
  }
  return cache;
}

void poisonUnusedSlots(const Problem &p, const PagedCache &cache, int64_t width,
                       std::vector<float> &kv) {
  std::vector<bool> used(p.pages * p.pageSize, false);
  for (int64_t n = 0; n < p.b; ++n)
    for (int64_t j = 0; j < cache.seqlensK[n]; ++j) {
      const int64_t page = cache.blockTable[n * p.maxPages + j / p.pageSize];
      if (page >= 0 && page < p.pages)
        used[page * p.pageSize + j % p.pageSize] = true;
    }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t page = 0; page < p.pages; ++page)
    for (int64_t h = 0; h < p.hk; ++h)
      for (int64_t slot = 0; slot < p.pageSize; ++slot)
        if (!used[page * p.pageSize + slot])
          std::fill_n(&kv[((page * p.hk + h) * p.pageSize + slot) * width],
                      width, nan);
}

} // namespace fmha::runtool
