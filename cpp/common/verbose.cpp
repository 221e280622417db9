#include "common/verbose.hpp"

#include "common/py_values.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace py = pybind11;

namespace dnnl_ocl_interop {
namespace verbose {
namespace {

// ------------------------------------------------------------------ state

// The real functions libdnnl's patched GOT entries pointed to.
using vprintf_chk_fn = int (*)(int, const char *, va_list);
using vprintf_fn = int (*)(const char *, va_list);
using getenv_fn = char *(*)(const char *);
using vsnprintf_chk_fn = int (*)(char *, size_t, int, size_t, const char *, va_list);
vprintf_chk_fn real_vprintf_chk = nullptr;
vprintf_fn real_vprintf = nullptr;
getenv_fn real_getenv = nullptr;
vsnprintf_chk_fn real_vsnprintf_chk = nullptr;

// Kinds printed because the user asked for them (environment, set_verbose),
// and because a dnnl.verbose region asks for them.
std::atomic<uint32_t> user_kinds {error};
std::atomic<uint32_t> region_kinds {0};
// oneDNN's own flags, as far as the binding knows them (it sets them through
// getenv at oneDNN's first read, and through dnnl_set_verbose).
std::atomic<uint32_t> onednn_kinds {error};

// The ONEDNN_VERBOSE value given to oneDNN (set once, before the hook).
std::string answer;
std::atomic<bool> hooked {false};         // the printf filter is in place
std::atomic<bool> answered {false};       // oneDNN read its setting through the hook
const char *not_installed = "";           // why the hook is not in place (static text)

// Regions, set_verbose, what oneDNN's flags lost and its execute-time
// check switched off: under `state_mutex`.
std::mutex state_mutex;
uint32_t region_counts[32] = {};          // active dnnl.verbose regions per kind bit
uint32_t collecting_counts[32] = {};      // those of them that collect (print nothing)
int raised_level = 0;                     // the level regions set through dnnl_set_verbose
std::string lost;                         // why check/dispatch lines are gone ("" if not)
bool execute_checks_off = false;          // oneDNN's setting is onednn_kinds without exec_check
std::atomic<uint64_t> execute_checks_switched_off {0}; // times (for the tests)

// The header oneDNN prints once before its first line, when nobody wanted it
// shown then: printed before the first line that is shown later.
std::mutex header_mutex;
std::vector<std::string> stashed_header;
bool header_shown = false;

thread_local capture *innermost = nullptr;

// Set when the snprintf hook refused to format a line nobody wants (oneDNN
// then prints its "error encountered while formatting" line instead, which
// the filter drops); lines left unformatted so, for the tests.
thread_local bool line_unformatted = false;
std::atomic<uint64_t> lines_unformatted {0};

constexpr uint32_t costly = exec_profile | create_profile | warn | debuginfo;
constexpr size_t max_lines = 512, max_line_bytes = 4096, max_header_lines = 64;

// ------------------------------------------------------ the user's setting

// The kinds of oneDNN's levels 1 and 2 (verbose_t::level1, level2).
constexpr uint32_t level1_kinds = error | exec_profile | warn;
constexpr uint32_t level2_kinds = level1_kinds | create_profile;

// The kinds one token of a ONEDNN_VERBOSE value turns on, as oneDNN's
// get_verbose reads it (update_kind, src/common/verbose.cpp); 0 for tokens it
// ignores ("0" and "none" clear, see kinds_of).
uint32_t token_kinds(const std::string &t) {
    if (t == "1") return level1_kinds;
    if (t == "2") return level2_kinds;
    if (t == "all" || t == "-1") return 0xffffffffu & ~(header | other);
    if (t == "error") return error;
    if (t == "check") return create_check | exec_check;
    if (t == "dispatch") return create_dispatch;
    if (t == "profile") return create_profile | exec_profile;
    if (t == "profile_create") return create_profile;
    if (t == "profile_exec") return exec_profile;
    if (t == "profile_externals") return profile_externals;
    if (t == "warn") return warn;
    if (t.rfind("debuginfo=", 0) == 0 && std::atoi(t.c_str() + 10) > 0) return debuginfo;
    return 0;
}

// The kinds oneDNN derives from a whole ONEDNN_VERBOSE value: comma-separated
// tokens, "0"/"none" clearing what came before; the error kind on unless
// cleared.
uint32_t kinds_of(const std::string &value) {
    uint32_t k = error;
    size_t start = 0;
    while (start <= value.size()) {
        size_t end = value.find(',', start);
        if (end == std::string::npos) end = value.size();
        std::string t = value.substr(start, end - start);
        k = (t == "0" || t == "none") ? 0 : k | token_kinds(t);
        start = end + 1;
    }
    return k;
}

uint32_t level_kinds(int level) {
    // dnnl_set_verbose also sets debuginfo to the level.
    return level == 0 ? 0 : (level == 1 ? level1_kinds : level2_kinds) | debuginfo;
}

// ------------------------------------------------------------ the filter

// A line's kind, from its fields: onednn_verbose,v1,[timestamp,]api,type,...
uint32_t kind_of(const char *line) {
    const char *p = line + std::strlen("onednn_verbose,");
    p = std::strchr(p, ','); // past the version
    if (!p) return other;
    ++p;
    if (std::isdigit(static_cast<unsigned char>(*p))) { // a timestamp
        const char *q = std::strchr(p, ',');
        if (!q) return other;
        p = q + 1;
    }
    // The header: info lines and the templates.
    if (std::strncmp(p, "info,", 5) == 0) return header;
    const char *type = std::strchr(p, ',');
    if (!type) return other;
    ++type;
    auto is = [&](const char *t) {
        size_t n = std::strlen(t);
        return std::strncmp(type, t, n) == 0 && (type[n] == ',' || type[n] == ':');
    };
    if (std::strncmp(type, "info,template:", 14) == 0
            || std::strncmp(type, "info,filter format", 18) == 0
            || std::strncmp(type, "error,filter format", 19) == 0)
        return header;
    if (is("error")) return error;
    if (is("warning")) return warn;
    if (std::strncmp(type, "create:check,", 13) == 0) return create_check;
    if (std::strncmp(type, "create:dispatch,", 16) == 0) return create_dispatch;
    if (std::strncmp(type, "exec:check,", 11) == 0) return exec_check;
    const char *external = std::strstr(type, ":external,");
    if (external && external < std::strchr(type, ',')) return profile_externals;
    if (std::strncmp(type, "create:debug", 12) == 0 || std::strncmp(type, "exec:debug", 10) == 0)
        return debuginfo;
    if (is("create") || is("create_nested") || is("compile")) return create_profile;
    if (is("exec")) return exec_profile;
    return other;
}

void print(const char *line) { std::fputs(line, stdout); }

void show_stashed_header() {
    std::lock_guard<std::mutex> lock(header_mutex);
    if (header_shown) return;
    header_shown = true;
    for (const auto &line : stashed_header)
        print(line.c_str());
    stashed_header.clear();
}

} // namespace

// Whether a line of kind `k` printed now by this thread would be kept or shown
// (on_line's test, before the line exists).
bool wanted_on_this_thread(uint32_t k) {
    if ((user_kinds.load(std::memory_order_relaxed) | region_kinds.load(std::memory_order_relaxed)) & k)
        return true;
    for (capture *c = innermost; c; c = c->outer_)
        if (c->takes(k)) return true;
    return false;
}

// One line libdnnl printed (through the filter).
void on_line(const char *line, uint32_t k) {
    // Every scope of this thread that takes the kind keeps the line (a
    // creation's inside a collecting dnnl.verbose region: both).
    bool kept_silently = false, swallowed = false;
    for (capture *c = innermost; c; c = c->outer_)
        if (c->takes(k)) {
            c->add(line);
            kept_silently |= c->silent_;
            swallowed |= c->swallow_;
        }
    if (swallowed && k != header) return;
    if (k == header) {
        // oneDNN prints it once, before the first line of a kind it has on,
        // which may be one nobody sees (a dispatch line): it is shown before
        // the first line that is.
        std::lock_guard<std::mutex> lock(header_mutex);
        if (!header_shown && stashed_header.size() < max_header_lines)
            stashed_header.emplace_back(line);
        return;
    }
    if (k == other) { // printed by oneDNN whatever its flags, as it prints them
        print(line);
        return;
    }
    uint32_t wanted = user_kinds.load(std::memory_order_relaxed);
    uint32_t in_region = region_kinds.load(std::memory_order_relaxed);
    if (!((wanted & k) || (!kept_silently && (in_region & k)))) return;
    show_stashed_header();
    print(line);
}

namespace {

// The kind of the line oneDNN formats with `fmt`, when the format tells it
// before formatting, else 0. Only execute-time check lines: the binding
// turns oneDNN's "check" kind on for creations' reasons, and oneDNN's token
// turns on its execute-time twin with it, whose lines (a graph partition's
// "unused primitive execution argument", three per attention execute) cost
// ~1 us each to format, on every execute, for nobody. oneDNN's verbose
// formats (VFORMAT, src/common/verbose.hpp) are "%s<api>,<type>%s,<msg>",
// their first two arguments the time stamp and the subtype (":check").
uint32_t kind_of_format(const char *fmt, va_list args) {
    if (!fmt || fmt[0] != '%' || fmt[1] != 's') return 0;
    const char *api_end = fmt + 2 + std::strcspn(fmt + 2, ",%");
    if (*api_end != ',' || std::strncmp(api_end + 1, "exec%s,", 7) != 0) return 0;
    va_list copy;
    va_copy(copy, args);
    (void)va_arg(copy, const char *); // the time stamp
    const char *subtype = va_arg(copy, const char *);
    va_end(copy);
    return subtype && std::strcmp(subtype, ":check") == 0 ? exec_check : 0;
}

// What oneDNN prints when its formatting failed (format_verbose_string).
bool is_formatting_failure(const char *line) {
    return std::strstr(line, ",info,error encountered while formatting verbose message") != nullptr;
}

bool is_verbose_line(const char *fmt, const char *&line, va_list args) {
    if (!fmt || std::strcmp(fmt, "%s") != 0) return false;
    va_list copy;
    va_copy(copy, args);
    line = va_arg(copy, const char *);
    va_end(copy);
    return line && std::strncmp(line, "onednn_verbose,", 15) == 0;
}

// A printf libdnnl made: a verbose line goes through the filter; anything
// else is printed as it would have been (`flag` >= 0: __printf_chk's).
int filtered(int flag, const char *fmt, va_list args) {
    const char *line = nullptr;
    if (is_verbose_line(fmt, line, args)) {
        if (line_unformatted && is_formatting_failure(line)) {
            line_unformatted = false;
            return static_cast<int>(std::strlen(line));
        }
        on_line(line, kind_of(line));
        return static_cast<int>(std::strlen(line));
    }
    return flag >= 0 && real_vprintf_chk ? real_vprintf_chk(flag, fmt, args)
                                         : real_vprintf(fmt, args);
}

// What libdnnl calls instead of __printf_chk, printf and getenv.
int hooked_printf_chk(int flag, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    int result = filtered(flag, fmt, args);
    va_end(args);
    return result;
}

int hooked_printf(const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    int result = filtered(-1, fmt, args);
    va_end(args);
    return result;
}

// ------------------------------- oneDNN's execute-time check, switched off

// oneDNN 3.13 has no ONEDNN_VERBOSE token for creation-time checks alone:
// "check" turns on its execute-time check too, and the binding needs the
// creation-time lines for the reasons of refused creations. Unformatted
// (the snprintf hook below), an execute-time line still costs oneDNN's
// printing path (~0.5 us each, three per attention partition execute). So
// once such a line comes that nobody wants, the binding switches that one
// kind off in oneDNN's own setting, the object dnnl::impl::verbose (a
// setting_t<uint32_t>: the kinds, then whether they were read), found in
// the symbol table of the file libdnnl was loaded from, and only while it
// holds exactly the kinds the binding gave oneDNN, read. A region that
// asks for "check" switches it back on (count_region); dnnl_set_verbose
// replaces the whole setting anyway. A stripped libdnnl has no symbol
// table: then nothing is switched (the hook alone).
struct onednn_verbose_setting {
    uint32_t kinds;
    bool initialized;
};

std::once_flag setting_lookup;
onednn_verbose_setting *setting = nullptr;
std::atomic<const char *> setting_missing {"not looked up yet"}; // why `setting` is null (static text)

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

void look_up_setting() {
    Dl_info info {};
    struct link_map *map = nullptr;
    if (!dladdr1(reinterpret_cast<void *>(&dnnl_version), &info, reinterpret_cast<void **>(&map),
                RTLD_DL_LINKMAP)
            || !map || !map->l_name || !*map->l_name) {
        setting_missing = "libdnnl's file was not found";
        return;
    }
    int fd = open(map->l_name, O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(ElfW(Ehdr)))) {
        if (fd >= 0) close(fd);
        setting_missing = "libdnnl's file could not be read";
        return;
    }
    size_t bytes = static_cast<size_t>(st.st_size);
    void *file = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (file == MAP_FAILED) {
        setting_missing = "libdnnl's file could not be mapped";
        return;
    }
    setting_missing = "libdnnl's symbol table has no dnnl::impl::verbose of the expected size "
                      "(a stripped library, or another oneDNN)";
    const char *image = static_cast<const char *>(file);
    const auto *header = reinterpret_cast<const ElfW(Ehdr) *>(image);
    bool sane = std::memcmp(header->e_ident, ELFMAG, SELFMAG) == 0
            && header->e_shentsize == sizeof(ElfW(Shdr)) && header->e_shoff < bytes
            && header->e_shnum <= (bytes - header->e_shoff) / sizeof(ElfW(Shdr));
    const auto *sections = reinterpret_cast<const ElfW(Shdr) *>(image + (sane ? header->e_shoff : 0));
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
            if (ELF64_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_size != sizeof(onednn_verbose_setting)
                    || sym.st_name + sizeof(wanted) > strtab.sh_size
                    || std::memcmp(names + sym.st_name, wanted, sizeof(wanted)) != 0)
                continue;
            uintptr_t address = map->l_addr + sym.st_value;
            if (in_writable_segment(map->l_addr, address, sizeof(onednn_verbose_setting))) {
                setting = reinterpret_cast<onednn_verbose_setting *>(address);
                setting_missing = "";
            }
            break;
        }
    }
    munmap(file, bytes);
}

