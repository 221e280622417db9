// The one framing of the cache blobs Python sees (engines' and primitives').
//
// oneDNN reads a cache blob's sizes and binaries without bounds checks, and
// cannot tell whether a blob is the one it is given for: another matmul's
// kernels have the same names and would run out of bounds of this one's
// memory. So a blob handed to Python is oneDNN's behind a header naming what
// it is for (the engine or primitive descriptor cache blob id) and a checksum
// of oneDNN's bytes; every blob that comes back is checked before oneDNN
// reads it:
//   magic (8 bytes, one per kind) | id size (u64) | id | FNV-1a of oneDNN's blob (u64) | oneDNN's blob
// The checksum catches damage, not forgery.
#pragma once

#include <cstdint>
#include <vector>

namespace dnnl_ocl_interop {
namespace cache_blobs {

enum class kind { engine, primitive };

// oneDNN's `payload` framed for the object identified by `id`.
std::vector<uint8_t> frame(kind k, const std::vector<uint8_t> &id,
        const std::vector<uint8_t> &payload);

// oneDNN's blob inside `blob`, once its header has been checked to be a `k`
// blob for `id`, whole and undamaged; otherwise dnnl.error
// (invalid_arguments) saying what is wrong, naming the parameter
// `cache_blob`.
std::vector<uint8_t> unframe(kind k, const std::vector<uint8_t> &blob,
        const std::vector<uint8_t> &id);

} // namespace cache_blobs
} // namespace dnnl_ocl_interop
