//! RGB images read through ImageMagick (`convert ... ppm:-`), so the tests need no image
//! crate, and the pixel comparisons the HUD tests make.

use std::path::Path;
use std::process::Command;

/// The HUD's text colour (`framescope_overlay::ui::TEXT_RGB` is pure white), with a little
/// room for filtering.
pub const TEXT_MIN: u8 = 245;

pub struct Rgb {
    pub w: usize,
    pub h: usize,
    pub px: Vec<u8>,
}

impl Rgb {
    pub fn read(path: &Path) -> Rgb {
        crate::artifacts::require_program("convert");
        let out = Command::new("convert")
            .arg(path)
            .args(["-depth", "8", "ppm:-"])
            .output()
            .expect("run convert");
        assert!(out.status.success(), "convert {}: {:?}", path.display(), out);
        let data = out.stdout;
        // P6\n<w> <h>\n255\n<rgb...>
        let mut fields = Vec::new();
        let mut i = 0;
        while fields.len() < 4 {
            while data[i].is_ascii_whitespace() {
                i += 1;
            }
            let start = i;
            while !data[i].is_ascii_whitespace() {
                i += 1;
            }
            fields.push(String::from_utf8_lossy(&data[start..i]).into_owned());
        }
        assert_eq!(fields[0], "P6");
        let (w, h): (usize, usize) = (fields[1].parse().unwrap(), fields[2].parse().unwrap());
        let px = data[i + 1..].to_vec();
        assert_eq!(px.len(), w * h * 3, "{}", path.display());
        Rgb { w, h, px }
    }

    pub fn at(&self, x: usize, y: usize) -> [u8; 3] {
        let i = (y * self.w + x) * 3;
        [self.px[i], self.px[i + 1], self.px[i + 2]]
    }

    pub fn whole(&self) -> Rect {
        Rect {
            x0: 0,
            y0: 0,
            x1: self.w,
            y1: self.h,
        }
    }
}

/// Inclusive-exclusive pixel rectangle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rect {
    pub x0: usize,
    pub y0: usize,
    pub x1: usize,
    pub y1: usize,
}

impl Rect {
    pub fn contains(&self, x: usize, y: usize) -> bool {
        x >= self.x0 && x < self.x1 && y >= self.y0 && y < self.y1
    }

    pub fn offset(&self, dx: usize, dy: usize) -> Rect {
        Rect {
            x0: self.x0 + dx,
            y0: self.y0 + dy,
            x1: self.x1 + dx,
            y1: self.y1 + dy,
        }
    }

    /// This rectangle cut to `other`.
    pub fn clip(&self, other: Rect) -> Rect {
        Rect {
            x0: self.x0.max(other.x0),
            y0: self.y0.max(other.y0),
            x1: self.x1.min(other.x1).max(self.x0.max(other.x0)),
            y1: self.y1.min(other.y1).max(self.y0.max(other.y0)),
        }
    }

    pub fn area(&self) -> usize {
        (self.x1 - self.x0) * (self.y1 - self.y0)
    }
}

pub fn differs(a: [u8; 3], b: [u8; 3], tol: u8) -> bool {
    a.iter().zip(b).any(|(x, y)| x.abs_diff(y) > tol)
}

/// Bounding box of the pixels that differ by more than `tol` inside `area`.
pub fn diff_bbox(a: &Rgb, b: &Rgb, area: Rect, tol: u8) -> Option<Rect> {
    bbox(area, |x, y| differs(a.at(x, y), b.at(x, y), tol))
}

/// Bounding box of the pixels of `area` for which `pred(x, y)` holds.
pub fn bbox(area: Rect, pred: impl Fn(usize, usize) -> bool) -> Option<Rect> {
    let mut r: Option<Rect> = None;
    for y in area.y0..area.y1 {
        for x in area.x0..area.x1 {
            if pred(x, y) {
                let e = r.get_or_insert(Rect {
                    x0: x,
                    y0: y,
                    x1: x + 1,
                    y1: y + 1,
                });
                e.x0 = e.x0.min(x);
                e.y0 = e.y0.min(y);
                e.x1 = e.x1.max(x + 1);
                e.y1 = e.y1.max(y + 1);
            }
        }
    }
    r
}

