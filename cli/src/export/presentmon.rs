//! PresentMon's CSV columns, one row per frame, for tools that read PresentMon captures.
//! Names are PresentMon 2.x's (its default metrics, `Ms` prefix), with 1.x's and early
//! 2.x's `TimeInSeconds` as the time column (seconds since the dump's start). Columns
//! framescope has no value for are `NA`, PresentMon's own marker: `SyncInterval`,
//! `PresentFlags` always; the display columns (`MsBetweenDisplayChange`, `MsUntilDisplayed`,
//! `Dropped`, `MsDisplayLatency`, `MsDisplayedTime`, `MsAnimationError`) for frames without
//! a display-time source (`display` is `no_source` or `no_report`); `SwapChainAddress`,
//! `AllowsTearing` and `PresentMode` for frames without a swapchain; the CPU columns for
//! frames without the frame timeline's CPU start or time in present (dumps that predate
//! it, the first frame); the GPU columns for frames without GPU times.
//! `MsCPUBusy` and `MsCPUWait` follow PresentMon's definitions (the CPU start to the present
//! call, and the time in it), not the dump's `cpu_busy_ns`/`cpu_wait_ns`, which also count
//! the app's other waits as waiting.
//! PresentMon 2.x's DisplayLatency, DisplayedTime and AnimationError metrics are written as
//! `Ms`-prefixed columns after its 1.x `Dropped` column, at the end, so readers that take
//! columns by name find the older ones where they were.
//! `PresentMode` is the Vulkan present mode's name (`FIFO`, `MAILBOX`, ...), not one of
//! Windows' presentation models.

use super::records::{Frame, Header};
use super::sink::{cell, Sink};
use std::io::{self, Write};

pub const COLUMNS: &str = "Application,ProcessID,SwapChainAddress,PresentRuntime,SyncInterval,PresentFlags,AllowsTearing,PresentMode,TimeInSeconds,MsBetweenPresents,MsBetweenDisplayChange,MsInPresentAPI,MsUntilDisplayed,MsCPUBusy,MsCPUWait,MsGPULatency,MsGPUTime,MsGPUBusy,MsGPUWait,Dropped,MsDisplayLatency,MsDisplayedTime,MsAnimationError";

const NA: &str = "NA";
/// VK_PRESENT_MODE_IMMEDIATE_KHR and FIFO_RELAXED: the modes that may tear.
const TEARING_MODES: [u64; 2] = [0, 3];

pub struct PresentMon<W: Write> {
    out: W,
    app: String,
    pid: String,
    runtime: &'static str,
    start_ns: Option<u64>,
}

impl<W: Write> PresentMon<W> {
    pub fn new(out: W) -> Self {
        PresentMon {
            out,
            app: String::new(),
            pid: NA.into(),
            runtime: "Other",
            start_ns: None,
        }
    }
}

fn ms(ns: Option<u64>) -> String {
    ns.map_or_else(|| NA.into(), |n| format!("{:.4}", n as f64 / 1e6))
}

impl<W: Write> Sink for PresentMon<W> {
    fn header(&mut self, h: &Header) -> io::Result<()> {
        self.app = cell(&h.app_name());
        self.pid = h.pid.map_or_else(|| NA.into(), |p| p.to_string());
        self.runtime = match h.api.as_deref() {
            Some("vulkan") => "Vulkan",
            Some("opengl") => "OpenGL",
            Some("opengles") => "OpenGLES",
            _ => "Other",
        };
        self.start_ns = h.start_ns;
        writeln!(self.out, "{COLUMNS}")
    }