uint32_t needed_kinds(); // under state_mutex (below, with the regions)

// oneDNN's setting holds exactly `kinds`, read (under state_mutex). Its
// debuginfo byte is oneDNN's level there, the whole byte in the binding's
// kinds: not compared (the binding never changes it).
bool setting_holds(uint32_t kinds) {
    return setting && __atomic_load_n(&setting->initialized, __ATOMIC_RELAXED)
            && (__atomic_load_n(&setting->kinds, __ATOMIC_RELAXED) & ~debuginfo)
            == (kinds & ~debuginfo);
}

// Sets oneDNN's kinds to `kinds`, keeping its debuginfo byte (after
// setting_holds, under state_mutex).
void set_setting(uint32_t kinds) {
    uint32_t level = __atomic_load_n(&setting->kinds, __ATOMIC_RELAXED) & debuginfo;
    __atomic_store_n(&setting->kinds, (kinds & ~debuginfo) | level, __ATOMIC_RELAXED);
}

// An execute-time check line nobody wants came (from the snprintf hook, on
// any thread): switch that kind off if nobody wants it still.
void switch_execute_checks_off() {
    std::call_once(setting_lookup, look_up_setting);
    std::unique_lock<std::mutex> lock(state_mutex, std::try_to_lock);
    if (!lock.owns_lock() || execute_checks_off) return; // busy: the next line tries again
    uint32_t kinds = onednn_kinds.load();
    if (!(kinds & exec_check) || ((user_kinds.load() | needed_kinds()) & exec_check)
            || !setting_holds(kinds))
        return;
    set_setting(kinds & ~static_cast<uint32_t>(exec_check));
    execute_checks_off = true;
    execute_checks_switched_off.fetch_add(1, std::memory_order_relaxed);
}