pub fn count_in(img: &Rgb, area: Rect, pred: impl Fn([u8; 3]) -> bool) -> usize {
    let mut n = 0;
    for y in area.y0..area.y1 {
        for x in area.x0..area.x1 {
            n += usize::from(pred(img.at(x, y)));
        }
    }
    n
}

pub fn is_text(p: [u8; 3]) -> bool {
    p.iter().all(|&c| c >= TEXT_MIN)
}

/// Pixels of `area` that differ between `a` and `b` (exactly).
pub fn count_differing(a: &Rgb, b: &Rgb, area: Rect) -> usize {
    let mut n = 0;
    for y in area.y0..area.y1 {
        for x in area.x0..area.x1 {
            n += usize::from(differs(a.at(x, y), b.at(x, y), 0));
        }
    }
    n
}

/// Room the HUD leaves around its text: ImGui pads its window by 8 px each way (less a pixel
/// of rounding), and the text of a whole row stays inside its line.
pub const HUD_TEXT_MARGIN: usize = 6;

/// Checks that the HUD whose box is `hud` in `img` ends with whole rows: its text is inside
/// the box with at least [`HUD_TEXT_MARGIN`] pixels to spare on every side, so no row is cut by
/// the box's or the window's edge (a HUD larger than its window shows text up to the window's
/// edge). Returns the text's box.
pub fn assert_whole_rows(img: &Rgb, hud: Rect, what: &str) -> Rect {
    let text = bbox(hud, |x, y| is_text(img.at(x, y))).unwrap_or_else(|| panic!("{what}: no text in the HUD {hud:?}"));
    let margins = [text.x0 - hud.x0, text.y0 - hud.y0, hud.x1 - text.x1, hud.y1 - text.y1];
    assert!(
        margins.iter().all(|&m| m >= HUD_TEXT_MARGIN),
        "{what}: the HUD's text {text:?} is {margins:?} px from the HUD's edges {hud:?} (left, top, right, bottom): a row is cut"
    );
    text
}

/// An antialiased edge of the HUD's text over its opaque black background: the text colour
/// (white) at partial coverage, a neutral grey. The fit's smaller faces are antialiased; the
/// configured one is a bitmap face without such edges.
pub fn is_text_edge(p: [u8; 3]) -> bool {
    p[0] == p[1] && p[1] == p[2] && p[0] > 0 && !is_text(p)
}

/// Checks a with-HUD vs without-HUD pair of the same, deterministic frame (an app whose image
/// is a function of the frame index): the difference is one block at the default top-left
/// place (8 px margin) of plausible HUD size holding text-coloured pixels, every pixel outside
/// it is identical, and nearly every pixel inside changed (a translucent background tints the
/// app's image, an opaque one replaces it: none is left untouched by a bad composite). The
/// HUD's block.
pub fn assert_hud_pair(on: &Rgb, off: &Rgb, what: &str) -> Rect {
    assert_eq!((on.w, on.h), (off.w, off.h), "{what}: sizes");
    let hud = diff_bbox(on, off, on.whole(), 0).unwrap_or_else(|| panic!("{what}: identical images, no HUD"));
    assert!(
        (8..=12).contains(&hud.x0) && (8..=12).contains(&hud.y0),
        "{what}: HUD at {hud:?}"
    );
    let (w, h) = (hud.x1 - hud.x0, hud.y1 - hud.y0);
    assert!(w >= 120 && h >= 60 && w < on.w && h < on.h, "{what}: HUD size {w}x{h}");
    let (text_on, text_off) = (count_in(on, hud, is_text), count_in(off, hud, is_text));
    assert!(
        text_on >= 300 && text_on > 10 * text_off.max(1),
        "{what}: {text_on} text-coloured pixels with the HUD, {text_off} without"
    );
    let inside = count_differing(on, off, hud);
    let outside = count_differing(on, off, on.whole()) - inside;
    assert_eq!(outside, 0, "{what}: pixels outside the HUD differ");
    let changed = inside as f64 / hud.area() as f64;
    assert!(changed > 0.9, "{what}: only {changed:.2} of the HUD's pixels changed");
    hud
}
