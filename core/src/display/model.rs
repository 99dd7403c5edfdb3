//! The display-time model's types: sources, reports, a frame's display part.

/// Where a frame's display time came from, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DisplaySource {
    /// `VK_EXT_present_timing`: the driver's stage time on a calibrated domain.
    PresentTiming,
    /// `VK_KHR_present_wait`: when framescope's waiting thread saw the present id reach the
    /// screen (the wait's return, so a little after it).
    PresentWait,
    /// The X11 Present extension's `PresentCompleteNotify` for the app's window (ust).
    X11Present,
    /// Wayland `wp_presentation` feedback for the app's surface commit.
    WaylandPresentation,
}

impl DisplaySource {
    pub const ALL: [DisplaySource; 4] = [
        DisplaySource::PresentTiming,
        DisplaySource::PresentWait,
        DisplaySource::X11Present,
        DisplaySource::WaylandPresentation,
    ];

    /// Name in the dump's `display_source`.
    pub const fn name(self) -> &'static str {
        match self {
            DisplaySource::PresentTiming => "present_timing",
            DisplaySource::PresentWait => "present_wait",
            DisplaySource::X11Present => "x11_present",
            DisplaySource::WaylandPresentation => "wayland_presentation",
        }
    }

    pub(crate) fn from_index(i: u8) -> Option<DisplaySource> {
        Self::ALL.get(usize::from(i)).copied()
    }
}

/// How the frame reached the screen, where the source says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PresentationMode {
    #[default]
    Unknown,
    /// Scanned out directly (X11 Present `Flip`, Wayland `ZERO_COPY`).
    Flip,
    /// Copied into the window (X11 Present `Copy`/`SuboptimalCopy`).
    Copy,
    /// Composited by a Wayland compositor (feedback without `ZERO_COPY`).
    Composited,
}

impl PresentationMode {
    /// Name in the dump's `display_mode`; `None` for unknown.
    pub const fn name(self) -> Option<&'static str> {
        match self {
            PresentationMode::Unknown => None,
            PresentationMode::Flip => Some("flip"),
            PresentationMode::Copy => Some("copy"),
            PresentationMode::Composited => Some("composited"),
        }
    }
}

/// What a display-time source learnt about one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DisplayReport {
    /// The frame index (the session's, as `close` returned it).
    pub frame: u64,
    pub source: DisplaySource,
    /// When it reached the screen; `None`: it never did (replaced before a refresh: X11
    /// Present `Skip`, Wayland `discarded`).
    pub shown_ns: Option<u64>,
    pub mode: PresentationMode,
    /// The display's refresh period, where the source says.
    pub refresh_ns: Option<u64>,
}

/// A frame's display state once joined.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DisplayState {
    /// No display-time source for this frame; [`FrameDisplay::why_none`] says why.
    #[default]
    NoSource,
    /// It reached the screen.
    Displayed,
    /// It was replaced before it reached the screen.
    Dropped,
    /// A source runs but said nothing about this frame within the join's bound (`join::BOUND_NS`).
    NoReport,
}

impl DisplayState {
    /// Name in the dump's `display`.
    pub const fn name(self) -> &'static str {
        match self {
            DisplayState::NoSource => "no_source",
            DisplayState::Displayed => "displayed",
            DisplayState::Dropped => "dropped",
            DisplayState::NoReport => "no_report",
        }
    }

    pub const ALL: [DisplayState; 4] = [
        DisplayState::NoSource,
        DisplayState::Displayed,
        DisplayState::Dropped,
        DisplayState::NoReport,
    ];
}

/// Why a frame has no display-time source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NoSourceReason {
    /// No source was found for this window or swapchain (yet).
    #[default]
    NoneFound,
    /// The frame ended at a frame boundary, not a present: nothing was displayed.
    NotPresented,
    /// The window is presented without the X11 Present extension (Mesa's software drivers put
    /// images with `PutImage`; NVIDIA's GLX on Xvfb (580) does not use Present either), so the
    /// X server reports nothing.
    SoftwarePresent,
    /// The app presents to no window system framescope can watch (headless, direct display).
    NoWindowSystem,
    /// `display_times=off` in the config.
    Disabled,
}

impl NoSourceReason {
    pub const ALL: [NoSourceReason; 5] = [
        NoSourceReason::NoneFound,
        NoSourceReason::NotPresented,
        NoSourceReason::SoftwarePresent,
        NoSourceReason::NoWindowSystem,
        NoSourceReason::Disabled,
    ];

    /// Name in the dump's `display_none_reason`.
    pub const fn name(self) -> &'static str {
        match self {
            NoSourceReason::NoneFound => "none_found",
            NoSourceReason::NotPresented => "not_presented",
            NoSourceReason::SoftwarePresent => "software_present",
            NoSourceReason::NoWindowSystem => "no_window_system",
            NoSourceReason::Disabled => "disabled",
        }
    }

    pub(crate) fn from_index(i: u8) -> NoSourceReason {
        Self::ALL.get(usize::from(i)).copied().unwrap_or_default()
    }
}

/// A frame's display part: set by the dump writer's join, `Copy` like the rest of the record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameDisplay {
    pub state: DisplayState,
    pub source: Option<DisplaySource>,
    pub why_none: Option<NoSourceReason>,
    pub shown_ns: Option<u64>,
    pub mode: PresentationMode,
    pub refresh_ns: Option<u64>,
    /// Until the next displayed frame reached the screen (PresentMon's DisplayedTime);
    /// `None` when dropped or when no later frame was displayed within the bound.
    pub displayed_ns: Option<u64>,
    /// Since the previous displayed frame reached the screen (MsBetweenDisplayChange).
    pub between_changes_ns: Option<u64>,
    /// CPU start step minus display step against the previous displayed frame
    /// (MsAnimationError), signed.
    pub animation_error_ns: Option<i64>,
}

impl FrameDisplay {
    /// On screen − CPU start (PresentMon's DisplayLatency).
    pub fn latency_ns(&self, cpu_start_ns: Option<u64>) -> Option<u64> {
        Some(self.shown_ns?.saturating_sub(cpu_start_ns?))
    }

    /// On screen − the present call (MsUntilDisplayed); `t_ns` is the frame's end.
    pub fn until_displayed_ns(&self, t_ns: u64) -> Option<u64> {
        Some(self.shown_ns?.saturating_sub(t_ns))
    }
}