// libdnnl's snprintf: a verbose line nobody wants is not formatted (-1,
// which oneDNN's format_verbose_string takes as a failure: see filtered()).
int hooked_snprintf_chk(char *s, size_t maxlen, int flag, size_t slen, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    int result;
    uint32_t k = kind_of_format(fmt, args);
    if (k && !wanted_on_this_thread(k)) {
        if (s && maxlen) *s = '\0';
        line_unformatted = true;
        lines_unformatted.fetch_add(1, std::memory_order_relaxed);
        switch_execute_checks_off();
        result = -1;
    } else {
        result = real_vsnprintf_chk(s, maxlen, flag, slen, fmt, args);
    }
    va_end(args);
    return result;
}

char *hooked_getenv(const char *name) {
    if (name && std::strcmp(name, "ONEDNN_VERBOSE") == 0 && !answer.empty()) {
        answered.store(true);
        return const_cast<char *>(answer.c_str());
    }
    return real_getenv(name);
}

// ------------------------------------------------- patching libdnnl's GOT

#if defined(__x86_64__)
constexpr unsigned reloc_jump_slot = R_X86_64_JUMP_SLOT, reloc_glob_dat = R_X86_64_GLOB_DAT;
#elif defined(__aarch64__)
constexpr unsigned reloc_jump_slot = R_AARCH64_JUMP_SLOT, reloc_glob_dat = R_AARCH64_GLOB_DAT;
#else
#define DNNL_OCL_INTEROP_NO_GOT_PATCHING
#endif

