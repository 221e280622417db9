#include "common/enum_caster.hpp" // first: see the header

#include "common/cache_blobs.hpp"

#include <cstring>
#include <string>

#include "common/errors.hpp"

namespace dnnl_ocl_interop {
namespace cache_blobs {
namespace {

constexpr size_t magic_size = 8;
constexpr char engine_magic[magic_size] = {'d', 'n', 'n', 'l', 'e', 'c', 'b', '1'};
constexpr char primitive_magic[magic_size] = {'d', 'n', 'n', 'l', 'p', 'c', 'b', '1'};

const char *magic_of(kind k) {
    return k == kind::engine ? engine_magic : primitive_magic;
}

// What a blob of each kind is for, and where one comes from, for messages.
const char *what(kind k) {
    return k == kind::engine ? "an engine" : "a primitive";
}
const char *source(kind k) {
    return k == kind::engine ? "ocl_interop.get_engine_cache_blob()" : "primitive.get_cache_blob()";
}
const char *owner(kind k) {
    return k == kind::engine ? "another device, driver or oneDNN version (its id is not the "
                               "device's get_engine_cache_blob_id())"
                             : "another primitive descriptor, device or oneDNN version (its id "
                               "is not this descriptor's get_cache_blob_id())";
}

uint64_t fnv1a(const uint8_t *data, size_t size) {
    uint64_t hash = 14695981039346656037ULL;
    for (size_t i = 0; i < size; ++i) hash = (hash ^ data[i]) * 1099511628211ULL;
    return hash;
}

void append_u64(std::vector<uint8_t> &out, uint64_t value) {
    const auto *bytes = reinterpret_cast<const uint8_t *>(&value);
    out.insert(out.end(), bytes, bytes + sizeof(value));
}

} // namespace

std::vector<uint8_t> frame(kind k, const std::vector<uint8_t> &id,
        const std::vector<uint8_t> &payload) {
    const char *magic = magic_of(k);
    std::vector<uint8_t> out(magic, magic + magic_size);
    out.reserve(magic_size + 16 + id.size() + payload.size());
    append_u64(out, id.size());
    out.insert(out.end(), id.begin(), id.end());
    append_u64(out, fnv1a(payload.data(), payload.size()));
    out.insert(out.end(), payload.begin(), payload.end());
    return out;
}

std::vector<uint8_t> unframe(kind k, const std::vector<uint8_t> &blob,
        const std::vector<uint8_t> &id) {
    auto truncated = [&] {
        throw_invalid_argument(
                "cache_blob is truncated (" + std::to_string(blob.size()) + " bytes)");
    };
    size_t pos = 0;
    auto read_u64 = [&](uint64_t &value) {
        if (blob.size() - pos < sizeof(value)) truncated();
        std::memcpy(&value, blob.data() + pos, sizeof(value));
        pos += sizeof(value);
    };
    if (blob.size() < magic_size || std::memcmp(blob.data(), magic_of(k), magic_size) != 0)
        throw_invalid_argument(std::string("cache_blob is not ") + what(k)
                + " cache blob (one comes from " + source(k) + ")");
    pos = magic_size;
    uint64_t id_size = 0, checksum = 0;
    read_u64(id_size);
    if (id_size > blob.size() - pos) truncated();
    bool same_id
            = id_size == id.size() && std::memcmp(blob.data() + pos, id.data(), id.size()) == 0;
    pos += id_size;
    read_u64(checksum);
    if (!same_id) throw_invalid_argument(std::string("cache_blob belongs to ") + owner(k));
    if (fnv1a(blob.data() + pos, blob.size() - pos) != checksum)
        throw_invalid_argument("cache_blob is damaged (its checksum does not match)");
    return std::vector<uint8_t>(blob.begin() + static_cast<std::ptrdiff_t>(pos), blob.end());
}

} // namespace cache_blobs
} // namespace dnnl_ocl_interop
