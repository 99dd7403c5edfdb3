//! `cargo xtask deps`' function-length check: no product function (the crates that ship, not
//! their tests, xtask or the test crates) longer than [`MAX_LINES`] lines from its `fn` to its
//! closing brace. A long function is several phases under one name; split it into named ones.
//! Parsed with `syn` (spans with line numbers), so comments and strings never confuse it;
//! `#[cfg(test)]` modules and `#[test]` functions are left out.

use std::path::{Path, PathBuf};
use syn::visit::Visit;

pub const MAX_LINES: usize = 120;

/// The crates whose functions are checked.
pub const PRODUCT: &[&str] = &["core", "collectors", "overlay", "cli", "layer/vulkan", "layer/gl"];

/// A function over the limit.
#[derive(Debug, PartialEq, Eq)]
pub struct Long {
    pub file: PathBuf,
    pub name: String,
    pub line: usize,
    pub lines: usize,
}

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        let p = a.path();
        if p.is_ident("test") {
            return true;
        }
        // `#[cfg(test)]` (and `#[cfg(all(test, ...))]`): the tokens name `test`.
        p.is_ident("cfg")
            && meta_text(&a.meta)
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|w| w == "test")
    })
}

/// A `cfg` attribute's tokens as text (no `quote` needed).
fn meta_text(m: &syn::Meta) -> String {
    match m {
        syn::Meta::List(l) => l.tokens.to_string(),
        _ => String::new(),
    }
}

struct Finder<'a> {
    file: &'a Path,
    found: Vec<Long>,
    /// Enclosing impl's type, for names like `Writer::run`.
    owner: Vec<String>,
}

impl Finder<'_> {
    fn check(&mut self, name: &str, sig: &syn::Signature, block: &syn::Block) {
        let start = sig.fn_token.span.start().line;
        let end = block.brace_token.span.close().end().line;
        let lines = end.saturating_sub(start) + 1;
        if lines > MAX_LINES {
            let name = match self.owner.last() {
                Some(o) => format!("{o}::{name}"),
                None => name.to_string(),
            };
            self.found.push(Long {
                file: self.file.to_path_buf(),
                name,
                line: start,
                lines,
            });
        }
    }
}

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if is_test(&f.attrs) {
            return;
        }
        self.check(&f.sig.ident.to_string(), &f.sig, &f.block);
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if is_test(&i.attrs) {
            return;
        }
        let owner = match &*i.self_ty {
            syn::Type::Path(p) => p.path.segments.last().map_or(String::new(), |s| s.ident.to_string()),
            _ => String::new(),
        };
        self.owner.push(owner);
        syn::visit::visit_item_impl(self, i);
        self.owner.pop();
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if is_test(&f.attrs) {
            return;
        }
        self.check(&f.sig.ident.to_string(), &f.sig, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(b) = &f.default {
            self.check(&f.sig.ident.to_string(), &f.sig, b);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

/// The functions over the limit in one file's source; `Err` when it does not parse.
pub fn long_functions(file: &Path, src: &str) -> Result<Vec<Long>, String> {
    let ast = syn::parse_file(src).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut f = Finder {
        file,
        found: Vec::new(),
        owner: Vec::new(),
    };
    f.visit_file(&ast);
    Ok(f.found)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every product function over the limit, under `root`.
pub fn scan(root: &Path) -> Result<Vec<Long>, String> {
    let mut found = Vec::new();
    for krate in PRODUCT {
        let mut files = Vec::new();
        rust_files(&root.join(krate).join("src"), &mut files);
        files.sort();
        for f in files {
            let src = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
            let rel = f.strip_prefix(root).unwrap_or(&f).to_path_buf();
            found.extend(long_functions(&rel, &src)?);
        }
    }
    Ok(found)
}

/// Prints every product function over the limit; `Err` when there is one.
pub fn check(root: &Path) -> Result<(), String> {
    let long = scan(root)?;
    for l in &long {
        println!(
            "xtask deps: {}:{}: fn {} is {} lines (at most {MAX_LINES})",
            l.file.display(),
            l.line,
            l.name,
            l.lines
        );
    }
    match long.len() {
        0 => {
            println!("xtask deps: no product function over {MAX_LINES} lines");
            Ok(())
        }
        n => Err(format!("{n} product function(s) over {MAX_LINES} lines")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(n: usize) -> String {
        "    let x = 1;\n".repeat(n)
    }

    #[test]
    fn a_function_over_the_limit_is_found_and_tests_are_not() {
        let src = format!(
            "fn short() {{\n{}}}\nstruct S;\nimpl S {{\n    fn long(&self) {{\n{}    }}\n}}\n#[cfg(test)]\nmod tests {{\n    fn huge() {{\n{}    }}\n}}\n#[test]\nfn t() {{\n{}}}\n",
            body(10),
            body(MAX_LINES),
            body(500),
            body(500)
        );
        let found = long_functions(Path::new("x.rs"), &src).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].name, "S::long");
        assert_eq!(found[0].lines, MAX_LINES + 2);
        // Exactly at the limit is fine.
        let src = format!("fn edge() {{\n{}}}\n", body(MAX_LINES - 2));
        assert!(long_functions(Path::new("x.rs"), &src).unwrap().is_empty());
        // A comment or string containing braces changes nothing.
        let src = "fn f() {\n    let s = \"}}}\"; // }\n}\n";
        assert!(long_functions(Path::new("x.rs"), src).unwrap().is_empty());
    }
}
