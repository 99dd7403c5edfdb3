//! The one place where an address becomes a typed function pointer.
//!
//! Everything the shim calls outside itself (the real GLX/EGL/GL/X11 functions behind our
//! hooks, and the GL functions of a context) is found as an address: from `dlsym`, or from
//! the real `*GetProcAddress`. [`fn_at`] turns such an address into a typed `unsafe extern "C"
//! fn` pointer; [`FnPtr`] is sealed and implemented only for those types, so nothing else can
//! be produced. The name and the signature are declared together once: in a
//! [`crate::dl::Real`] static (`Real<GlxSwapFn>` of `glXSwapBuffers`) or in a line of a
//! [`gl_table!`] table (`get_integerv = c"glGetIntegerv": fn(E, *mut I)`), so a call site
//! never picks a type for an address itself. Calling the pointer stays `unsafe`, with the call
//! site's own `SAFETY:` comment about its arguments.

use std::ffi::CStr;
use std::num::NonZeroUsize;

mod sealed {
    pub trait Sealed {}
}

/// An `unsafe extern "C" fn(..) -> R` pointer type (the only types implementing it).
pub trait FnPtr: Copy + sealed::Sealed {}

macro_rules! fn_ptr_impls {
    ($( ($($a:ident),*) )*) => {
        $(
            impl<R, $($a),*> sealed::Sealed for unsafe extern "C" fn($($a),*) -> R {}
            impl<R, $($a),*> FnPtr for unsafe extern "C" fn($($a),*) -> R {}
        )*
    };
}

fn_ptr_impls! {
    ()
    (A)
    (A, B)
    (A, B, C)
    (A, B, C, D)
    (A, B, C, D, E)
    (A, B, C, D, E, F)
    (A, B, C, D, E, F, G)
    (A, B, C, D, E, F, G, H)
    (A, B, C, D, E, F, G, H, I)
    (A, B, C, D, E, F, G, H, I, J)
    (A, B, C, D, E, F, G, H, I, J, K)
}

/// The function at `addr` as an `F`, or `None` for address 0.
pub fn fn_at<F: FnPtr>(addr: usize) -> Option<F> {
    let addr = NonZeroUsize::new(addr)?;
    const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<usize>()) };
    // SAFETY: `F` is an `unsafe extern "C" fn` pointer type (`FnPtr` is sealed and implemented
    // for nothing else): one non-null address, which `addr` is. Making the pointer reads or
    // calls nothing; calling it is `unsafe`, and the name and signature it was declared with
    // (a `Real` static or a `gl_table!` line) are what each call site relies on.
    Some(unsafe { std::mem::transmute_copy::<NonZeroUsize, F>(&addr) })
}

/// `name` through `lookup` (0: not found), as an `F`.
pub fn load<F: FnPtr>(lookup: &mut dyn FnMut(&CStr) -> usize, name: &CStr) -> Option<F> {
    fn_at(lookup(name))
}

/// A table of GL entry points, each declared once with its GL name and registry signature:
///
/// ```ignore
/// gl_table! {
///     /// docs
///     pub struct Table {
///         get_error = c"glGetError": fn() -> u32;
///         get_string = c"glGetString": fn(u32) -> *const u8, required;
///     }
/// }
/// ```
///
/// gives `pub struct Table` with one `Option<unsafe extern "C" fn(..)>` field per line,
/// `Table::load_with(lookup)` (every name through `lookup`; absent ones are `None`), and
/// `Table::missing_required()` (the first `required` entry that is `None`).
macro_rules! gl_table {
    (
        $(#[$meta:meta])*
        pub struct $table:ident {
            $( $(#[$fmeta:meta])* $field:ident = $name:literal : fn($($arg:ty),*) $(-> $ret:ty)? $(, $req:ident)?; )*
        }
    ) => {
        $(#[$meta])*
        pub struct $table {
            $( $(#[$fmeta])* pub(crate) $field: Option<unsafe extern "C" fn($($arg),*) $(-> $ret)?>, )*
        }

        impl $table {
            /// Looks every entry point up through `lookup` (0: absent).
            pub fn load_with(lookup: &mut dyn FnMut(&std::ffi::CStr) -> usize) -> $table {
                $table { $( $field: $crate::loader::load(lookup, $name), )* }
            }

            /// The first entry marked `required` that is absent.
            #[allow(dead_code)]
            pub fn missing_required(&self) -> Option<&'static std::ffi::CStr> {
                $( $(
                    let _ = stringify!($req);
                    if self.$field.is_none() {
                        return Some($name);
                    }
                )? )*
                None
            }
        }
    };
}
pub(crate) use gl_table;

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn forty_two() -> u32 {
        42
    }

    unsafe extern "C" fn add(a: i32, b: i32) -> i32 {
        a + b
    }

    gl_table! {
        /// A table for the tests.
        pub struct TestTable {
            answer = c"glAnswer": fn() -> u32, required;
            add = c"glAdd": fn(i32, i32) -> i32;
            absent = c"glAbsent": fn(u32);
            also_required = c"glAlsoRequired": fn(), required;
        }
    }

    /// A fake `*GetProcAddress`: two known functions, NULL for every other name.
    fn fake(name: &CStr) -> usize {
        match name.to_bytes() {
            b"glAnswer" => forty_two as *const () as usize,
            b"glAdd" => add as *const () as usize,
            _ => 0,
        }
    }

    #[test]
    fn address_zero_is_none() {
        assert!(fn_at::<unsafe extern "C" fn()>(0).is_none());
        assert!(load::<unsafe extern "C" fn() -> u32>(&mut |_| 0, c"glAnything").is_none());
    }

    #[test]
    fn a_found_function_is_typed_and_callable() {
        let f: unsafe extern "C" fn() -> u32 = load(&mut fake, c"glAnswer").expect("found");
        // SAFETY: `forty_two` has exactly this signature.
        assert_eq!(unsafe { f() }, 42);
    }

    #[test]
    fn a_table_loads_what_exists_and_names_what_is_missing() {
        let mut asked = Vec::new();
        let t = TestTable::load_with(&mut |n| {
            asked.push(n.to_owned());
            fake(n)
        });
        assert_eq!(asked.len(), 4, "every entry is looked up once");
        assert!(t.absent.is_none());
        let add = t.add.expect("glAdd");
        // SAFETY: `add` has exactly this signature.
        assert_eq!(unsafe { add(2, 3) }, 5);
        // `glAnswer` is there; the first required one missing is `glAlsoRequired`.
        assert_eq!(t.missing_required(), Some(c"glAlsoRequired"));
    }

    #[test]
    fn a_table_with_nothing_found_does_not_panic() {
        let t = TestTable::load_with(&mut |_| 0);
        assert!(t.answer.is_none() && t.add.is_none() && t.absent.is_none());
        assert_eq!(t.missing_required(), Some(c"glAnswer"));
    }
}
