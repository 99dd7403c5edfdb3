//! `framescope report --html OUT DUMP...`: one self-contained HTML page that opens from disk,
//! offline. One dump gives a run view, several a comparison (the first is the base, as in
//! `compare`), a directory a farm view (its dumps grouped by a header field). Every statistic
//! is computed here, with the code `report` and `compare` use, and embedded as JSON; the
//! page's own script (assets/) only draws it, so the page cannot disagree with the commands.

mod counter_series;
mod data;
mod farm;
mod farm_parquet;
mod page;

use crate::text::show;
use serde_json::{json, Value};
use std::ffi::{OsStr, OsString};
use std::path::Path;

pub use page::CSP;

/// What the page shows, by the paths given.
enum View {
    Run(OsString),
    Compare(Vec<OsString>),
    /// A directory's dumps, or (`true`) its Parquet exports.
    Farm(Vec<OsString>, bool),
}

/// The runs of a farm's directory: its `*.jsonl` dumps, by name, else its `*.parquet`
/// exports (`true`).
fn dumps_in(dir: &Path) -> Result<(Vec<OsString>, bool), String> {
    let entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read '{}': {e}", show(dir.as_os_str())))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    let with = |ext: &str| {
        let mut v: Vec<OsString> = entries
            .iter()
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .map(|p| p.clone().into_os_string())
            .collect();
        v.sort();
        v
    };
    match (with("jsonl"), with("parquet")) {
        (d, _) if !d.is_empty() => Ok((d, false)),
        (_, p) if !p.is_empty() => Ok((p, true)),
        _ => Err(format!(
            "'{}' holds no *.jsonl dump and no *.parquet export",
            show(dir.as_os_str())
        )),
    }
}

fn view_of(paths: &[OsString]) -> Result<View, String> {
    match paths {
        [one] if Path::new(one).is_dir() => {
            let (paths, parquet) = dumps_in(Path::new(one))?;
            Ok(View::Farm(paths, parquet))
        }
        [one] => Ok(View::Run(one.clone())),
        many if many.iter().any(|p| Path::new(p).is_dir()) => {
            Err("a directory is a farm view on its own: pass it alone".into())
        }
        many => Ok(View::Compare(many.to_vec())),
    }
}

/// Each dump after the first against the first, as `compare BASE NEW` judges it. The pairs
/// are independent (each bootstrap seeds its own generator), so they run on every core: on
/// million-frame runs a pair's bootstrap takes seconds.
fn comparisons(paths: &[OsString]) -> Vec<Value> {
    let base = &paths[0];
    let one = |new: &OsString| {
        let names = json!({"base": data::name_of(base), "new": data::name_of(new)});
        match crate::compare::default_json(base, new) {
            Ok((result, exit)) => json!({"runs": names, "result": result, "exit": exit}),
            Err(e) => json!({"runs": names, "error": e, "exit": 2}),
        }
    };
    let news = &paths[1..];
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(news.len().max(1));
    let chunk = news.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = news
            .chunks(chunk)
            .map(|part| s.spawn(move || part.iter().map(one).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// The page's data for `view`.
fn data_of(view: &View, group_by: &str, by_frames: bool) -> Result<Value, String> {
    let mut v = match view {
        View::Run(p) => json!({"view": "run", "runs": [data::run(p, true)?]}),
        View::Compare(ps) => {
            let runs = ps.iter().map(|p| data::run(p, true)).collect::<Result<Vec<_>, _>>()?;
            json!({"view": "compare", "runs": runs, "comparisons": comparisons(ps)})
        }
        View::Farm(ps, false) => json!({"view": "farm", "farm": farm::farm(ps, group_by, by_frames)?}),
        View::Farm(ps, true) => json!({"view": "farm", "farm": farm::farm_of_exports(ps, group_by, by_frames)?}),
    };
    v["framescope_version"] = env!("CARGO_PKG_VERSION").into();
    Ok(v)
}

/// Writes the page for `paths` to `out`; the exit status `report` gives (1: not written).
/// `by_frames`: the farm view aggregates a group over its runs' frames concatenated, not over
/// its runs' statistics.
pub fn main(out: &OsStr, paths: &[OsString], group_by: &str, by_frames: bool) -> i32 {
    let page = view_of(paths)
        .and_then(|v| data_of(&v, group_by, by_frames))
        .map(|d| page::render(&d));
    let page = match page {
        Ok(p) => p,
        Err(e) => {
            eprintln!("framescope: report --html: {e}");
            return 1;
        }
    };
    if let Err(e) = std::fs::write(out, page) {
        eprintln!("framescope: report --html: cannot write '{}': {e}", show(out));
        return 1;
    }
    0
}
