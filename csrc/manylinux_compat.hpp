// Included first in every translation unit of _native on x86-64 Linux (CMakeLists.txt: -include), with
// manylinux_compat.cpp and the link options beside it, so that the extension loads wherever the `openvino` wheel
// does. openvino 2026.4.1 is manylinux_2_28 (glibc 2.28 and GCC 8's libstdc++; auditwheel's policy allows GLIBC <=
// 2.28, GLIBCXX <= 3.4.24, CXXABI <= 1.3.11), while a newer build machine's headers make the compiler reference
// newer symbol versions. Each is pinned to a version glibc 2.28 has or defined locally; the C++ ABI stays the
// machine's libstdc++, the one libopenvino.so's C++ API uses (a libc++ toolchain such as zig's would not match it).
// tests/test_native_loader.py checks the built extension against the policy.
//
// This header does what the preprocessor can; the rest is in manylinux_compat.cpp (the link-time optimizer drops
// top-level .symver statements of the other units, so the glibc functions are pinned through the linker's --wrap).
#pragma once

#if defined(__x86_64__) && defined(__linux__) && __has_include(<features.h>)
#include <features.h>
#if defined(__GLIBC__)

// libstdc++ >= 11 reads glibc 2.32's __libc_single_threaded (when <sys/single_threaded.h> exists) to skip atomic
// reference counting in a single-threaded process. Renamed to a local flag that always says "maybe threaded"
// (manylinux_compat.cpp): shared_ptr counts stay atomic, as libstdc++ does without that header.
#define __libc_single_threaded ov_autoplace_libc_single_threaded

#endif  // __GLIBC__
#endif  // x86-64 Linux