    fn frame(&mut self, f: &Frame) -> io::Result<()> {
        let start = *self.start_ns.get_or_insert(f.t_ns);
        let sc = f.swapchain.as_ref();
        let handle = sc.and_then(|s| s.handle.as_deref()).map_or_else(|| NA.into(), cell);
        let tearing = sc
            .and_then(|s| s.present_mode)
            .map_or_else(|| NA.into(), |m| u8::from(TEARING_MODES.contains(&m)).to_string());
        let mode = sc
            .and_then(|s| s.present_mode_name.as_deref())
            .map_or_else(|| NA.into(), cell);
        // The frame's CPU start: the previous present's return; a dump before the frame
        // timeline has only the previous present's start, which still serves GPU latency.
        let cpu_busy = f.cpu_start_ns.map(|s| f.t_ns.saturating_sub(s));
        let cpu_start = f
            .cpu_start_ns
            .or_else(|| f.cpu_frame_ns.map(|ft| f.t_ns.saturating_sub(ft)));
        let latency = match (cpu_start, f.gpu_begin_ns) {
            (Some(s), Some(g)) if g >= s => Some(g - s),
            _ => None,
        };
        let wait = match (f.gpu_span_ns, f.gpu_busy_ns) {
            (Some(span), Some(busy)) => Some(span.saturating_sub(busy)),
            _ => None,
        };
        // A dropped frame has no display times but a known `Dropped`; a frame without a
        // source has neither.
        let dropped = match f.display.as_deref() {
            Some("displayed") => "0",
            Some("dropped") => "1",
            _ => NA,
        };
        let error = f
            .animation_error_ns
            .map_or_else(|| NA.into(), |n| format!("{:.4}", n as f64 / 1e6));
        let cols = [
            self.app.clone(),
            self.pid.clone(),
            handle,
            self.runtime.into(),
            NA.into(),
            NA.into(),
            tearing,
            mode,
            format!("{:.6}", f.t_ns.saturating_sub(start) as f64 / 1e9),
            ms(f.cpu_frame_ns),
            ms(f.between_display_change_ns),
            ms(f.present_call_ns),
            ms(f.until_displayed_ns),
            ms(cpu_busy),
            ms(f.present_call_ns),
            ms(latency),
            ms(f.gpu_span_ns),
            ms(f.gpu_busy_ns),
            ms(wait),
            dropped.into(),
            ms(f.display_latency_ns),
            ms(f.displayed_time_ns),
            error,
        ];
        writeln!(self.out, "{}", cols.join(","))
    }

    fn finish(&mut self) -> io::Result<Vec<String>> {
        self.out.flush()?;
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_frame_under_the_column_line() {
        let mut p = PresentMon::new(Vec::new());
        let h: Header =
            serde_json::from_str(r#"{"exe":"/usr/bin/vk,cube","pid":42,"api":"vulkan","start_ns":1000000000}"#)
                .unwrap();
        p.header(&h).unwrap();
        let f: Frame = serde_json::from_str(
            r#"{"frame":3,"t_ns":1500000000,"cpu_frame_ns":16000000,"gpu_busy_ns":2000000,"gpu_span_ns":3000000,"gpu_begin_ns":1485000000,
               "swapchain":{"handle":"0x1","present_mode":2,"present_mode_name":"FIFO"}}"#,
        )
        .unwrap();
        p.frame(&f).unwrap();
        // With the frame timeline: the start 13 ms before the present, 0.5 ms in it.
        let f: Frame = serde_json::from_str(
            r#"{"frame":4,"t_ns":1516000000,"cpu_frame_ns":16000000,"cpu_start_ns":1503000000,"present_call_ns":500000,
               "gpu_busy_ns":null,"gpu_span_ns":null,"swapchain":null}"#,
        )
        .unwrap();
        p.frame(&f).unwrap();
        // Displayed 20 ms after its present, 36 ms after its start, on screen for 16.7 ms; then
        // a dropped frame.
        let f: Frame = serde_json::from_str(
            r#"{"frame":5,"t_ns":1532000000,"cpu_frame_ns":16000000,"gpu_busy_ns":null,"gpu_span_ns":null,"swapchain":null,
               "display":"displayed","display_latency_ns":36000000,"until_displayed_ns":20000000,"displayed_time_ns":16700000,
               "between_display_change_ns":16600000,"animation_error_ns":-600000}"#,
        )
        .unwrap();
        p.frame(&f).unwrap();
        let f: Frame = serde_json::from_str(
            r#"{"frame":6,"t_ns":1533000000,"cpu_frame_ns":1000000,"gpu_busy_ns":null,"gpu_span_ns":null,"swapchain":null,
               "display":"dropped","display_latency_ns":null}"#,
        )
        .unwrap();
        p.frame(&f).unwrap();
        let text = String::from_utf8(p.out.clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], COLUMNS);
        assert_eq!(
            lines[1],
            "vk cube,42,0x1,Vulkan,NA,NA,0,FIFO,0.500000,16.0000,NA,NA,NA,NA,NA,1.0000,3.0000,2.0000,1.0000,NA,NA,NA,NA"
        );
        assert_eq!(
            lines[2],
            "vk cube,42,NA,Vulkan,NA,NA,NA,NA,0.516000,16.0000,NA,0.5000,NA,13.0000,0.5000,NA,NA,NA,NA,NA,NA,NA,NA"
        );
        assert_eq!(
            lines[3],
            "vk cube,42,NA,Vulkan,NA,NA,NA,NA,0.532000,16.0000,16.6000,NA,20.0000,NA,NA,NA,NA,NA,NA,0,36.0000,16.7000,-0.6000"
        );
        assert!(lines[4].ends_with(",1,NA,NA,NA"), "{}", lines[4]);
    }
}
