//! Builds synthetic amdgpu `gpu_metrics` blobs, the way the kernel fills them: every byte
//! 0xFF ("not reported"), then the header and the fields a chip reports.
//!
//! Offsets and sizes are the C layouts of `gpu_metrics_vX_Y` in Linux's
//! `drivers/gpu/drm/amd/include/kgd_pp_interface.h` (little-endian, natural alignment),
//! written out here independently of the parser's table so that one checks the other.
//! The committed fixtures (`tests/fixtures/sensors/amdgpu-*/.../gpu_metrics`) are these
//! blobs; `FRAMESCOPE_WRITE_SENSOR_FIXTURES=1 cargo test -p framescope-collectors --test
//! sensors_fixtures` rewrites them.

#![allow(dead_code)]

/// `(format, content)` → struct size in bytes.
pub const SIZES: &[((u8, u8), u16)] = &[
    ((1, 0), 80),
    ((1, 1), 96),
    ((1, 2), 104),
    ((1, 3), 120),
    ((1, 4), 288),
    ((1, 5), 360),
    ((2, 0), 120),
    ((2, 1), 120),
    ((2, 2), 128),
    ((2, 3), 152),
    ((2, 4), 168),
];

pub fn size_of(format: u8, content: u8) -> u16 {
    SIZES
        .iter()
        .find(|(k, _)| *k == (format, content))
        .map(|(_, s)| *s)
        .expect("known revision")
}

/// Field offsets shared by the revisions the parser reads.
pub struct Offsets {
    pub temp: usize,
    pub power: usize,
    pub avg_gfxclk: Option<usize>,
    pub cur_gfxclk: usize,
    pub avg_uclk: Option<usize>,
    pub cur_uclk: usize,
    pub fan: Option<usize>,
}

pub fn offsets(format: u8, content: u8) -> Offsets {
    match (format, content) {
        // u64 system_clock_counter at 8 (after 4 bytes of padding), then temperature_edge.
        (1, 0) => Offsets {
            temp: 16,
            power: 34,
            avg_gfxclk: Some(40),
            cur_gfxclk: 54,
            avg_uclk: Some(44),
            cur_uclk: 58,
            fan: Some(72),
        },
        // temperature_edge right after the header; u64 energy_accumulator at 24.
        (1, 1..=3) => Offsets {
            temp: 4,
            power: 22,
            avg_gfxclk: Some(40),
            cur_gfxclk: 54,
            avg_uclk: Some(44),
            cur_uclk: 58,
            fan: Some(72),
        },
        // temperature_hotspot, curr_socket_power; current_gfxclk[8] after firmware_timestamp.
        (1, 4) => Offsets {
            temp: 4,
            power: 10,
            avg_gfxclk: None,
            cur_gfxclk: 240,
            avg_uclk: None,
            cur_uclk: 280,
            fan: None,
        },
        // v1.4 plus jpeg_activity[32] and two u32 NAK counters.
        (1, 5) => Offsets {
            temp: 4,
            power: 10,
            avg_gfxclk: None,
            cur_gfxclk: 312,
            avg_uclk: None,
            cur_uclk: 352,
            fan: None,
        },
        (2, 0) => Offsets {
            temp: 16,
            power: 44,
            avg_gfxclk: Some(68),
            cur_gfxclk: 80,
            avg_uclk: Some(72),
            cur_uclk: 84,
            fan: None,
        },
        (2, 1..=4) => Offsets {
            temp: 4,
            power: 40,
            avg_gfxclk: Some(64),
            cur_gfxclk: 76,
            avg_uclk: Some(68),
            cur_uclk: 80,
            fan: None,
        },
        _ => panic!("no layout for v{format}.{content}"),
    }
}

/// A blob of `size` bytes with the header and `fields` (offset, u16) set, the rest 0xFF.
pub fn blob(size: u16, format: u8, content: u8, fields: &[(usize, u16)]) -> Vec<u8> {
    let mut b = vec![0xFF; usize::from(size)];
    b[0..2].copy_from_slice(&size.to_le_bytes());
    b[2] = format;
    b[3] = content;
    for &(off, v) in fields {
        b[off..off + 2].copy_from_slice(&v.to_le_bytes());
    }
    b
}

/// Raw field values for a blob of one revision (raw units: v2 temps centi-°C, power mW).
#[derive(Clone, Copy, Debug)]
pub struct Raw {
    pub temp: u16,
    pub power: u16,
    pub avg_gfxclk: u16,
    pub cur_gfxclk: u16,
    pub avg_uclk: u16,
    pub cur_uclk: u16,
    pub fan: u16,
}

pub fn revision_blob(format: u8, content: u8, r: Raw) -> Vec<u8> {
    let o = offsets(format, content);
    let mut f = vec![
        (o.temp, r.temp),
        (o.power, r.power),
        (o.cur_gfxclk, r.cur_gfxclk),
        (o.cur_uclk, r.cur_uclk),
    ];
    if let Some(a) = o.avg_gfxclk {
        f.push((a, r.avg_gfxclk));
    }
    if let Some(a) = o.avg_uclk {
        f.push((a, r.avg_uclk));
    }
    if let Some(a) = o.fan {
        f.push((a, r.fan));
    }
    blob(size_of(format, content), format, content, &f)
}

/// The dGPU fixture: 67 °C edge, 185 W, 2450 MHz average gfx (2500 current), 1249 MHz
/// average memory (1250 current), 1320 rpm; gfx activity 97 % at offset 16.
pub fn fixture_v1_3() -> Vec<u8> {
    let mut b = revision_blob(
        1,
        3,
        Raw {
            temp: 67,
            power: 185,
            avg_gfxclk: 2450,
            cur_gfxclk: 2500,
            avg_uclk: 1249,
            cur_uclk: 1250,
            fan: 1320,
        },
    );
    b[16..18].copy_from_slice(&97u16.to_le_bytes());
    b
}

/// The Instinct fixture: 72 °C hotspot, 550 W, 2100 MHz gfx, 1300 MHz memory, no fan.
pub fn fixture_v1_4() -> Vec<u8> {
    revision_blob(
        1,
        4,
        Raw {
            temp: 72,
            power: 550,
            avg_gfxclk: 0,
            cur_gfxclk: 2100,
            avg_uclk: 0,
            cur_uclk: 1300,
            fan: 0,
        },
    )
}

/// The APU fixture: 51.50 °C (5150 centi-°C), 15.250 W (15250 mW), no average gfx clock
/// (0xFFFF, so the current 1800 MHz is used), 3200 MHz average memory clock.
pub fn fixture_v2_2() -> Vec<u8> {
    revision_blob(
        2,
        2,
        Raw {
            temp: 5150,
            power: 15250,
            avg_gfxclk: 0xFFFF,
            cur_gfxclk: 1800,
            avg_uclk: 3200,
            cur_uclk: 3000,
            fan: 0,
        },
    )
}

/// Fixture path → blob, for the committed fixture files.
pub fn fixtures() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (
            "amdgpu-v1_3/sys/devices/pci0000:00/0000:00:01.1/0000:03:00.0/gpu_metrics",
            fixture_v1_3(),
        ),
        ("amdgpu-v1_4/sys/class/drm/card0/device/gpu_metrics", fixture_v1_4()),
        ("amdgpu-v2_2/sys/class/drm/card1/device/gpu_metrics", fixture_v2_2()),
    ]
}
