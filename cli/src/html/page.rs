//! The page itself: the data as JSON in a script element the browser never runs, the page's
//! own script and style inline, and a Content-Security-Policy that lets nothing be fetched,
//! so a page built from a hostile dump cannot call out and opens the same offline.

use serde_json::Value;

/// No fetch of any kind (`default-src 'none'`, no `connect-src`), only the inline script and
/// style, images only as `data:` (the canvas's own exports).
pub const CSP: &str =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

const SCRIPT: &str = include_str!("assets/page.js");
const STYLE: &str = include_str!("assets/page.css");

/// JSON that cannot end the script element it sits in: every `<` (only ever inside a JSON
/// string) is written as its escape, so a label like `</script>` stays text.
fn embed(data: &Value) -> String {
    data.to_string().replace('<', "\\u003c")
}

/// HTML text: a title taken from a dump's file name must not become markup.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn title(data: &Value) -> String {
    let runs = data["runs"].as_array().map_or(0, Vec::len);
    match data["view"].as_str() {
        Some("run") => format!("framescope: {}", data["runs"][0]["name"].as_str().unwrap_or("run")),
        Some("compare") => format!("framescope: comparison of {runs} runs"),
        _ => "framescope: farm".into(),
    }
}

pub fn render(data: &Value) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n\
         <header><h1>{}</h1><p id=\"status\" data-status=\"loading\">loading…</p></header>\n\
         <main id=\"main\"><noscript>This page draws its tables and graphs with JavaScript.</noscript></main>\n\
         <div id=\"tip\" hidden></div>\n\
         <script type=\"application/json\" id=\"fs-data\">{}</script>\n\
         <script>\n{SCRIPT}</script>\n</body>\n</html>\n",
        escape(&title(data)),
        escape(&title(data)),
        embed(data)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_cannot_close_the_data_element() {
        let page = render(&serde_json::json!({"view": "run", "runs": [{"name": "</script><b>"}]}));
        assert_eq!(page.matches("</script>").count(), 2, "{page}");
        assert!(!page.contains("<b>"));
    }
}
