//! PNG screenshots of presented images.

use std::io::BufWriter;
use std::path::Path;

/// Expands a screenshot path template: `%N` is the frame index, then `%p`, `%n`, `%t`, `%%` as
/// for dump paths. `index` > 0 (a second swapchain in the same frame) adds `-index` before the
/// extension.
pub fn expand_path(template: &str, frame: u64, index: usize, pid: u32, exe_name: &str, start_unix_s: u64) -> String {
    // `%%N` is a literal `%N`: protect `%%` first.
    let t = template
        .replace("%%", "\u{0}")
        .replace("%N", &frame.to_string())
        .replace('\u{0}', "%%");
    let home = std::env::var("HOME").ok();
    let mut path = framescope_core::dump::path::expand(&t, pid, exe_name, start_unix_s, home.as_deref());
    if index > 0 {
        let stem_end = match path.rfind('.') {
            Some(dot) if dot > path.rfind('/').map_or(0, |s| s + 1) => dot,
            _ => path.len(),
        };
        path.insert_str(stem_end, &format!("-{index}"));
    }
    path
}

/// [`expand_path`] for this process: its pid, its executable's name and the current time.
pub fn process_path(template: &str, frame: u64, index: usize) -> String {
    let exe = std::fs::read_link("/proc/self/exe")
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "app".into());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    expand_path(template, frame, index, std::process::id(), &exe, now)
}

/// Pixel layout of the image bytes handed to [`write_png`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PixelOrder {
    Rgba,
    Bgra,
}

/// Writes `width` x `height` 8-bit pixels (rows of `row_pitch` bytes) as an RGB PNG. Alpha is
/// dropped: a presented image is opaque.
pub fn write_png(
    path: &Path,
    width: u32,
    height: u32,
    row_pitch: usize,
    order: PixelOrder,
    pixels: &[u8],
) -> Result<(), String> {
    let (w, h) = (width as usize, height as usize);
    if row_pitch < w * 4 || pixels.len() < row_pitch * h.saturating_sub(1) + w * 4 {
        return Err(format!("{} bytes are too few for {width}x{height}", pixels.len()));
    }
    let mut rgb = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        for px in pixels[y * row_pitch..y * row_pitch + w * 4].chunks_exact(4) {
            match order {
                PixelOrder::Rgba => rgb.extend_from_slice(&px[..3]),
                PixelOrder::Bgra => rgb.extend_from_slice(&[px[2], px[1], px[0]]),
            }
        }
    }
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut enc = png::Encoder::new(BufWriter::new(file), width, height);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut w = enc.write_header().map_err(|e| e.to_string())?;
    w.write_image_data(&rgb).map_err(|e| e.to_string())?;
    w.finish().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_template() {
        assert_eq!(expand_path("/t/s-%p-%N.png", 7, 0, 42, "app", 0), "/t/s-42-7.png");
        assert_eq!(expand_path("/t/s-%N.png", 7, 2, 42, "app", 0), "/t/s-7-2.png");
        assert_eq!(expand_path("/t.d/shot", 7, 1, 42, "app", 0), "/t.d/shot-1");
        assert_eq!(expand_path("/t/%%N-%n.png", 7, 0, 42, "app", 0), "/t/%N-app.png");
    }

    #[test]
    fn writes_a_readable_png_with_swapped_channels() {
        let dir = std::env::temp_dir().join(format!("framescope-png-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.png");
        // 2x1, row pitch 12 (4 bytes of padding), BGRA: blue then red.
        let px = [255, 0, 0, 255, 0, 0, 255, 255, 9, 9, 9, 9];
        write_png(&path, 2, 1, 12, PixelOrder::Bgra, &px).unwrap();
        let dec = png::Decoder::new(std::fs::File::open(&path).unwrap());
        let mut r = dec.read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size()];
        let info = r.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (2, 1));
        assert_eq!(&buf[..6], &[0, 0, 255, 255, 0, 0]);
        assert!(write_png(&path, 4, 4, 16, PixelOrder::Rgba, &px).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
