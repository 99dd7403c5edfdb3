//! The dynamic linker's own `dlsym`/`dlvsym`, found without calling either by name, and the
//! interposed `dlsym`/`dlvsym` themselves.
//!
//! Why not `libc::dlsym`: this library exports `dlsym` and `dlvsym`, and as an `LD_PRELOAD`
//! object it comes first in the global scope, so every call to those names made from this
//! library (and from the Rust std linked into it) binds to our own hooks. The real `dlvsym` is
//! therefore looked up in glibc's dynamic symbol table directly (`dl_iterate_phdr` plus the GNU
//! hash table), and the real `dlsym` is `dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34")` (then
//! `GLIBC_2.2.5`, the version of older glibc).
//!
//! The interposed functions are naked trampolines: they ask a Rust filter whether the name is
//! one we hook; if not they *jump* (not call) to the real function, so glibc sees the app's
//! return address and `RTLD_NEXT`/`RTLD_DEFAULT` keep their caller-relative meaning.

use libc::{c_char, c_int, c_void};
use std::ffi::CStr;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

type DlsymFn = unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void;
type DlvsymFn = unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char) -> *mut c_void;

/// Address of glibc's `dlsym` (0 until [`init`] ran, or if it could not be found). Read by the
/// `dlsym` trampoline.
static REAL_DLSYM: AtomicUsize = AtomicUsize::new(0);
/// Address of glibc's `dlvsym`; read by the `dlvsym` trampoline.
static REAL_DLVSYM: AtomicUsize = AtomicUsize::new(0);
/// 0 = not started, 1 = running, 2 = done.
static INIT: AtomicU8 = AtomicU8::new(0);

/// Finds the real functions once. Does nothing that could call `dlsym` (no std facilities that
/// look up weak symbols), so it cannot re-enter itself through the trampolines.
pub fn init() {
    if INIT.load(Ordering::Acquire) == 2 {
        return;
    }
    if INIT.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire).is_ok() {
        let dlvsym = find_libc_dlvsym();
        REAL_DLVSYM.store(dlvsym, Ordering::Release);
        if dlvsym != 0 {
            // SAFETY: `dlvsym` is glibc's dlvsym (ELF lookup above); names are NUL-terminated literals.
            let f: DlvsymFn = unsafe { std::mem::transmute::<usize, DlvsymFn>(dlvsym) };
            for version in [c"GLIBC_2.34", c"GLIBC_2.2.5"] {
                // SAFETY: see above; RTLD_NEXT is relative to this library, the caller.
                let p = unsafe { f(libc::RTLD_NEXT, c"dlsym".as_ptr(), version.as_ptr()) };
                if !p.is_null() {
                    REAL_DLSYM.store(p as usize, Ordering::Release);
                    break;
                }
            }
        }
        INIT.store(2, Ordering::Release);
    } else {
        // Another thread is initialising; it takes microseconds.
        while INIT.load(Ordering::Acquire) != 2 {
            std::hint::spin_loop();
        }
    }
}

/// The real `dlsym`, if found.
pub fn real_dlsym() -> Option<DlsymFn> {
    init();
    let p = REAL_DLSYM.load(Ordering::Acquire);
    // SAFETY: a non-zero value is glibc's dlsym, which has this signature.
    (p != 0).then(|| unsafe { std::mem::transmute::<usize, DlsymFn>(p) })
}

/// The real `dlvsym`, if found.
pub fn real_dlvsym() -> Option<DlvsymFn> {
    init();
    let p = REAL_DLVSYM.load(Ordering::Acquire);
    // SAFETY: a non-zero value is glibc's dlvsym, which has this signature.
    (p != 0).then(|| unsafe { std::mem::transmute::<usize, DlvsymFn>(p) })
}

/// `dlsym(handle, name)` through the real dlsym; null when absent or when dlsym is unknown.
pub fn sym(handle: *mut c_void, name: &CStr) -> usize {
    match real_dlsym() {
        // SAFETY: real dlsym with a handle given by the app or a pseudo-handle, and a C string.
        Some(f) => unsafe { f(handle, name.as_ptr()) as usize },
        None => 0,
    }
}

