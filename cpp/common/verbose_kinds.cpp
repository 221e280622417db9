#include "common/verbose_kinds.hpp"

#include <cctype>
#include <cstdlib>
#include <cstring>

namespace dnnl_ocl_interop {
namespace verbose {

namespace {
constexpr uint32_t level1 = error | exec_profile | warn;
constexpr uint32_t level2 = level1 | create_profile;
} // namespace

uint32_t level_kinds(int level) {
    return level == 0 ? 0 : (level == 1 ? level1 : level2) | debuginfo;
}

int level_for(uint32_t kinds) {
    if (kinds & create_profile) return 2;
    if (kinds & (exec_profile | warn | debuginfo)) return 1;
    return 0;
}

uint32_t token_kinds(const std::string &t) {
    if (t == "1") return level1;
    if (t == "2") return level2;
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

} // namespace verbose
} // namespace dnnl_ocl_interop
