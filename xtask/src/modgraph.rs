//! `cargo xtask deps`: the import graph between the modules (files) of each crate, and its
//! cycles. A module depends on another when it names it through `crate::`, `super::` or
//! `self::` (in a `use` or inline), or names a child module it declares (`child::item`). Each
//! file is one node: `foo/mod.rs` and `foo.rs` are the module `foo`, `lib.rs` and `main.rs` the
//! crate root. Comments and string literals are ignored, so documentation naming a path is not
//! an import. A cycle is printed as the chain of modules that closes it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates whose module graph must stay free of cycles; `cargo xtask test` checks these.
pub const CHECKED: &[&str] = &[
    "core",
    "collectors",
    "overlay",
    "cli",
    "xtask",
    "tests",
    "layer/vulkan",
    "layer/gl",
];
/// Every crate `cargo xtask deps` reports on.
pub const ALL: &[&str] = &[
    "core",
    "collectors",
    "overlay",
    "cli",
    "xtask",
    "tests",
    "layer/vulkan",
    "layer/gl",
];

/// A module path inside the crate, `""` for the root.
type Module = String;

/// Source text with comments, string and character literals blanked (newlines kept).
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let blank = |out: &mut String, s: &[u8]| {
        for &c in s {
            out.push(if c == b'\n' { '\n' } else { ' ' });
        }
    };
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(b"/*") {
            // Nested block comments, as Rust has them.
            let (mut depth, mut j) = (0usize, 0usize);
            while j < rest.len() {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if let Some(hashes) = raw_string_start(rest) {
            // r"..." or r#"..."#: ends at a quote followed by as many hashes.
            let open = 2 + hashes; // r, hashes, quote
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            let end = rest[open..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(rest.len(), |p| open + p + close.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest[0] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest[0] == b'\'' {
            // A character literal ('x', '\n', '\u{..}') or a lifetime ('a): only the former is
            // closed by a quote within a few characters.
            let lit = if rest.get(1) == Some(&b'\\') {
                rest.iter().skip(2).position(|&c| c == b'\'').map(|p| p + 3)
            } else {
                // One UTF-8 character then the quote.
                let ch = std::str::from_utf8(&rest[1..rest.len().min(6)])
                    .ok()
                    .or_else(|| std::str::from_utf8(&rest[1..rest.len().min(5)]).ok())
                    .or_else(|| std::str::from_utf8(&rest[1..rest.len().min(4)]).ok())
                    .or_else(|| std::str::from_utf8(&rest[1..rest.len().min(3)]).ok())
                    .and_then(|s| s.chars().next());
                ch.and_then(|c| (rest.get(1 + c.len_utf8()) == Some(&b'\'')).then_some(2 + c.len_utf8()))
            };
            let end = lit.unwrap_or(1);
            if lit.is_some() {
                blank(&mut out, &rest[..end]);
            } else {
                out.push('\'');
            }
            i += end;
        } else {
            let c = src[i..].chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The number of `#` of a raw string starting here (`r"`, `r#"`, `br"`…), if one does.
fn raw_string_start(s: &[u8]) -> Option<usize> {
    let s = s.strip_prefix(b"b").unwrap_or(s);
    let s = s.strip_prefix(b"r")?;
    let hashes = s.iter().take_while(|&&c| c == b'#').count();
    (s.get(hashes) == Some(&b'"')).then_some(hashes)
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// For each character, how many inline modules (`mod name { … }`) enclose it.
fn inline_depths(c: &[char]) -> Vec<u32> {
    let mut depth = vec![0u32; c.len()];
    // Brace depth at which each open inline module's block started.
    let mut open: Vec<usize> = Vec::new();
    let mut braces = 0usize;
    let mut i = 0;
    while i < c.len() {
        if c[i] == '{' {
            braces += 1;
        } else if c[i] == '}' {
            if open.last() == Some(&braces) {
                open.pop();
            }
            braces = braces.saturating_sub(1);
        } else if c[i..].starts_with(&['m', 'o', 'd'])
            && (i == 0 || !is_ident(c[i - 1]))
            && c.get(i + 3).is_some_and(|ch| ch.is_whitespace())
        {
            let (name, j) = path_at(c, skip_ws(c, i + 3));
            let k = skip_ws(c, j);
            if name.len() == 1 && c.get(k) == Some(&'{') {
                depth[i..=k].iter_mut().for_each(|d| *d = open.len() as u32);
                braces += 1;
                open.push(braces);
                i = k + 1;
                continue;
            }
        }
        depth[i] = open.len() as u32;
        i += 1;
    }
    depth
}

/// Every path the code names: `use` trees expanded (`a::{b, c::d}` gives `a::b`, `a::c::d`),
/// and every other `x::y::z` sequence of identifiers. Each as its segments, with the number of
/// inline modules around it (a `super::` inside `mod tests { … }` is the file's own module).
fn paths(code: &str) -> Vec<(Vec<String>, u32)> {
    let mut out = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let depths = inline_depths(&chars);
    let mut i = 0;
    while i < chars.len() {
        // A path starts at an identifier not preceded by another identifier char or `::`.
        let starts = is_ident(chars[i])
            && !chars[i].is_ascii_digit()
            && (i == 0 || !(is_ident(chars[i - 1]) || (i >= 2 && chars[i - 1] == ':' && chars[i - 2] == ':')));
        if !starts {
            i += 1;
            continue;
        }
        let depth = depths[i];
        let (segs, next) = path_at(&chars, i);
        i = next;
        if segs.len() == 1 && segs[0] == "use" {
            let (trees, next) = use_tree(&chars, skip_ws(&chars, i));
            out.extend(trees.into_iter().map(|t| (t, depth)));
            i = next;
        } else if segs.len() > 1 {
            out.push((segs, depth));
        }
    }
    out
}

fn skip_ws(c: &[char], mut i: usize) -> usize {
    while i < c.len() && c[i].is_whitespace() {
        i += 1;
    }
    i
}

/// `a::b::c` starting at `i`: its segments and the index after it (before a trailing `::{`).
fn path_at(c: &[char], mut i: usize) -> (Vec<String>, usize) {
    let mut segs = Vec::new();
    loop {
        let start = i;
        while i < c.len() && is_ident(c[i]) {
            i += 1;
        }
        if i == start {
            break;
        }
        segs.push(c[start..i].iter().collect());
        let j = skip_ws(c, i);
        if j + 1 < c.len() && c[j] == ':' && c[j + 1] == ':' {
            let k = skip_ws(c, j + 2);
            if k < c.len() && (c[k] == '{' || c[k] == '*') {
                return (segs, j + 2);
            }
            i = k;
        } else {
            break;
        }
    }
    (segs, i)
}

/// A use tree at `i`: `a::b`, `a::{..}`, `{..}`, `a::*`, `a as b`. Returns the expanded paths.
fn use_tree(c: &[char], i: usize) -> (Vec<Vec<String>>, usize) {
    let i = skip_ws(c, i);
    let (prefix, mut j) = if i < c.len() && is_ident(c[i]) {
        path_at(c, i)
    } else {
        (Vec::new(), i)
    };
    j = skip_ws(c, j);
    if j < c.len() && c[j] == '{' {
        let mut out = Vec::new();
        j += 1;
        loop {
            j = skip_ws(c, j);
            if j >= c.len() || c[j] == '}' {
                j += 1;
                break;
            }
            if c[j] == ',' {
                j += 1;
                continue;
            }
            let before = j;
            let (inner, next) = use_tree(c, j);
            for p in inner {
                out.push(prefix.iter().cloned().chain(p).collect());
            }
            j = next.max(before + 1);
        }
        return (out, j);
    }
    if j < c.len() && c[j] == '*' {
        j += 1;
    }
    // `as name`, then whatever ends the tree (`,`, `}`, `;`) is left to the caller.
    let k = skip_ws(c, j);
    if c[k..].starts_with(&['a', 's']) && c.get(k + 2).is_some_and(|ch| ch.is_whitespace()) {
        let (_, next) = path_at(c, skip_ws(c, k + 2));
        j = next;
    }
    let out = if prefix.is_empty() { Vec::new() } else { vec![prefix] };
    (out, j)
}

/// The crate's modules: module path → file.
fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    let mut out = BTreeMap::new();
    // With a library, `main.rs` is a crate of its own that uses the library by name.
    let has_lib = src.join("lib.rs").is_file();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let rel = p.strip_prefix(src).unwrap_or(&p);
            let mut segs: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
            let last = segs.pop().unwrap_or_default();
            let stem = last.trim_end_matches(".rs");
            // `bin/` files are binaries of their own, not modules of the library.
            if segs.first().is_some_and(|s| s == "bin") {
                continue;
            }
            if has_lib && segs.is_empty() && stem == "main" {
                continue;
            }
            match stem {
                "mod" => {}
                "lib" | "main" if segs.is_empty() => {}
                s => segs.push(s.to_string()),
            }
            out.insert(segs.join("::"), p);
        }
    }
    out
}

/// The module a path names from `from` (the longest prefix naming a module), if any.
fn resolve(
    from: &str,
    (path, inline): (&[String], u32),
    mods: &BTreeMap<Module, PathBuf>,
    children: &BTreeSet<String>,
) -> Option<Module> {
    let mut base: Vec<String> = if from.is_empty() {
        Vec::new()
    } else {
        from.split("::").map(str::to_string).collect()
    };
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("super") => {
            // The first supers leave the inline modules around the path, staying in the file.
            let mut inline = inline;
            while rest.first().is_some_and(|s| s == "super") {
                if inline > 0 {
                    inline -= 1;
                } else {
                    base.pop();
                }
                rest = &rest[1..];
            }
            if inline > 0 {
                return None;
            }
        }
        Some("self") if inline > 0 => return None,
        Some("self") => rest = &rest[1..],
        Some(first) if inline == 0 && children.contains(first) => {}
        _ => return None,
    }
    let mut best = None;
    let mut cur = base.clone();
    if !cur.is_empty() || rest.is_empty() {
        best = Some(cur.join("::"));
    }
    for s in rest {
        cur.push(s.clone());
        let name = cur.join("::");
        if mods.contains_key(&name) {
            best = Some(name);
        } else {
            break;
        }
    }
    // A path that only reaches the base itself (`crate::Item`, `super::Item`) names the base.
    best.or_else(|| Some(base.join("::")))
}

/// The import graph of the crate at `dir`.
pub fn graph(dir: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mods = modules(&dir.join("src"));
    let mut g: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (m, file) in &mods {
        let code = code_only(&std::fs::read_to_string(file).unwrap_or_default());
        let prefix = if m.is_empty() { String::new() } else { format!("{m}::") };
        let children: BTreeSet<String> = mods
            .keys()
            .filter_map(|k| k.strip_prefix(&prefix).filter(|_| !prefix.is_empty() || !k.is_empty()))
            .filter(|k| !k.is_empty() && !k.contains("::"))
            .map(str::to_string)
            .collect();
        let deps = g.entry(m.clone()).or_default();
        for (p, inline) in paths(&code) {
            if let Some(to) = resolve(m, (&p, inline), &mods, &children) {
                if &to != m {
                    deps.insert(to);
                }
            }
        }
    }
    g
}

/// Strongly connected components with more than one module (Tarjan), each sorted.
pub fn cycles(g: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct T<'a> {
        g: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<Module>>,
    }
    impl<'a> T<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on.insert(v);
            if let Some(ws) = self.g.get(v) {
                for w in ws {
                    if !self.g.contains_key(w.as_str()) {
                        continue;
                    }
                    if !self.index.contains_key(w.as_str()) {
                        self.visit(w);
                        let lw = self.low[w.as_str()];
                        let lv = self.low[v];
                        self.low.insert(v, lv.min(lw));
                    } else if self.on.contains(w.as_str()) {
                        let iw = self.index[w.as_str()];
                        let lv = self.low[v];
                        self.low.insert(v, lv.min(iw));
                    }
                }
            }
            if self.low[v] == self.index[v] {
                let mut scc = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on.remove(w);
                    scc.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if scc.len() > 1 {
                    scc.sort();
                    self.out.push(scc);
                }
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.out
}

/// One concrete cycle through the first module of `scc`: `a -> b -> … -> a`.
pub fn a_cycle(g: &BTreeMap<Module, BTreeSet<Module>>, scc: &[Module]) -> Vec<Module> {
    let inside: BTreeSet<&str> = scc.iter().map(String::as_str).collect();
    let start = scc[0].as_str();
    // Breadth-first from the start's successors back to the start: the shortest cycle.
    let mut prev: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::new();
    for w in &g[start] {
        if inside.contains(w.as_str()) && !prev.contains_key(w.as_str()) {
            prev.insert(w, start);
            queue.push_back(w.as_str());
        }
    }
    while let Some(v) = queue.pop_front() {
        if v == start {
            break;
        }
        for w in &g[v] {
            if inside.contains(w.as_str()) && !prev.contains_key(w.as_str()) {
                prev.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    let mut chain = vec![start.to_string()];
    let mut v = prev.get(start).copied();
    while let Some(x) = v {
        chain.push(x.to_string());
        if x == start {
            break;
        }
        v = prev.get(x).copied();
    }
    chain.reverse();
    chain
}

fn show(m: &str) -> &str {
    if m.is_empty() {
        "(root)"
    } else {
        m
    }
}

/// Checks `crates` (paths from the workspace root); prints every cycle. Err when any exists.
pub fn check(crates: &[&str]) -> Result<(), String> {
    let root = crate::shell::root();
    let mut found = 0;
    for c in crates {
        let g = graph(&root.join(c));
        let sccs = cycles(&g);
        if sccs.is_empty() {
            eprintln!("xtask deps: {c}: {} modules, no import cycle", g.len());
            continue;
        }
        for scc in &sccs {
            found += 1;
            let chain: Vec<String> = a_cycle(&g, scc).iter().map(|m| show(m).to_string()).collect();
            eprintln!(
                "xtask deps: {c}: {} modules in one cycle ({}); e.g. {}",
                scc.len(),
                scc.iter().map(|m| show(m)).collect::<Vec<_>>().join(", "),
                chain.join(" -> ")
            );
            if std::env::var_os("XTASK_DEPS_EDGES").is_some() {
                for m in scc {
                    let inside: Vec<&str> = g[m].iter().filter(|t| scc.contains(t)).map(|t| show(t)).collect();
                    eprintln!("    {} -> {}", show(m), inside.join(", "));
                }
            }
        }
    }
    if found == 0 {
        Ok(())
    } else {
        Err(format!("{found} import cycle(s) between modules"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(code: &str) -> Vec<String> {
        paths(&code_only(code)).into_iter().map(|(s, _)| s.join("::")).collect()
    }

    #[test]
    fn use_trees_expand_and_comments_and_strings_do_not_count() {
        assert_eq!(
            p("use crate::{a::{b, c::D}, e as f, g::*};\nlet x = \"crate::no\"; // crate::nope\n/* crate::x */ crate::h::i();"),
            ["crate::a::b", "crate::a::c::D", "crate::e", "crate::g", "crate::h::i"]
        );
        assert_eq!(p("use super::super::x;"), ["super::super::x"]);
        assert_eq!(
            p("let c = '\"'; crate::y::z(); fn f<'a>(x: &'a str) {}"),
            ["crate::y::z"]
        );
        assert_eq!(p("let s = r#\"crate::q \"# ; self::m::n"), ["self::m::n"]);
    }

    #[test]
    fn inline_modules_are_counted_around_their_paths() {
        let code = code_only(
            "use crate::a;\nmod tests {\n use super::*;\n mod deep { use super::super::b; }\n}\nuse crate::c;",
        );
        let got: Vec<(String, u32)> = paths(&code).into_iter().map(|(s, d)| (s.join("::"), d)).collect();
        assert_eq!(
            got,
            [
                ("crate::a".into(), 0),
                ("super".into(), 1),
                ("super::super::b".into(), 2),
                ("crate::c".into(), 0)
            ]
        );
    }

    #[test]
    fn a_cycle_is_found_and_shown_as_a_chain() {
        let mut g: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
        let mut edge = |a: &str, b: &str| {
            g.entry(a.into()).or_default().insert(b.into());
            g.entry(b.into()).or_default();
        };
        edge("a", "b");
        edge("b", "c");
        edge("c", "a");
        edge("c", "d");
        let sccs = cycles(&g);
        assert_eq!(sccs, vec![vec!["a".to_string(), "b".into(), "c".into()]]);
        assert_eq!(a_cycle(&g, &sccs[0]), ["a", "b", "c", "a"]);
        g.get_mut("c").unwrap().remove("a");
        assert!(cycles(&g).is_empty());
    }

    #[test]
    fn paths_resolve_to_the_longest_module_prefix() {
        let mods: BTreeMap<Module, PathBuf> = ["", "dump", "dump::writer", "capture"]
            .iter()
            .map(|m| (m.to_string(), PathBuf::new()))
            .collect();
        let none = BTreeSet::new();
        let seg = |s: &str| s.split("::").map(str::to_string).collect::<Vec<_>>();
        assert_eq!(
            resolve("capture", (&seg("crate::dump::writer::W"), 0), &mods, &none).as_deref(),
            Some("dump::writer")
        );
        assert_eq!(
            resolve("dump::writer", (&seg("super::X"), 0), &mods, &none).as_deref(),
            Some("dump")
        );
        assert_eq!(
            resolve("dump", (&seg("crate::Item"), 0), &mods, &none).as_deref(),
            Some("")
        );
        assert_eq!(resolve("dump", (&seg("std::io"), 0), &mods, &none), None);
        // `use super::*` in an inline `mod tests` is the file's own module (no edge).
        assert_eq!(
            resolve("dump::writer", (&seg("super::X"), 1), &mods, &none).as_deref(),
            Some("dump::writer")
        );
        assert_eq!(
            resolve("dump::writer", (&seg("super::super::X"), 1), &mods, &none).as_deref(),
            Some("dump")
        );
        let kids: BTreeSet<String> = ["writer".to_string()].into();
        assert_eq!(
            resolve("dump", (&seg("writer::f"), 0), &mods, &kids).as_deref(),
            Some("dump::writer")
        );
    }
}
