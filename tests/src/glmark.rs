//! Reading glmark2's output: shared by the GL tests and `cargo xtask bench`.

/// The final `glmark2 Score: N`, if the output has one.
pub fn score(stdout: &str) -> Option<f64> {
    stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("glmark2 Score:")?.trim().parse().ok())
}

/// Frames glmark2 says its scenes drew: the sum over scene lines of FPS x duration.
pub fn scene_frames(stdout: &str) -> f64 {
    stdout
        .lines()
        .filter_map(|l| {
            let fps: f64 = l.split("FPS: ").nth(1)?.split_whitespace().next()?.parse().ok()?;
            let dur: f64 = l.split("duration=").nth(1)?.split(':').next()?.parse().ok()?;
            Some(fps * dur)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_the_score_and_the_scene_frames() {
        let out = "[build] use-vbo=false: FPS: 1000 FrameTime: 1.000 ms\n\
                   [build] duration=2: FPS: 100 FrameTime: 10.0 ms\n\
                   [texture] duration=2: FPS: 50 FrameTime: 20.0 ms\n\
                   =======\n glmark2 Score: 75 \n";
        assert_eq!(super::score(out), Some(75.0));
        assert_eq!(super::scene_frames(out), 300.0);
        assert_eq!(super::score("no score"), None);
    }
}
