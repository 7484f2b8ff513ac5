// The definitions behind manylinux_compat.hpp: what a build with newer glibc and libstdc++ headers references
// beyond manylinux_2_28. The version script (_native.map) keeps them local to _native, so they never interpose on
// the process's own glibc or libstdc++. Compiled without LTO (CMakeLists.txt): the .symver statements must stay in
// the object that uses them.
#include <pthread.h>

#include <cmath>
#include <exception>
#include <new>

#if defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__)

// Always 0, "the process may be multi-threaded": the renamed __libc_single_threaded (manylinux_compat.hpp).
extern "C" char ov_autoplace_libc_single_threaded;
char ov_autoplace_libc_single_threaded = 0;

// glibc 2.29 added log and pow without the SVID error handling (the same results; only errno on a domain error can
// differ), glibc 2.34 moved pthread_once from libpthread into libc under a new version (std::call_once reaches it);
// the GLIBC_2.2.5 entry points are still exported by every later glibc. The linker sends the other units' calls
// here (-Wl,--wrap=log,...), and these call the 2.2.5 versions.
extern "C" {
double ov_autoplace_log_2_2_5(double) noexcept;
double ov_autoplace_pow_2_2_5(double, double) noexcept;
int ov_autoplace_pthread_once_2_2_5(pthread_once_t*, void (*)()) noexcept;
__asm__(".symver ov_autoplace_log_2_2_5,log@GLIBC_2.2.5");
__asm__(".symver ov_autoplace_pow_2_2_5,pow@GLIBC_2.2.5");
__asm__(".symver ov_autoplace_pthread_once_2_2_5,pthread_once@GLIBC_2.2.5");

double __wrap_log(double x) noexcept { return ov_autoplace_log_2_2_5(x); }
double __wrap_pow(double x, double y) noexcept { return ov_autoplace_pow_2_2_5(x, y); }
int __wrap_pthread_once(pthread_once_t* once, void (*init)()) noexcept {
    return ov_autoplace_pthread_once_2_2_5(once, init);
}
}

#if defined(_GLIBCXX_RELEASE) && _GLIBCXX_RELEASE >= 11

// GLIBCXX_3.4.29: thrown by std::allocator<T>::allocate when n * sizeof(T) overflows.
namespace std {
void __throw_bad_array_new_length() { throw bad_array_new_length(); }
}  // namespace std

// CXXABI_1.3.13: std::exception_ptr's copy and destruction became inline, calling these two. Both are done here with
// functions every libstdc++ exports whose names the other units never define (they do define the inline copy
// constructor and destructor, and a .symver reference to those names would bind to that local copy, not libstdc++'s):
// the private constructor from the exception object (CXXABI_1.3.11), which takes a reference, and the copy
// assignment exported since CXXABI_1.3.3 (not inline in GCC < 12, unused by the other units), which drops one.
extern "C" void* ov_autoplace_exception_ptr_assign(void* self, const void* other) noexcept;
__asm__(".symver ov_autoplace_exception_ptr_assign,_ZNSt15__exception_ptr13exception_ptraSERKS0_@CXXABI_1.3.3");

namespace std::__exception_ptr {
// One more reference: a pointer to the same exception, constructed where it is never destroyed.
void exception_ptr::_M_addref() noexcept {
    alignas(exception_ptr) unsigned char holder[sizeof(exception_ptr)];
    ::new (static_cast<void*>(holder)) exception_ptr(_M_exception_object);
}
// One reference fewer (the exception freed at zero): libstdc++'s own assignment of a null pointer to this one.
void exception_ptr::_M_release() noexcept {
    const exception_ptr null;
    ov_autoplace_exception_ptr_assign(this, &null);
}
}  // namespace std::__exception_ptr

#endif  // _GLIBCXX_RELEASE >= 11
#endif  // x86-64 glibc
