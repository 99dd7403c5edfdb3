//! The GL HUD's "top regions" table (issue 6 item 4 on GL): our GL test app's debug groups,
//! sampled by the shim, appear as extra rows of the HUD, as on Vulkan.

use framescope_tests::image::{count_in, diff_bbox, is_text, Rect, Rgb};
use framescope_tests::{Artifacts, Sandbox, Xvfb};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

/// Frame 70 of the GL regions scene (1024x768: the HUD with its table fits in half of it
/// without dropping its graphs) with `config`, as a screenshot.
fn shot(a: &Artifacts, x: &Xvfb, name: &str, config: &str) -> Rgb {
    let mut sb = Sandbox::new(name);
    let png = sb.path("shot.png");
    // The HUD re-renders every 10 ms, so frame 70 shows the regions of the frames before it.
    // Debug-group samples on llvmpipe only when asked for (they change its rendering).
    sb.display(x).set("FRAMESCOPE_GL_LLVMPIPE_SAMPLES", "1").set(
        "FRAMESCOPE_CONFIG",
        format!(
            "samples=label,hud_refresh_ms=10,screenshot=70,screenshot_path={},{config}",
            png.display()
        ),
    );
    let app = a.glapp.display().to_string();
    let out = sb.run_under_framescope(
        a,
        &app,
        &["--frames", "80", "--width", "1024", "--height", "768"],
        LIMIT,
    );
    assert_eq!(out.code(), Some(0), "{name}: {}", out.describe());
    assert!(png.is_file(), "{name}: no screenshot\n{}", out.describe());
    Rgb::read(&png)
}

#[test]
fn gl_debug_groups_fill_the_hud_regions_table() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let off = shot(&a, &x, "gl-regions-hud-off", "hud=0");
    // The timeline rows off: with them the HUD with the table reaches the half of the window a
    // HUD may take and is cut down to fit (356 px high against 319 without the table).
    let plain = shot(&a, &x, "gl-regions-hud-plain", "hud_regions=0,hud_timeline=0");
    let table = shot(&a, &x, "gl-regions-hud-table", "hud_regions=5,hud_timeline=0");
    let plain_rect = diff_bbox(&plain, &off, off.whole(), 0).expect("a HUD without the table");
    let table_rect = diff_bbox(&table, &off, off.whole(), 0).expect("a HUD with the table");
    let (h0, h1) = (plain_rect.y1 - plain_rect.y0, table_rect.y1 - table_rect.y0);
    // A title row plus the scene's groups (Frame, Frame/Main, Frame/Shadows, Frame/Post): at
    // least four more text rows of the 13 px font.
    assert!(h1 >= h0 + 4 * 13, "HUD height {h1} with the table vs {h0} without");
    let extra = Rect {
        x0: table_rect.x0,
        y0: plain_rect.y1,
        x1: table_rect.x1,
        y1: table_rect.y1,
    };
    let text = count_in(&table, extra, is_text);
    assert!(text >= 200, "only {text} text-coloured pixels in the table rows");
}
