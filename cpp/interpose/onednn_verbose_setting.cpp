#include "interpose/onednn_verbose_setting.hpp"

#include <atomic>
#include <cstring>
#include <mutex>

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oneapi/dnnl/dnnl.h"

namespace dnnl_ocl_interop {
namespace interpose {
namespace {

constexpr release verified[] = {{3, 13, 1}};

// dnnl::impl::verbose: setting_t<uint32_t> (src/common/utils.hpp).
struct onednn_setting {
    uint32_t kinds;
    bool initialized;
};
static_assert(sizeof(onednn_setting) == 8, "setting_t<uint32_t> is 8 bytes in oneDNN 3.13");

onednn_setting *setting = nullptr;
std::mutex writes; // the binding's own writers, one at a time

// Whether [begin, begin + size) lies in a writable segment of the object
// loaded at `base` (the lookup's last check before the address is used).
bool in_writable_segment(uintptr_t base, uintptr_t begin, size_t size) {
    struct query {
        uintptr_t base, begin;
        size_t size;
        bool inside;
    } q {base, begin, size, false};
    dl_iterate_phdr([](struct dl_phdr_info *info, size_t, void *data) {
        auto *q = static_cast<query *>(data);
        if (info->dlpi_addr != q->base) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr) &ph = info->dlpi_phdr[i];
            uintptr_t start = info->dlpi_addr + ph.p_vaddr;
            if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W) && q->begin >= start
                    && q->begin + q->size <= start + ph.p_memsz)
                q->inside = true;
        }
        return 1;
    }, &q);
    return q.inside;
}

// dnnl::impl::verbose in the symbol table of the file libdnnl was loaded
// from; "" and `setting` set when found, else why not.
std::string look_up_setting() {
    Dl_info info {};
    struct link_map *map = nullptr;
    if (!dladdr1(reinterpret_cast<void *>(&dnnl_version), &info, reinterpret_cast<void **>(&map),
                RTLD_DL_LINKMAP)
            || !map || !map->l_name || !*map->l_name)
        return "libdnnl's file was not found";
    int fd = open(map->l_name, O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(ElfW(Ehdr)))) {
        if (fd >= 0) close(fd);
        return "libdnnl's file could not be read";
    }
    size_t bytes = static_cast<size_t>(st.st_size);
    void *file = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (file == MAP_FAILED) return "libdnnl's file could not be mapped";
    const char *image = static_cast<const char *>(file);
    const auto *header = reinterpret_cast<const ElfW(Ehdr) *>(image);
    bool sane = std::memcmp(header->e_ident, ELFMAG, SELFMAG) == 0
            && header->e_shentsize == sizeof(ElfW(Shdr)) && header->e_shoff < bytes
            && header->e_shnum <= (bytes - header->e_shoff) / sizeof(ElfW(Shdr));
    const auto *sections
            = reinterpret_cast<const ElfW(Shdr) *>(image + (sane ? header->e_shoff : 0));
    for (unsigned i = 0; sane && i < header->e_shnum && !setting; ++i) {
        const ElfW(Shdr) &symtab = sections[i];
        if (symtab.sh_type != SHT_SYMTAB || symtab.sh_link >= header->e_shnum) continue;
        const ElfW(Shdr) &strtab = sections[symtab.sh_link];
        if (symtab.sh_offset > bytes || symtab.sh_size > bytes - symtab.sh_offset
                || strtab.sh_offset > bytes || strtab.sh_size > bytes - strtab.sh_offset)
            continue;
        const auto *symbols = reinterpret_cast<const ElfW(Sym) *>(image + symtab.sh_offset);
        const char *names = image + strtab.sh_offset;
        static const char wanted[] = "_ZN4dnnl4implL7verboseE"; // dnnl::impl::verbose (static)
        for (size_t k = 0; k < symtab.sh_size / sizeof(ElfW(Sym)); ++k) {
            const ElfW(Sym) &sym = symbols[k];
            if (ELF64_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_size != sizeof(onednn_setting)
                    || sym.st_name + sizeof(wanted) > strtab.sh_size
                    || std::memcmp(names + sym.st_name, wanted, sizeof(wanted)) != 0)
                continue;
            uintptr_t address = map->l_addr + sym.st_value;
            if (in_writable_segment(map->l_addr, address, sizeof(onednn_setting)))
                setting = reinterpret_cast<onednn_setting *>(address);
            break;
        }
    }
    munmap(file, bytes);
    return setting ? ""
                   : "libdnnl's symbol table has no dnnl::impl::verbose of the expected size (a "
                     "stripped library?)";
}

} // namespace

std::string refusal_for(const release &r) {
    for (const release &v : verified)
        if (v.major == r.major && v.minor == r.minor && v.patch == r.patch) return "";
    std::string known;
    for (const release &v : verified)
        known += (known.empty() ? "" : ", ") + std::to_string(v.major) + "."
                + std::to_string(v.minor) + "." + std::to_string(v.patch);
    return "the interposer was verified against oneDNN " + known + " only, and this libdnnl is "
            + std::to_string(r.major) + "." + std::to_string(r.minor) + "."
            + std::to_string(r.patch) + ": it does not act";
}

std::string enable() {
    static std::once_flag once;
    static std::string why;
    std::call_once(once, [] {
        const dnnl_version_t *v = dnnl_version();
        why = refusal_for({v->major, v->minor, v->patch});
        if (why.empty()) why = look_up_setting();
    });
    return why;
}

bool active() {
    return setting != nullptr;
}

bool read(uint32_t &kinds, bool &initialized) {
    if (!setting) return false;
    kinds = __atomic_load_n(&setting->kinds, __ATOMIC_RELAXED);
    initialized = __atomic_load_n(&setting->initialized, __ATOMIC_RELAXED);
    return true;
}

bool exchange(uint32_t expected, uint32_t kinds) {
    if (!setting) return false;
    std::lock_guard<std::mutex> lock(writes);
    if (!__atomic_load_n(&setting->initialized, __ATOMIC_RELAXED)) return false;
    return __atomic_compare_exchange_n(&setting->kinds, &expected, kinds, false, __ATOMIC_RELAXED,
            __ATOMIC_RELAXED);
}

} // namespace interpose
} // namespace dnnl_ocl_interop
