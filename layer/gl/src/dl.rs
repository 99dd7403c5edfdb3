//! The dynamic linker, seen from an `LD_PRELOAD` object: glibc's own `dlsym`/`dlvsym`, found
//! without calling either by name; the definition of a name that the app would reach without
//! us ([`next`]); the slots of the real functions behind our hooks ([`Real`], [`real`]); and the
//! `gl_hooks!` table that declares each hook once.
//!
//! Why not `libc::dlsym`: this library exports `dlsym` and `dlvsym` (the trampolines in
//! `hooks`), and as an `LD_PRELOAD` object it comes first in the global scope, so every call to
//! those names made from this library (and from the Rust std linked into it) binds to our own
//! hooks. The real `dlvsym` is therefore looked up in glibc's dynamic symbol table directly
//! (`dl_iterate_phdr` plus the GNU hash table), and the real `dlsym` is
//! `dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34")` (then `GLIBC_2.2.5`, the version of older glibc).
//!
//! The bottom of the module tree: it imports only `loader`.

use framescope_core::guard::{report_once, Site};
use libc::{c_char, c_int, c_void};
use std::ffi::CStr;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use crate::loader::{fn_at, FnPtr};

pub type DlsymFn = unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void;
pub type DlvsymFn = unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char) -> *mut c_void;

/// Address of glibc's `dlsym` (0 until [`init`] ran, or if it could not be found). Read by the
/// `dlsym` trampoline in `hooks`.
pub static REAL_DLSYM: AtomicUsize = AtomicUsize::new(0);
/// Address of glibc's `dlvsym`; read by the `dlvsym` trampoline in `hooks`.
pub static REAL_DLVSYM: AtomicUsize = AtomicUsize::new(0);
/// 0 = not started, 1 = running, 2 = done.
static INIT: AtomicU8 = AtomicU8::new(0);

