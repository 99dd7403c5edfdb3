//! Where the HUD goes on a target of a given size.

use framescope_core::config::HudPosition;

/// Gap between the HUD and the edges it is anchored to, in pixels (before scaling).
pub const MARGIN: u32 = 8;

/// Top-left pixel of a `size` HUD on a `target` image. Corners keep `margin` pixels from their
/// edges; a HUD larger than the target sticks to the anchored edge and is clipped on the
/// other side. An explicit `x,y` is used as given (clipped if outside).
pub fn place(position: HudPosition, size: [u32; 2], target: [u32; 2], margin: u32) -> [i32; 2] {
    let left = margin as i32;
    let top = margin as i32;
    let right = target[0] as i32 - size[0] as i32 - margin as i32;
    let bottom = target[1] as i32 - size[1] as i32 - margin as i32;
    match position {
        HudPosition::TopLeft => [left, top],
        HudPosition::TopRight => [right.max(0), top],
        HudPosition::BottomLeft => [left, bottom.max(0)],
        HudPosition::BottomRight => [right.max(0), bottom.max(0)],
        HudPosition::At(x, y) => [x.min(i32::MAX as u32) as i32, y.min(i32::MAX as u32) as i32],
    }
}

/// The part of a `size` rectangle at `origin` that lies on a `target` image:
/// `(x, y, width, height)`, or `None` when nothing is visible.
pub fn visible(origin: [i32; 2], size: [u32; 2], target: [u32; 2]) -> Option<(u32, u32, u32, u32)> {
    let x0 = origin[0].max(0) as i64;
    let y0 = origin[1].max(0) as i64;
    let x1 = (origin[0] as i64 + size[0] as i64).min(target[0] as i64);
    let y1 = (origin[1] as i64 + size[1] as i64).min(target[1] as i64);
    (x1 > x0 && y1 > y0).then(|| (x0 as u32, y0 as u32, (x1 - x0) as u32, (y1 - y0) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corners_and_offsets() {
        let t = [500, 400];
        let s = [100, 50];
        assert_eq!(place(HudPosition::TopLeft, s, t, 8), [8, 8]);
        assert_eq!(place(HudPosition::TopRight, s, t, 8), [392, 8]);
        assert_eq!(place(HudPosition::BottomLeft, s, t, 8), [8, 342]);
        assert_eq!(place(HudPosition::BottomRight, s, t, 8), [392, 342]);
        assert_eq!(place(HudPosition::At(3, 4), s, t, 8), [3, 4]);
        // Larger than the target: anchored edge wins.
        assert_eq!(place(HudPosition::BottomRight, [600, 500], t, 8), [0, 0]);
    }

    #[test]
    fn visible_part_is_clipped() {
        assert_eq!(visible([8, 8], [100, 50], [500, 400]), Some((8, 8, 100, 50)));
        assert_eq!(visible([450, 380], [100, 50], [500, 400]), Some((450, 380, 50, 20)));
        assert_eq!(visible([500, 0], [100, 50], [500, 400]), None);
        assert_eq!(visible([8, 8], [100, 50], [4, 4]), None);
    }
}