#ifndef DNNL_OCL_INTEROP_NO_GOT_PATCHING
struct relro_range {
    uintptr_t begin = 0, end = 0;
};

int find_relro(struct dl_phdr_info *info, size_t, void *data) {
    auto *found = static_cast<std::pair<uintptr_t, relro_range> *>(data);
    if (info->dlpi_addr != found->first) return 0;
    uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    for (int i = 0; i < info->dlpi_phnum; ++i)
        if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
            // As the dynamic linker protects it: whole pages only.
            uintptr_t begin = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            found->second.begin = begin & ~(page - 1);
            found->second.end = (begin + info->dlpi_phdr[i].p_memsz) & ~(page - 1);
        }
    return 1;
}

bool write_slot(void **slot, void *value, const relro_range &relro) {
    uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    uintptr_t start = reinterpret_cast<uintptr_t>(slot) & ~(page - 1);
    if (mprotect(reinterpret_cast<void *>(start), page, PROT_READ | PROT_WRITE) != 0) return false;
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    if (start >= relro.begin && start < relro.end)
        mprotect(reinterpret_cast<void *>(start), page, PROT_READ);
    return true;
}

// Points libdnnl's GOT entries of `names` at `replacements`; how many were
// patched.
int patch_libdnnl(const char *const *names, void *const *replacements, int n) {
    Dl_info info {};
    struct link_map *map = nullptr;
    if (!dladdr1(reinterpret_cast<void *>(&dnnl_version), &info,
                reinterpret_cast<void **>(&map), RTLD_DL_LINKMAP)
            || !map)
        return 0;
    uintptr_t base = map->l_addr;
    auto address = [base](ElfW(Addr) a) { return a < base ? a + base : a; };
    const ElfW(Sym) *symbols = nullptr;
    const char *strings = nullptr;
    const ElfW(Rela) *plt = nullptr, *rela = nullptr;
    size_t plt_bytes = 0, rela_bytes = 0;
    bool plt_is_rela = true;
    for (const ElfW(Dyn) *d = map->l_ld; d->d_tag != DT_NULL; ++d) {
        switch (d->d_tag) {
            case DT_SYMTAB: symbols = reinterpret_cast<const ElfW(Sym) *>(address(d->d_un.d_ptr)); break;
            case DT_STRTAB: strings = reinterpret_cast<const char *>(address(d->d_un.d_ptr)); break;
            case DT_JMPREL: plt = reinterpret_cast<const ElfW(Rela) *>(address(d->d_un.d_ptr)); break;
            case DT_PLTRELSZ: plt_bytes = d->d_un.d_val; break;
            case DT_PLTREL: plt_is_rela = d->d_un.d_val == DT_RELA; break;
            case DT_RELA: rela = reinterpret_cast<const ElfW(Rela) *>(address(d->d_un.d_ptr)); break;
            case DT_RELASZ: rela_bytes = d->d_un.d_val; break;
            default: break;
        }
    }
    if (!symbols || !strings || !plt_is_rela) return 0;
    std::pair<uintptr_t, relro_range> relro {base, {}};
    dl_iterate_phdr(find_relro, &relro);
    int patched = 0;
    for (auto table : {std::make_pair(plt, plt_bytes), std::make_pair(rela, rela_bytes)}) {
        if (!table.first) continue;
        for (size_t i = 0; i < table.second / sizeof(ElfW(Rela)); ++i) {
            const ElfW(Rela) &r = table.first[i];
            unsigned type = ELF64_R_TYPE(r.r_info);
            if (type != reloc_jump_slot && type != reloc_glob_dat) continue;
            const char *name = strings + symbols[ELF64_R_SYM(r.r_info)].st_name;
            for (int j = 0; j < n; ++j)
                if (std::strcmp(name, names[j]) == 0
                        && write_slot(reinterpret_cast<void **>(base + r.r_offset), replacements[j],
                                relro.second))
                    ++patched;
        }
    }
    return patched;
}
#endif

} // namespace