/// Finds the real functions once. Does nothing that could call `dlsym` (no std facilities that
/// look up weak symbols), so it cannot re-enter itself through the trampolines.
pub fn init() {
    if INIT.load(Ordering::Acquire) == 2 {
        return;
    }
    if INIT.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire).is_ok() {
        // Every caller spins until INIT is 2: a panic here must not leave it at 1 (nor unwind
        // into the app's dlsym call). Without dlvsym, the trampolines return NULL for names
        // they do not replace, which the app sees as a failed lookup.
        let dlvsym = std::panic::catch_unwind(find_libc_dlvsym).unwrap_or(0);
        REAL_DLVSYM.store(dlvsym, Ordering::Release);
        // glibc's baseline symbol version: GLIBC_2.2.5 on x86-64, GLIBC_2.0 on i386.
        #[cfg(target_pointer_width = "64")]
        const BASELINE: &std::ffi::CStr = c"GLIBC_2.2.5";
        #[cfg(target_pointer_width = "32")]
        const BASELINE: &std::ffi::CStr = c"GLIBC_2.0";
        if let Some(f) = fn_at::<DlvsymFn>(dlvsym) {
            for version in [c"GLIBC_2.34", BASELINE] {
                // SAFETY: `f` is glibc's dlvsym (ELF lookup above); the names are
                // NUL-terminated literals; RTLD_NEXT is relative to this library, the caller.
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

/// The real `dlsym`, if found (a non-zero value is glibc's dlsym).
pub fn real_dlsym() -> Option<DlsymFn> {
    init();
    fn_at(REAL_DLSYM.load(Ordering::Acquire))
}

/// The real `dlvsym`, if found (a non-zero value is glibc's dlvsym).
pub fn real_dlvsym() -> Option<DlvsymFn> {
    init();
    fn_at(REAL_DLVSYM.load(Ordering::Acquire))
}

/// `dlsym(handle, name)` through the real dlsym; 0 when absent or when dlsym is unknown.
///
/// # Safety
/// `handle` is a pseudo-handle (`RTLD_NEXT`, `RTLD_DEFAULT`) or a handle from `dlopen` that
/// is still open.
pub unsafe fn sym(handle: *mut c_void, name: &CStr) -> usize {
    match real_dlsym() {
        // SAFETY: real dlsym with a valid handle (the caller's contract) and a C string.
        Some(f) => unsafe { f(handle, name.as_ptr()) as usize },
        None => 0,
    }
}

/// The definition of `name` that the app would reach if this library were not loaded: the next
/// one after us in the global scope, else the one in an already loaded `libs` entry (apps that
/// `dlopen` libGL with `RTLD_LOCAL`). Never one of our own functions.
pub fn next(name: &CStr, libs: &[&CStr]) -> usize {
    // SAFETY: RTLD_NEXT is a pseudo-handle.
    let p = unsafe { sym(libc::RTLD_NEXT, name) };
    if p != 0 && !is_ours(p) {
        return p;
    }
    for lib in libs {
        // SAFETY: dlopen with RTLD_NOLOAD only returns a handle of an object already loaded.
        let h = unsafe { libc::dlopen(lib.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
        if h.is_null() {
            continue;
        }
        // SAFETY: h is the open handle dlopen just returned.
        let p = unsafe { sym(h, name) };
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

// ---- the real functions behind our hooks --------------------------------------------------

/// Where a real function may live when it is not next in the global scope.
#[derive(Clone, Copy)]
pub enum Family {
    Glx,
    Egl,
    Gl,
    X11,
    Wayland,
}

impl Family {
    fn libs(self) -> &'static [&'static CStr] {
        match self {
            Family::Glx => &[c"libGL.so.1", c"libGLX.so.0", c"libGL.so"],
            Family::Egl => &[c"libEGL.so.1", c"libEGL.so"],
            Family::Gl => &[c"libGL.so.1", c"libOpenGL.so.0", c"libGLESv2.so.2", c"libGLESv2.so"],
            Family::X11 => &[c"libX11.so.6", c"libX11.so"],
            Family::Wayland => &[c"libwayland-client.so.0"],
        }
    }
}

/// Where the real definition of one hooked name is kept: resolved lazily (or learnt from the
/// app's own `dlsym`/`GetProcAddress` lookups) and never pointing into this library. Untyped,
/// so the tables of hooked names can list slots of every signature; [`Real`] is its typed
/// face.
pub struct Slot {
    pub name: &'static CStr,
    family: Family,
    ptr: AtomicUsize,
}

impl Slot {
    /// The real function's address, or 0 when it cannot be found.
    pub fn addr(&self) -> usize {
        let p = self.ptr.load(Ordering::Acquire);
        if p != 0 {
            return p;
        }
        let found = next(self.name, self.family.libs());
        if found != 0 {
            let _ = self.ptr.compare_exchange(0, found, Ordering::AcqRel, Ordering::Acquire);
        }
        self.ptr.load(Ordering::Acquire)
    }

    /// Records a real address the app looked up itself (first one wins; ours are refused).
    pub fn offer(&self, p: usize) {
        if p != 0 && self.ptr.load(Ordering::Acquire) == 0 && !is_ours(p) {
            let _ = self.ptr.compare_exchange(0, p, Ordering::AcqRel, Ordering::Acquire);
        }
    }
}

/// The real function of one name with its signature `F`, declared together once.
pub struct Real<F> {
    slot: Slot,
    _signature: PhantomData<F>,
}

impl<F: FnPtr> Real<F> {
    /// `F` must be the signature of `name` (the GL/GLX/EGL/Xlib headers').
    pub const fn new(name: &'static CStr, family: Family) -> Self {
        Real {
            slot: Slot {
                name,
                family,
                ptr: AtomicUsize::new(0),
            },
            _signature: PhantomData,
        }
    }

    /// The real function, or `None` when it cannot be found.
    pub fn get(&self) -> Option<F> {
        fn_at(self.slot.addr())
    }

    pub fn slot(&self) -> &Slot {
        &self.slot
    }

    pub fn name(&self) -> &'static CStr {
        self.slot.name
    }
}

static MISSING: Site = Site::new("real function lookup");

/// The real function of `r`, or `None` after reporting (once per process) that the call is
/// dropped: a hook whose real function is gone can only drop the app's call.
#[inline(always)]
pub fn real<F: FnPtr>(r: &Real<F>) -> Option<F> {
    let f = r.get();
    if f.is_none() {
        report_missing(r.name());
    }
    f
}

#[cold]
#[inline(never)]
fn report_missing(name: &CStr) {
    report_once(
        &MISSING,
        format_args!("cannot find the real {}; the call is dropped", name.to_string_lossy()),
    );
}

/// `name` with its terminating NUL, at compile time.
pub const fn c_name(with_nul: &'static str) -> &'static CStr {
    match CStr::from_bytes_with_nul(with_nul.as_bytes()) {
        Ok(c) => c,
        Err(_) => panic!("a GL name with a NUL inside"),
    }
}

/// A module's hooked entry points, each declared once with its symbol name and signature:
///
/// ```ignore
/// gl_hooks! {
///     export glFinish: Gl fn() => finish;
///     lookup glPushDebugGroupKHR: Gl fn(source: u32, id: u32, n: i32, m: *const c_char) => push_khr;
///     export glXGetProcAddress = crate::winsys::GLX_GET_PROC_ADDRESS: Glx
///         fn(name: *const c_char) -> *mut c_void => get_proc;
/// }
/// ```
///
/// gives, per line, `next::glFinish` (the [`Real`] slot of the real function; `= path` reuses
/// a slot a lower module declared, checked to have the same signature), with `export` or
/// `export_only` an exported symbol of that name forwarding to the hook (apps that import the
/// name from libGL), and with `export` or `lookup` one typed row of the module's
/// `intercept(name)`, which the `dlsym`/`dlvsym`/`*GetProcAddress` hooks use to hand out the
/// hook. The hook is coerced to the slot's function type in that row (or, for `export_only`,
/// in a check of its own), so a hook whose signature disagrees does not compile.
/// The exported symbol is a function of its own: the address of an exported symbol taken
/// inside the library resolves through the GOT to the first definition in the process.
macro_rules! gl_hooks {
    ($(
        $how:ident $name:ident $(= $slot:path)? : $family:ident
            fn($($arg:ident : $ty:ty),* $(,)?) $(-> $ret:ty)? => $hook:path;
    )*) => {
        /// The real functions behind this module's hooks, each named as its symbol.
        #[allow(non_upper_case_globals)]
        mod next {
            #[allow(unused_imports)]
            use super::*;
            $(
                $crate::dl::gl_hooks!(
                    @slot $name $(= $slot)? ; $family ; unsafe extern "C" fn($($ty),*) $(-> $ret)?
                );
            )*
        }

        $(
            $crate::dl::gl_hooks!(@$how $name ($($arg : $ty),*) $(-> $ret)? => $hook);
        )*

        /// For a name hooked here: the slot of its real function and our hook.
        pub fn intercept(name: &[u8]) -> Option<(&'static $crate::dl::Slot, usize)> {
            $(
                $crate::dl::gl_hooks!(
                    @row $how name $name [unsafe extern "C" fn($($ty),*) $(-> $ret)?] $hook
                );
            )*
            None
        }
    };
    (@row export_only $n:ident $name:ident [$sig:ty] $hook:path) => {};
    (@row $how:ident $n:ident $name:ident [$sig:ty] $hook:path) => {
        if $n == stringify!($name).as_bytes() {
            let hook: $sig = $hook;
            return Some((next::$name.slot(), hook as usize));
        }
    };
    (@slot $name:ident = $slot:path ; $family:ident ; $sig:ty) => {
        pub use $slot as $name;
        const _: () = {
            // The slot declared elsewhere must have this entry's signature.
            #[allow(dead_code)]
            fn same_signature() {
                let _: &$crate::dl::Real<$sig> = &$name;
            }
        };
    };
    (@slot $name:ident ; $family:ident ; $sig:ty) => {
        pub static $name: $crate::dl::Real<$sig> = $crate::dl::Real::new(
            $crate::dl::c_name(concat!(stringify!($name), "\0")),
            $crate::dl::Family::$family,
        );
    };
    (@export $name:ident ($($arg:ident : $ty:ty),*) $(-> $ret:ty)? => $hook:path) => {
        const _: () = {
            #[export_name = stringify!($name)]
            unsafe extern "C" fn export($($arg: $ty),*) $(-> $ret)? {
                // SAFETY: forwarded unchanged to the hook, which has this signature.
                unsafe { $hook($($arg),*) }
            }
        };
    };
    (@export_only $name:ident ($($arg:ident : $ty:ty),*) $(-> $ret:ty)? => $hook:path) => {
        $crate::dl::gl_hooks!(@export $name ($($arg : $ty),*) $(-> $ret)? => $hook);
        const _: () = {
            // Never handed out, but its type is still the slot's.
            #[allow(dead_code)]
            fn same_signature() {
                let _: unsafe extern "C" fn($($ty),*) $(-> $ret)? = $hook;
            }
        };
    };
    (@lookup $name:ident ($($arg:ident : $ty:ty),*) $(-> $ret:ty)? => $hook:path) => {};
}
pub(crate) use gl_hooks;

// ---- ELF lookup of glibc's dlvsym ---------------------------------------------------------

// The ELF class of this build (ELF gABI, "Dynamic Section" and "Symbol Table"): 64-bit
// entries on x86-64, 32-bit ones (with st_value before st_info) on i386.
#[cfg(target_pointer_width = "64")]
#[repr(C)]
struct ElfDyn {
    d_tag: i64,
    d_val: u64,
}

#[cfg(target_pointer_width = "64")]
impl ElfDyn {
    fn tag(&self) -> i64 {
        self.d_tag
    }
}

#[cfg(target_pointer_width = "64")]
#[repr(C)]
struct ElfSym {
    st_name: u32,
    st_info: u8,
    st_other: u8,
    st_shndx: u16,
    st_value: u64,
    st_size: u64,
}

#[cfg(target_pointer_width = "32")]
#[repr(C)]
struct ElfDyn {
    d_tag: i32,
    d_val: u32,
}

#[cfg(target_pointer_width = "32")]
impl ElfDyn {
    fn tag(&self) -> i64 {
        i64::from(self.d_tag)
    }
}

#[cfg(target_pointer_width = "32")]
#[repr(C)]
struct ElfSym {
    st_name: u32,
    st_value: u32,
    st_size: u32,
    st_info: u8,
    st_other: u8,
    st_shndx: u16,
}

/// 32-bit words per GNU hash bloom filter word (the bloom words are ELF class sized).
const BLOOM_WORD_U32S: usize = std::mem::size_of::<usize>() / 4;

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
    // SAFETY: (the whole body) every pointer is derived from the loader's own tables for a mapped
    // object, following the ELF and GNU hash layouts.
    unsafe {
        let phdrs = std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize);
        let Some(dynamic) = phdrs.iter().find(|p| p.p_type == PT_DYNAMIC) else {
            return 0;
        };
        let (mut strtab, mut symtab, mut gnu_hash_tab, mut versym) = (0usize, 0usize, 0usize, 0usize);
        let mut d = base.wrapping_add(dynamic.p_vaddr as usize) as *const ElfDyn;
        while (*d).tag() != DT_NULL {
            // glibc relocates these entries in place for normal objects; adjust if it did not.
            let v = (*d).d_val as usize;
            let v = if v < base { v.wrapping_add(base) } else { v };
            match (*d).tag() {
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
        let buckets = h.add(4 + bloom_size * BLOOM_WORD_U32S);
        let chain = buckets.add(nbuckets as usize);
        let hash = gnu_hash(want);
        let mut i = *buckets.add((hash % nbuckets) as usize);
        if i < symoffset {
            return 0;
        }
        let syms = symtab as *const ElfSym;
        let mut fallback = 0usize;
        loop {
            let ch = *chain.add((i - symoffset) as usize);
            if (ch | 1) == (hash | 1) {
                let s = &*syms.add(i as usize);
                let n = CStr::from_ptr((strtab + s.st_name as usize) as *const c_char).to_bytes();
                let ty = s.st_info & 0xf;
                if n == want && s.st_shndx != 0 && ty == STT_FUNC {
                    let addr = base.wrapping_add(s.st_value as usize);
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