/// The definition of `name` that the app would reach if this library were not loaded: the next
/// one after us in the global scope, else the one in an already loaded `libs` entry (apps that
/// `dlopen` libGL with `RTLD_LOCAL`). Never one of our own functions.
pub fn next(name: &CStr, libs: &[&CStr]) -> usize {
    let p = sym(libc::RTLD_NEXT, name);
    if p != 0 && !is_ours(p) {
        return p;
    }
    for lib in libs {
        // SAFETY: dlopen with RTLD_NOLOAD only returns a handle of an object already loaded.
        let h = unsafe { libc::dlopen(lib.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
        if h.is_null() {
            continue;
        }
        let p = sym(h, name);
        // SAFETY: h came from dlopen above; this drops the reference RTLD_NOLOAD added.
        unsafe { libc::dlclose(h) };
        if p != 0 && !is_ours(p) {
            return p;
        }
    }
    0
}

/// Base address of this library, from `dladdr` on one of its functions.
fn own_base() -> usize {
    static BASE: AtomicUsize = AtomicUsize::new(0);
    let b = BASE.load(Ordering::Relaxed);
    if b != 0 {
        return b;
    }
    let b = object_base(own_base as *const () as usize);
    BASE.store(b, Ordering::Relaxed);
    b
}

fn object_base(addr: usize) -> usize {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only reads the loader's tables and writes `info`, which lives on our stack.
    let ok = unsafe { libc::dladdr(addr as *const c_void, &mut info) };
    if ok == 0 {
        0
    } else {
        info.dli_fbase as usize
    }
}

/// Whether `addr` lies in this library (so forwarding to it would recurse).
pub fn is_ours(addr: usize) -> bool {
    let own = own_base();
    own != 0 && object_base(addr) == own
}

// ---- ELF lookup of glibc's dlvsym ---------------------------------------------------------

#[repr(C)]
struct Elf64Dyn {
    d_tag: i64,
    d_val: u64,
}

#[repr(C)]
struct Elf64Sym {
    st_name: u32,
    st_info: u8,
    st_other: u8,
    st_shndx: u16,
    st_value: u64,
    st_size: u64,
}

const PT_DYNAMIC: u32 = 2;
const DT_NULL: i64 = 0;
const DT_STRTAB: i64 = 5;
const DT_SYMTAB: i64 = 6;
const DT_GNU_HASH: i64 = 0x6fff_fef5;
const DT_VERSYM: i64 = 0x6fff_fff0;
const STT_FUNC: u8 = 2;

fn gnu_hash(name: &[u8]) -> u32 {
    name.iter()
        .fold(5381u32, |h, &c| h.wrapping_mul(33).wrapping_add(u32::from(c)))
}

struct Search {
    found: usize,
}

/// `dl_iterate_phdr` callback: looks `dlvsym` up in libc (or libdl on glibc < 2.34).
unsafe extern "C" fn phdr_callback(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
    // SAFETY: glibc passes a valid info struct for the duration of the callback, and `data` is
    // the `Search` that `find_libc_dlvsym` passed.
    let (info, search) = unsafe { (&*info, &mut *(data as *mut Search)) };
    if info.dlpi_name.is_null() {
        return 0;
    }
    // SAFETY: dlpi_name is a NUL-terminated string owned by the loader.
    let name = unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes();
    let base = name.rsplit(|&c| c == b'/').next().unwrap_or(name);
    if !(base.starts_with(b"libc.so") || base.starts_with(b"libdl.so")) {
        return 0;
    }
    // SAFETY: the program headers and dynamic section of a loaded object are mapped and
    // immutable for its lifetime; libc is never unloaded.
    let found = unsafe { lookup_in_object(info, b"dlvsym") };
    if found != 0 {
        search.found = found;
        return 1;
    }
    0
}

/// Looks `want` up in one loaded object's GNU hash table; prefers the default version.
///
/// # Safety
/// `info` must describe a loaded ELF object whose dynamic section is mapped.
unsafe fn lookup_in_object(info: &libc::dl_phdr_info, want: &[u8]) -> usize {
    let base = info.dlpi_addr as usize;
    // SAFETY (whole body): every pointer is derived from the loader's own tables for a mapped
    // object, following the ELF and GNU hash layouts.
    unsafe {
        let phdrs = std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize);
        let Some(dynamic) = phdrs.iter().find(|p| p.p_type == PT_DYNAMIC) else {
            return 0;
        };
        let (mut strtab, mut symtab, mut gnu_hash_tab, mut versym) = (0usize, 0usize, 0usize, 0usize);
        let mut d = (base + dynamic.p_vaddr as usize) as *const Elf64Dyn;
        while (*d).d_tag != DT_NULL {
            // glibc relocates these entries in place for normal objects; adjust if it did not.
            let v = (*d).d_val as usize;
            let v = if v < base { v + base } else { v };
            match (*d).d_tag {
                DT_STRTAB => strtab = v,
                DT_SYMTAB => symtab = v,
                DT_GNU_HASH => gnu_hash_tab = v,
                DT_VERSYM => versym = v,
                _ => {}
            }
            d = d.add(1);
        }
        if strtab == 0 || symtab == 0 || gnu_hash_tab == 0 {
            return 0;
        }
        let h = gnu_hash_tab as *const u32;
        let nbuckets = *h;
        let symoffset = *h.add(1);
        let bloom_size = *h.add(2) as usize;
        if nbuckets == 0 {
            return 0;
        }
        let buckets = h.add(4 + bloom_size * 2); // bloom words are 64-bit
        let chain = buckets.add(nbuckets as usize);
        let hash = gnu_hash(want);
        let mut i = *buckets.add((hash % nbuckets) as usize);
        if i < symoffset {
            return 0;
        }
        let syms = symtab as *const Elf64Sym;
        let mut fallback = 0usize;
        loop {
            let ch = *chain.add((i - symoffset) as usize);
            if (ch | 1) == (hash | 1) {
                let s = &*syms.add(i as usize);
                let n = CStr::from_ptr((strtab + s.st_name as usize) as *const c_char).to_bytes();
                let ty = s.st_info & 0xf;
                if n == want && s.st_shndx != 0 && ty == STT_FUNC {
                    let addr = base + s.st_value as usize;
                    let hidden = versym != 0 && (*(versym as *const u16).add(i as usize) & 0x8000) != 0;
                    if !hidden {
                        return addr;
                    }
                    fallback = addr;
                }
            }
            if ch & 1 != 0 {
                break;
            }
            i += 1;
        }
        fallback
    }
}

fn find_libc_dlvsym() -> usize {
    let mut s = Search { found: 0 };
    // SAFETY: the callback matches dl_iterate_phdr's contract and only reads loader data;
    // `s` outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(phdr_callback), &mut s as *mut Search as *mut c_void) };
    s.found
}

// ---- the interposed dlsym / dlvsym ---------------------------------------------------------

/// Decides for `dlsym`: a replacement to return, or 0 to let the real `dlsym` answer.
extern "C" fn dlsym_filter(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    init();
    if name.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: the app passes a NUL-terminated symbol name to dlsym.
    let n = unsafe { CStr::from_ptr(name) };
    crate::hooks::filter_dlsym(handle, n, None) as *mut c_void
}

/// Decides for `dlvsym`, as [`dlsym_filter`].
extern "C" fn dlvsym_filter(handle: *mut c_void, name: *const c_char, version: *const c_char) -> *mut c_void {
    init();
    if name.is_null() || version.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: the app passes NUL-terminated strings to dlvsym.
    let (n, v) = unsafe { (CStr::from_ptr(name), CStr::from_ptr(version)) };
    crate::hooks::filter_dlsym(handle, n, Some(v)) as *mut c_void
}

/// `dlsym` as seen by the process: our replacement for hooked GL/EGL names, otherwise a tail
/// jump into glibc's `dlsym` with the caller's registers and return address intact.
///
/// # Safety
/// As glibc's `dlsym`.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(export_name = "dlsym")]
pub unsafe extern "C" fn dlsym_trampoline(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    core::arch::naked_asm!(
        "push rdi",
        "push rsi",
        "sub rsp, 8", // 16-byte alignment for the call
        "call {filter}",
        "add rsp, 8",
        "pop rsi",
        "pop rdi",
        "test rax, rax",
        "jnz 2f",
        "mov rax, qword ptr [rip + {real}]",
        "test rax, rax",
        "jz 2f",
        "jmp rax",
        "2:",
        "ret",
        filter = sym dlsym_filter,
        real = sym REAL_DLSYM,
    )
}

/// `dlvsym` as seen by the process; see [`dlsym_trampoline`].
///
/// # Safety
/// As glibc's `dlvsym`.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(export_name = "dlvsym")]
pub unsafe extern "C" fn dlvsym_trampoline(
    handle: *mut c_void,
    name: *const c_char,
    version: *const c_char,
) -> *mut c_void {
    core::arch::naked_asm!(
        "push rdi",
        "push rsi",
        "push rdx", // three pushes keep the 16-byte alignment for the call
        "call {filter}",
        "pop rdx",
        "pop rsi",
        "pop rdi",
        "test rax, rax",
        "jnz 2f",
        "mov rax, qword ptr [rip + {real}]",
        "test rax, rax",
        "jz 2f",
        "jmp rax",
        "2:",
        "ret",
        filter = sym dlvsym_filter,
        real = sym REAL_DLVSYM,
    )
}

#[cfg(not(target_arch = "x86_64"))]
compile_error!("framescope-gl's dlsym trampolines are written for x86_64");