// ------------------------------------------------------------------ install

void install() {
    static std::once_flag once;
    std::call_once(once, [] {
        const char *opt_out = std::getenv("DNNL_OCL_INTEROP_VERBOSE_CAPTURE");
        std::string user;
        for (const char *name : {"ONEDNN_VERBOSE", "DNNL_VERBOSE"}) {
            const char *value = std::getenv(name);
            if (value && *value) {
                user = value;
                break;
            }
        }
        std::transform(user.begin(), user.end(), user.begin(),
                [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        user_kinds = kinds_of(user);
        onednn_kinds = kinds_of(user);
        if (opt_out && std::string(opt_out) == "0") {
            not_installed = "DNNL_OCL_INTEROP_VERBOSE_CAPTURE=0 is set";
            return;
        }
#ifdef DNNL_OCL_INTEROP_NO_GOT_PATCHING
        not_installed = "the binding cannot filter oneDNN's output on this architecture";
        return;
#else
        std::string value = (user.empty() ? "" : user + ",") + "error,check,dispatch";
        // oneDNN reads at most 127 characters of ONEDNN_VERBOSE.
        if (value.size() >= 128) {
            not_installed = "ONEDNN_VERBOSE is too long to add oneDNN's check and dispatch kinds";
            return;
        }
        real_vprintf_chk = reinterpret_cast<vprintf_chk_fn>(dlsym(RTLD_DEFAULT, "__vprintf_chk"));
        real_vprintf = reinterpret_cast<vprintf_fn>(dlsym(RTLD_DEFAULT, "vprintf"));
        real_getenv = reinterpret_cast<getenv_fn>(dlsym(RTLD_DEFAULT, "getenv"));
        if (!real_vprintf || !real_getenv) {
            not_installed = "the C library's vprintf or getenv was not found";
            return;
        }
        answer = value;
        // printf first: oneDNN may only read its setting once its lines can
        // be filtered.
        const char *printers[] = {"__printf_chk", "printf"};
        void *printer_hooks[] = {reinterpret_cast<void *>(&hooked_printf_chk),
                reinterpret_cast<void *>(&hooked_printf)};
        if (patch_libdnnl(printers, printer_hooks, 2) == 0) {
            answer.clear();
            not_installed = "libdnnl's printf could not be routed through the binding";
            return;
        }
        hooked = true;
        const char *env[] = {"getenv"};
        void *env_hooks[] = {reinterpret_cast<void *>(&hooked_getenv)};
        if (patch_libdnnl(env, env_hooks, 1) == 0) {
            answer.clear();
            not_installed = "libdnnl's getenv could not be routed through the binding";
            return;
        }
        onednn_kinds = kinds_of(value);
        // Last, and only with the filter in place (it drops what oneDNN
        // prints for a line left unformatted); without it lines cost more.
        real_vsnprintf_chk = reinterpret_cast<vsnprintf_chk_fn>(dlsym(RTLD_DEFAULT, "__vsnprintf_chk"));
        if (real_vsnprintf_chk) {
            const char *formatters[] = {"__snprintf_chk"};
            void *formatter_hooks[] = {reinterpret_cast<void *>(&hooked_snprintf_chk)};
            patch_libdnnl(formatters, formatter_hooks, 1);
        }
#endif
    });
}

// ------------------------------------------------------------------ capture

capture::capture(uint32_t kinds, bool silent, bool swallow)
    : kinds_(kinds), silent_(silent || swallow), swallow_(swallow) {
    // Scopes given up on another thread (see abandon()) are freed here.
    for (capture **p = &innermost; *p;) {
        if ((*p)->abandoned_) {
            capture *gone = *p;
            *p = gone->outer_;
            gone->outer_ = nullptr;
            gone->abandoned_ = false;
            delete gone;
        } else {
            p = &(*p)->outer_;
        }
    }
    outer_ = innermost;
    innermost = this;
}

capture::~capture() {
    // Scopes end in the reverse order they began on a thread; unlink this one
    // wherever it is, all the same.
    for (capture **p = &innermost; *p; p = &(*p)->outer_)
        if (*p == this) {
            *p = outer_;
            break;
        }
}

void capture::abandon(capture *c) {
    // Another thread's list holds it: that thread frees it (above).
    c->abandoned_ = true;
}

void capture::add(const char *line) {
    if (lines_.size() >= max_lines) {
        ++dropped_;
        return;
    }
    std::string text(line, std::min(std::strlen(line), max_line_bytes));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    lines_.push_back(std::move(text));
}

std::vector<std::string> capture::take() {
    std::vector<std::string> result = std::move(lines_);
    lines_.clear();
    if (dropped_)
        result.push_back("(" + std::to_string(dropped_) + " more lines not kept)");
    dropped_ = 0;
    return result;
}

std::string reasons_unavailable() {
    if (!hooked || answer.empty())
        return std::string("oneDNN's reasons are not captured: ") + not_installed;
    {
        std::lock_guard<std::mutex> lock(state_mutex);
        if (!lost.empty()) return "oneDNN's reasons are not captured: " + lost;
    }
    // oneDNN reads its setting at its first verbose check (any refused call
    // makes one): not through the binding means before the import.
    if (!answered)
        return "oneDNN's reasons are not captured: oneDNN did not read its verbose setting "
               "through dnnl_ocl_interop (it reads it once per process: did something use "
               "libdnnl before the import?)";
    return "";
}

namespace {

std::vector<std::string> fields_of(const std::string &line) {
    std::vector<std::string> fields;
    size_t start = 0;
    while (true) {
        size_t end = line.find(',', start);
        fields.push_back(line.substr(start, end == std::string::npos ? std::string::npos : end - start));
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return fields;
}

// (who, message) of one line: the implementation a dispatch line rejects, or
// the primitive kind a check line is about, and what oneDNN says; an empty
// message for lines that say nothing of their own.
std::pair<std::string, std::string> reason_of(const std::string &line) {
    auto f = fields_of(line);
    size_t i = 2; // past onednn_verbose,v1
    if (i < f.size() && !f[i].empty() && std::isdigit(static_cast<unsigned char>(f[i][0]))) ++i;
    i += 2; // api, type
    if (i + 2 > f.size()) return {};
    std::string who = f[i];
    size_t message = i + 1;
    // Dispatch lines describe the implementation:
    // engine,kind,implementation,prop_kind,mds,attrs,aux,problem.
    if (f.size() > i + 9 && (f[i + 1] == "gpu" || f[i + 1] == "cpu")) {
        who = f[i + 3];
        message = i + 9;
    }
    // The last field is oneDNN's source position (file.cpp:line).
    size_t last = f.size();
    const std::string &position = f.back();
    size_t colon = position.rfind(':');
    if (colon != std::string::npos && colon + 1 < position.size()
            && position.find('.') < colon
            && std::all_of(position.begin() + colon + 1, position.end(),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        last = f.size() - 1;
    std::string text;
    for (size_t j = message; j < last; ++j) text += (j > message ? "," : "") + f[j];
    return {who, text};
}

} // namespace

std::string summary(const std::vector<std::string> &lines) {
    // What oneDNN says, each message once, with whom it says it of:
    // "unsupported datatype (ocl:xe, ocl:ref:any)".
    std::vector<std::pair<std::string, std::vector<std::string>>> said;
    for (const auto &line : lines) {
        auto reason = reason_of(line);
        if (reason.second.empty()) continue;
        auto found = std::find_if(said.begin(), said.end(),
                [&](const auto &s) { return s.first == reason.second; });
        if (found == said.end()) {
            said.push_back({reason.second, {}});
            found = said.end() - 1;
        }
        if (std::find(found->second.begin(), found->second.end(), reason.first)
                == found->second.end())
            found->second.push_back(reason.first);
    }
    std::string text;
    for (size_t i = 0; i < said.size() && i < 3; ++i) {
        text += (i ? "; " : "") + said[i].first + " (";
        for (size_t j = 0; j < said[i].second.size(); ++j)
            text += (j ? ", " : "") + said[i].second[j];
        text += ")";
    }
    if (said.size() > 3) text += "; ...";
    for (char &c : text) // a message is ASCII; oneDNN's own lines are
        if (static_cast<unsigned char>(c) >= 0x80 || c == '\n') c = '?';
    return text;
}

void rethrow_with_reasons(dnnl_status_t status, const char *what, capture &lines) {
    std::vector<std::string> reasons = lines.take();
    std::string message = what;
    if (!reasons.empty()) {
        // oneDNN's advice to rerun with ONEDNN_VERBOSE=all: what it would
        // print for this call follows.
        const std::string advice = " Run workload with environment variable ONEDNN_VERBOSE=all "
                                   "to get additional diagnostic information.";
        if (message.size() > advice.size()
                && message.compare(message.size() - advice.size(), advice.size(), advice) == 0)
            message.erase(message.size() - advice.size());
        if (!message.empty() && message.back() == '.') message.pop_back();
        std::string said = summary(reasons);
        message += "; oneDNN says: " + (said.empty() ? std::string("see") : said) + " ("
                + std::to_string(reasons.size()) + " line" + (reasons.size() == 1 ? "" : "s")
                + " in .reasons)";
    } else {
        std::string why = reasons_unavailable();
        if (!why.empty()) message += " (" + why + ")";
    }
    status_error e(status, message);
    e.reasons = std::move(reasons);
    throw e;
}

// -------------------------------------------------------- set_verbose, regions

namespace {

// The kinds active regions print: those of regions that do not collect.
void recompute_regions() { // under state_mutex
    uint32_t mask = 0;
    for (int b = 0; b < 32; ++b)
        if (region_counts[b] > collecting_counts[b]) mask |= 1u << b;
    region_kinds = mask;
}

// The kinds active regions need oneDNN to print (collecting ones included).
uint32_t needed_kinds() { // under state_mutex
    uint32_t mask = 0;
    for (int b = 0; b < 32; ++b)
        if (region_counts[b]) mask |= 1u << b;
    return mask;
}

void count_region(uint32_t kinds, bool collecting, int delta) { // under state_mutex
    for (int b = 0; b < 32; ++b)
        if (kinds & (1u << b)) {
            region_counts[b] += delta;
            if (collecting) collecting_counts[b] += delta;
        }
    recompute_regions();
    if (delta > 0 && (kinds & exec_check) && execute_checks_off) { // wanted again
        uint32_t all = onednn_kinds.load();
        if (setting_holds(all & ~static_cast<uint32_t>(exec_check)))
            set_setting(all);
        execute_checks_off = false;
    }
}

// dnnl_set_verbose(level): oneDNN's whole setting becomes the level's,
// without the check and dispatch kinds the binding gave it. Where the filter
// is in place and oneDNN's setting was found (see above), those kinds are
// given back in the setting itself, so that failed creations keep their
// reasons (the filter shows them only to whoever asks); otherwise they are
// gone for the rest of the process (`why` says so in later refusals).
void set_onednn_level(int level, const char *why) { // under state_mutex
    dnnl::error::wrap_c_api(dnnl_set_verbose(level), "could not set the verbose level");
    execute_checks_off = false; // the whole setting replaced
    uint32_t kinds = level_kinds(level);
    std::call_once(setting_lookup, look_up_setting);
    if (hooked && !answer.empty() && setting_holds(kinds)) {
        kinds |= reason_kinds;
        set_setting(kinds);
    }
    uint32_t before = onednn_kinds.exchange(kinds);
    if (lost.empty() && (before & (create_check | create_dispatch))
            && !(kinds & create_check))
        lost = why;
}

// The smallest level that prints what the user asked for among the kinds a
// level has (profile kinds, warnings).
int level_for(uint32_t kinds) {
    if (kinds & create_profile) return 2;
    if (kinds & (exec_profile | warn | debuginfo)) return 1;
    return 0;
}

// The region's C++ side: counts its kinds while entered; a `silent` one
// keeps the lines its thread prints.
struct region {
    region(uint32_t kinds, bool silent) : kinds(kinds), silent(silent) {}
    region(region &&other) noexcept
        : kinds(other.kinds), silent(other.silent), entered(other.entered),
          thread(other.thread), lines(other.lines), unavailable(other.unavailable) {
        other.entered = false;
        other.lines = nullptr;
    }
    region(const region &) = delete;
    ~region() {
        if (!entered) return;
        if (!lines || thread == std::this_thread::get_id()) {
            try {
                exit();
            } catch (...) {
            }
            return;
        }
        // Dropped on another thread without exit(): its counts go, and its
        // capture is freed by the thread whose list holds it.
        std::lock_guard<std::mutex> lock(state_mutex);
        count_region(kinds, silent, -1);
        if (lines) capture::abandon(lines);
    }
    uint32_t kinds;
    bool silent;
    bool entered = false;
    std::thread::id thread;
    capture *lines = nullptr; // a silent region's, on its thread's list while entered
    uint32_t unavailable = 0;

    void enter() {
        if (entered) throw_invalid_argument("the dnnl.verbose region is already active");
        std::lock_guard<std::mutex> lock(state_mutex);
        // Kinds oneDNN does not print now: the costly ones come with a level
        // (dnnl_set_verbose); check and dispatch cannot come back once gone.
        uint32_t missing = kinds & ~onednn_kinds.load() & ~(header | other);
        if (missing & costly) {
            int level = std::max(level_for(kinds | (onednn_kinds & costly)), raised_level);
            set_onednn_level(level, "a dnnl.verbose region switched oneDNN's verbose level "
                                    "(dnnl_set_verbose), which turns them off");
            raised_level = level;
        }
        unavailable = kinds & ~onednn_kinds.load() & ~(header | other);
        count_region(kinds, silent, +1);
        if (silent) lines = new capture(kinds, true);
        thread = std::this_thread::get_id();
        entered = true;
    }

    std::vector<std::string> exit() {
        if (!entered) throw_invalid_argument("the dnnl.verbose region is not active");
        if (lines && thread != std::this_thread::get_id())
            throw_invalid_argument("a collecting dnnl.verbose region must end on the thread that "
                                   "began it");
        std::lock_guard<std::mutex> lock(state_mutex);
        entered = false;
        count_region(kinds, silent, -1);
        std::vector<std::string> result;
        if (lines) {
            result = lines->take();
            delete lines;
            lines = nullptr;
        }
        // The level regions raised goes back to what the user's setting
        // needs once no region needs more.
        uint32_t still = needed_kinds() & costly;
        if (raised_level && level_for(still) < raised_level) {
            int level = std::max(level_for(still), level_for(user_kinds.load()));
            set_onednn_level(level, "a dnnl.verbose region switched oneDNN's verbose level");
            raised_level = level_for(still);
        }
        return result;
    }
};

} // namespace

void bind(py::module_ &m) {
    // dnnl.hpp returns this setter's status; here a failure raises, as
    // every other call does.
    m.def("set_verbose", [](int level) {
        if (level < 0 || level > 2) // as oneDNN answers
            throw status_error(dnnl_invalid_arguments,
                    "could not set the verbose level: level must be 0, 1 or 2, not "
                            + std::to_string(level));
        std::lock_guard<std::mutex> lock(state_mutex);
        user_kinds = level_kinds(level);
        // Level 0 is a filter while oneDNN prints nothing costly: its check
        // and dispatch lines stay on for the reasons of failed creations.
        // Active regions keep the level they need.
        bool costly_on = (onednn_kinds.load() & costly) != 0;
        int onednn_level = std::max(level, raised_level);
        // Without the filter (not installed), oneDNN's own level is the only way.
        if (level > 0 || !hooked || (costly_on && raised_level == 0))
            set_onednn_level(onednn_level,
                    ("dnnl.set_verbose(" + std::to_string(level)
                            + ") switched oneDNN's check and dispatch lines off")
                            .c_str());
    }, py::arg("level"),
            "oneDNN's verbose output on standard output (as ONEDNN_VERBOSE): 0 none, 1 "
            "primitive executions, 2 also primitive creation (with cache hits); other "
            "levels raise dnnl.error (invalid_arguments). Levels 1 and 2 call oneDNN's "
            "dnnl_set_verbose, which also switches off the check and dispatch lines the "
            "binding captures for the reasons of failed creations (dnnl.error.reasons); "
            "the binding switches them back on in oneDNN's setting where libdnnl's symbol "
            "table shows it (else they are gone for the rest of the process); level 0 only "
            "silences the output while oneDNN prints nothing costly (see docs/api.md).");
    py::class_<region>(m, "_verbose_region",
            "The compiled side of dnnl.verbose: oneDNN's verbose kinds (a mask of its "
            "flag bits) printed, or with silent=True kept, while entered.")
            .def(py::init<uint32_t, bool>(), py::arg("kinds"), py::arg("silent") = false)
            .def("enter", &region::enter,
                    "Start the region; the kinds oneDNN prints no lines of (and cannot be "
                    "made to) are in `unavailable` afterwards.")
            .def("exit", [](region &r) {
                py::list lines;
                for (const auto &line : r.exit()) lines.append(printed_text(line));
                return lines;
            },
                    "End the region; the lines kept (silent regions), else [].")
            .def_readonly("unavailable", &region::unavailable,
                    "Kinds of the region oneDNN does not print (their flags are off for "
                    "good: check and dispatch after a level was set, without libdnnl's symbol "
                    "table).");
    m.def("_verbose_kinds", [](const std::string &token) { return token_kinds(token); },
            py::arg("token"),
            "The oneDNN verbose kinds (a mask of its flag bits) one ONEDNN_VERBOSE token "
            "turns on ('dispatch', 'profile_exec', '2', ...); 0 for a token oneDNN "
            "ignores.");
    m.def("_verbose_state", [] {
        std::string unavailable = reasons_unavailable();
        std::lock_guard<std::mutex> lock(state_mutex);
        py::dict state;
        state["hooked"] = hooked.load();
        state["answered"] = answered.load();
        state["answer"] = answer;
        state["user_kinds"] = user_kinds.load();
        state["region_kinds"] = region_kinds.load();
        state["onednn_kinds"] = onednn_kinds.load();
        state["lines_unformatted"] = lines_unformatted.load();
        state["execute_checks_off"] = execute_checks_off;
        state["execute_checks_switched_off"] = execute_checks_switched_off.load();
        state["execute_checks_switch_unavailable"] = std::string(setting_missing.load());
        state["reasons_unavailable"] = unavailable;
        return state;
    }, "The verbose filter's state, for tests and diagnosis: whether libdnnl's output "
       "goes through the binding, what oneDNN was told, the kinds the user asked for, "
       "the kinds active regions ask for, oneDNN's flags as far as known, and its "
       "execute-time check: lines left unformatted, whether it is switched off in oneDNN's "
       "setting (and how often it was), why it cannot be (\"\" when it can).");
}

} // namespace verbose
} // namespace dnnl_ocl_interop
