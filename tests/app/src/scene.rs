//! What one frame draws, and how that work is cut into command buffers.
//!
//! Pure data so the totals the tests rely on can be unit-tested without Vulkan.

use crate::args::{Args, SceneKind};

/// A labelled group of identical draws.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Region {
    pub label: &'static str,
    pub draws: u32,
    pub vertices_per_draw: u32,
    /// The full-screen triangle instead of the small-triangle grid.
    pub fullscreen: bool,
    /// Scissored to one pixel: the draws' vertices are shaded, almost no pixel is.
    pub vertex_only: bool,
    pub color: [f32; 4],
}

pub const FRAME_LABEL: &str = "Frame";

pub fn regions(args: &Args) -> Vec<Region> {
    match args.scene {
        SceneKind::Basic => vec![Region {
            label: "Draws",
            draws: args.draws,
            vertices_per_draw: 3,
            fullscreen: false,
            vertex_only: false,
            color: [0.9, 0.6, 0.1, 1.0],
        }],
        SceneKind::Regions => vec![
            Region {
                label: "Shadows",
                draws: 10,
                vertices_per_draw: 300,
                fullscreen: false,
                vertex_only: false,
                color: [0.2, 0.2, 0.2, 1.0],
            },
            Region {
                label: "Main",
                draws: 100,
                vertices_per_draw: 36,
                fullscreen: false,
                vertex_only: false,
                color: [0.1, 0.7, 0.3, 1.0],
            },
            Region {
                label: "Post",
                draws: 1,
                vertices_per_draw: 3,
                fullscreen: true,
                vertex_only: false,
                // Translucent-looking but opaque: blending is off, it simply
                // overwrites everything so the image is one flat colour.
                color: [0.15, 0.15, 0.4, 1.0],
            },
        ],
        SceneKind::Passes => vec![
            Region {
                label: "Pixels",
                draws: args.draws,
                vertices_per_draw: 3,
                fullscreen: true,
                vertex_only: false,
                color: [0.6, 0.2, 0.2, 1.0],
            },
            Region {
                label: "Vertices",
                draws: args.draws,
                vertices_per_draw: 30_000,
                fullscreen: false,
                vertex_only: true,
                color: [0.2, 0.2, 0.6, 1.0],
            },
        ],
    }
}

/// A run of consecutive draws of one region into one target, recorded as one
/// rendering instance (vkCmdBeginRendering .. vkCmdEndRendering).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segment {
    pub target: usize,
    pub region: usize,
    pub first_draw: u32,
    pub draw_count: u32,
    /// First rendering into this target in the frame: discard + clear.
    pub first_use: bool,
}

/// The contents of one primary command buffer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Chunk {
    /// Index of the recording thread.
    pub thread: usize,
    pub begins_frame: bool,
    pub ends_frame: bool,
    pub segments: Vec<Segment>,
}

/// Splits the frame into `chunks` primaries: the work list (every target gets
/// every region, in order) is cut into contiguous, nearly equal slices of
/// draws, so any split keeps the same totals and the same order on the queue.
pub fn plan(regions: &[Region], targets: usize, chunks: usize, threads: usize) -> Vec<Chunk> {
    let per_target: u32 = regions.iter().map(|r| r.draws).sum();
    let total = per_target as usize * targets;
    let mut out = Vec::with_capacity(chunks);
    let mut seen_target = vec![false; targets];
    for c in 0..chunks {
        let (start, end) = (c * total / chunks, (c + 1) * total / chunks);
        let mut chunk = Chunk {
            thread: c % threads,
            begins_frame: c == 0,
            ends_frame: c + 1 == chunks,
            segments: Vec::new(),
        };
        for item in start..end {
            let target = item / per_target as usize;
            let mut within = (item % per_target as usize) as u32;
            let mut region = 0;
            while within >= regions[region].draws {
                within -= regions[region].draws;
                region += 1;
            }
            match chunk.segments.last_mut() {
                Some(s) if s.target == target && s.region == region => s.draw_count += 1,
                _ => {
                    chunk.segments.push(Segment {
                        target,
                        region,
                        first_draw: within,
                        draw_count: 1,
                        first_use: !seen_target[target],
                    });
                    seen_target[target] = true;
                }
            }
        }
        out.push(chunk);
    }
    out
}

pub fn draws_per_target(regions: &[Region]) -> u64 {
    regions.iter().map(|r| u64::from(r.draws)).sum()
}

pub fn vertices_per_target(regions: &[Region]) -> u64 {
    regions
        .iter()
        .map(|r| u64::from(r.draws) * u64::from(r.vertices_per_draw))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regions_scene() -> Vec<Region> {
        let args = Args {
            scene: SceneKind::Regions,
            ..Args::default()
        };
        regions(&args)
    }

    #[test]
    fn regions_totals() {
        let r = regions_scene();
        assert_eq!(draws_per_target(&r), 111);
        assert_eq!(vertices_per_target(&r), 3000 + 3600 + 3);
    }

    #[test]
    fn split_keeps_totals_and_order() {
        let r = regions_scene();
        for chunks in 1..8 {
            for targets in 1..3 {
                let plan = plan(&r, targets, chunks, 3);
                assert_eq!(plan.len(), chunks);
                assert!(plan[0].begins_frame && plan[chunks - 1].ends_frame);
                let segs: Vec<_> = plan.iter().flat_map(|c| c.segments.clone()).collect();
                for t in 0..targets {
                    for (ri, region) in r.iter().enumerate() {
                        let mut next = 0;
                        for s in segs.iter().filter(|s| s.target == t && s.region == ri) {
                            assert_eq!(s.first_draw, next);
                            next += s.draw_count;
                        }
                        assert_eq!(next, region.draws);
                    }
                    let first: Vec<_> = segs.iter().filter(|s| s.target == t).collect();
                    assert!(first[0].first_use);
                    assert!(first[1..].iter().all(|s| !s.first_use));
                }
            }
        }
    }

    #[test]
    fn the_passes_scene_is_a_pixel_pass_and_a_vertex_only_pass_of_n_draws() {
        let args = Args {
            scene: SceneKind::Passes,
            draws: 7,
            ..Args::default()
        };
        let r = regions(&args);
        assert_eq!(r.iter().map(|r| r.label).collect::<Vec<_>>(), ["Pixels", "Vertices"]);
        assert!(r[0].fullscreen && !r[0].vertex_only);
        assert!(!r[1].fullscreen && r[1].vertex_only);
        assert_eq!(draws_per_target(&r), 14);
        assert_eq!(vertices_per_target(&r), 7 * 3 + 7 * 30_000);
    }

    #[test]
    fn one_chunk_one_segment_per_region() {
        let r = regions_scene();
        let plan = plan(&r, 1, 1, 1);
        let counts: Vec<_> = plan[0].segments.iter().map(|s| s.draw_count).collect();
        assert_eq!(counts, vec![10, 100, 1]);
    }
}
