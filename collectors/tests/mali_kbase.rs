//! The kbase Mali source driven through the syscall seam against a fake kbase driver of a
//! G76-like GPU with a sparse core mask: the call sequence, per-frame raw and derived values
//! against hand computations, frame tags, refusals, garbage from the kernel, and no leaks.

mod support {
    pub mod kbase_fake;
    pub mod mali_expected;
    pub mod shared_sys;
}

use framescope_collectors::mali::MaliSource;
use framescope_collectors::seam::ScriptedFs;
use framescope_collectors::sys::fake::{Call, FakeSys};
use framescope_collectors::{CounterSource, ReadError, StartError};
use std::sync::{Arc, Mutex};
use support::kbase_fake::{self as fx, Model, Quirk};
use support::mali_expected::{close, expected};
use support::shared_sys::SharedSys;

fn source(model: &Model) -> (MaliSource, Arc<Mutex<FakeSys>>) {
    let mut sys = FakeSys::default();
    sys.node("/dev/mali0", model.node());
    let (shared, inner) = SharedSys::new(sys, ScriptedFs::new());
    (MaliSource::with_sys(Box::new(shared)), inner)
}

/// The log as `open`, `ioctl <fd> <request>`, `poll <fd>`, `mmap <fd> <len>`, `munmap`,
/// `close <fd>`, each with `!` when it failed.
fn brief(log: &[Call]) -> Vec<String> {
    log.iter()
        .map(|c| match c {
            Call::Open { path, ok } => format!("open {}{}", path.display(), if *ok { "" } else { " !" }),
            Call::Close(fd) => format!("close {}", fd.0),
            Call::Ioctl { fd, request, ret } => {
                format!("ioctl {} {request:#x}{}", fd.0, if ret.is_some() { "" } else { " !" })
            }
            Call::Read { fd, .. } => format!("read {}", fd.0),
            Call::Poll { fd, readable } => format!("poll {}{}", fd.0, if *readable { "" } else { " !" }),
            Call::Mmap { fd, len, ok, .. } => format!("mmap {} {len}{}", fd.0, if *ok { "" } else { " !" }),
            Call::Munmap(m) => format!("munmap {}", m.0),
        })
        .collect()
}

fn check_frame(src: &MaliSource, out: &[f64], k: f64) {
    for (name, want) in expected(k) {
        let i = src
            .catalogue()
            .iter()
            .position(|c| c.name == name)
            .unwrap_or_else(|| panic!("{name} not in the catalogue"));
        assert!(close(out[i], want), "{name} in dump {k}: got {}, want {want}", out[i]);
    }
}

fn no_leaks(sys: &Arc<Mutex<FakeSys>>, model: &Model) {
    let s = sys.lock().unwrap();
    assert_eq!((s.open_fds(), s.live_maps()), (0, 0), "fd or mapping leaked");
    assert_eq!(model.seen.lock().unwrap().outstanding, 0, "a buffer was not given back");
}

#[test]
fn vinstr_session_follows_the_kbase_protocol_and_values_match_the_hand_computation() {
    let model = Model::jm();
    let (mut src, sys) = source(&model);
    src.start().unwrap();
    assert_eq!(src.backend(), Some("vinstr"));
    let mut out = vec![0.0; src.catalogue().len()];
    for (k, frame) in [(1u64, 41u64), (2, 42)] {
        src.frame_marked(frame, 0);
        let w = src.read(0, &mut out).unwrap();
        assert_eq!(
            (w.begin_ns, w.end_ns),
            (fx::T0 + fx::SPAN_NS * (k - 1), fx::T0 + fx::SPAN_NS * k)
        );
        assert_eq!(src.last_dump_tag(), Some(frame));
        check_frame(&src, &out, k as f64);
    }
    assert_eq!(model.seen.lock().unwrap().set_flags, Some(1 << 1));
    drop(src);
    let ring = fx::DUMP_BYTES * 16;
    let dump = [
        "ioctl 4 0x4004be10",
        "poll 4",
        "ioctl 4 0x8020be20",
        "ioctl 4 0x4020be21",
    ];
    let mut want: Vec<String> = vec![
        "open /dev/mali0".into(),
        "ioctl 3 0xc0048000".into(), // VERSION_CHECK (JM)
        "ioctl 3 0x40048001".into(), // SET_FLAGS
        "ioctl 3 0x40108003".into(), // GET_GPUPROPS: size
        "ioctl 3 0x40108003".into(), // GET_GPUPROPS: blob
        "ioctl 3 0x40148008".into(), // HWCNT_READER_SETUP -> fd 4
        "ioctl 4 0x4008beff".into(), // GET_API_VERSION_WITH_FEATURES
        "ioctl 4 0x8004be00".into(), // GET_HWVER
        "ioctl 4 0x8004be01".into(), // GET_BUFFER_SIZE
        format!("mmap 4 {ring}"),
        "ioctl 4 0x4004be30".into(), // SET_INTERVAL 0
    ];
    for _ in 0..3 {
        // The priming dump, then one per read.
        want.extend(dump.iter().map(|s| s.to_string()));
    }
    want.extend(["munmap 0", "close 4", "close 3"].map(String::from));
    assert_eq!(brief(sys.lock().unwrap().log()), want);
    no_leaks(&sys, &model);
}

#[test]
fn kinstr_prfcnt_session_tags_samples_with_the_frame_and_values_match() {
    let model = Model::csf();
    let (mut src, sys) = source(&model);
    src.start().unwrap();
    assert_eq!(src.backend(), Some("kinstr_prfcnt"));
    let mut out = vec![0.0; src.catalogue().len()];
    for (k, frame) in [(1u64, 7u64), (2, 9)] {
        src.frame_marked(frame, 0);
        let w = src.read(0, &mut out).unwrap();
        assert_eq!(
            (w.begin_ns, w.end_ns),
            (fx::T0 + fx::SPAN_NS * (k - 1), fx::T0 + fx::SPAN_NS * k)
        );
        // The tag came back from the kernel in the sample's user_data.
        assert_eq!(src.last_dump_tag(), Some(frame));
        check_frame(&src, &out, k as f64);
    }
    {
        let seen = model.seen.lock().unwrap();
        assert_eq!(seen.sample_tags, vec![7, 9]);
        // Manual mode, every counted block type enabled.
        assert_eq!(seen.kinstr_setup, Some((0, vec![0, 1, 2, 3])));
    }
    drop(src);
    let sample = ["ioctl 4 0x4010bf00", "ioctl 4 0x8010bf01", "ioctl 4 0x4010bf10"];
    let mut want: Vec<String> = vec![
        "open /dev/mali0".into(),
        "ioctl 3 0xc0048000 !".into(), // JM handshake: not this kernel
        "ioctl 3 0xc0048034".into(),   // VERSION_CHECK (CSF)
        "ioctl 3 0x40048001".into(),
        "ioctl 3 0x40108003".into(),
        "ioctl 3 0x40108003".into(),
        "ioctl 3 0xc0108038".into(), // ENUM_INFO: sizes
        "ioctl 3 0xc0108038".into(), // ENUM_INFO: items
        "ioctl 3 0xc0108039".into(), // SETUP -> fd 4
        format!("mmap 4 {}", fx::KINSTR_MAP),
        "ioctl 4 0x4010bf00".into(), // CMD START
    ];
    for _ in 0..2 {
        want.extend(sample.iter().map(|s| s.to_string()));
    }
    want.extend(["ioctl 4 0x4010bf00", "munmap 0", "close 4", "close 3"].map(String::from));
    assert_eq!(brief(sys.lock().unwrap().log()), want);
    no_leaks(&sys, &model);
}

#[test]
fn newer_jm_kernels_get_kinstr_prfcnt_and_older_csf_ones_vinstr() {
    let mut model = Model::jm();
    model.version = (11, 38);
    let (mut src, _) = source(&model);
    src.start().unwrap();
    assert_eq!(src.backend(), Some("kinstr_prfcnt"));
    let mut model = Model::csf();
    model.version = (1, 12);
    let (mut src, _) = source(&model);
    src.start().unwrap();
    assert_eq!(src.backend(), Some("vinstr"));
}

#[test]
fn shader_cores_are_placed_by_physical_index() {
    // Slots 3 and 6 of the dump are poison (0xDEAD0000 in every counter). Reading the first
    // six slots as cores 0..5 would add slot 3's poison and miss core 7.
    let model = Model::jm();
    let (mut src, _) = source(&model);
    src.start().unwrap();
    let mut out = vec![0.0; src.catalogue().len()];
    src.read(0, &mut out).unwrap();
    let at = |n: &str| src.catalogue().iter().position(|c| c.name == n).unwrap();
    assert_eq!(
        out[at("mali_fragment_shader_cycles")],
        50_000.0 * (1.0 + 2.0 + 3.0 + 5.0 + 6.0 + 8.0)
    );
    assert_eq!(out[at("mali_compute_shader_cycles")], 10_000.0 * 25.0);
    assert_eq!(src.gpu_props().unwrap().num_cores(), 6);
}

fn start_err(model: &Model) -> (StartError, Arc<Mutex<FakeSys>>) {
    let (mut src, sys) = source(model);
    let e = src.start().unwrap_err();
    drop(src);
    (e, sys)
}

#[test]
fn a_kernel_refusing_setup_makes_the_source_unavailable_with_the_reason() {
    for model in [
        Model::jm().quirk(Quirk::RefuseSetup(libc::EPERM)),
        Model::csf().quirk(Quirk::RefuseSetup(libc::EPERM)),
        Model::jm().quirk(Quirk::RefuseSetup(libc::ENOTTY)),
    ] {
        let (e, sys) = start_err(&model);
        let StartError::Unavailable(why) = &e else {
            panic!("{e:?}")
        };
        assert!(why.contains("refused the"), "{why}");
        assert!(why.contains("errno 1") || why.contains("errno 25"), "{why}");
        no_leaks(&sys, &model);
    }
    let (e, _) = start_err(&Model::jm().quirk(Quirk::RefuseSetup(libc::EBUSY)));
    assert!(matches!(e, StartError::Retry(_)), "{e:?}");
}

#[test]
fn a_missing_device_is_reported_as_such() {
    let mut src = MaliSource::with_sys(Box::new(FakeSys::default()));
    assert_eq!(src.start(), Err(StartError::Unavailable("no /dev/mali0".into())));
    let mut old = Model::jm();
    old.version = (10, 6);
    let (e, _) = start_err(&old);
    assert!(e.reason().contains("no supported counter interface"), "{e:?}");
}

#[test]
fn garbage_from_the_kernel_gives_errors_never_panics_and_leaks_nothing() {
    for quirk in [Quirk::BadBufferIndex, Quirk::TinyMetadataItems, Quirk::TruncatedProps] {
        let model = if quirk == Quirk::TinyMetadataItems {
            Model::csf()
        } else {
            Model::jm()
        };
        let model = model.quirk(quirk);
        let (e, sys) = start_err(&model);
        assert!(matches!(e, StartError::Unavailable(_)), "{quirk:?}: {e:?}");
        no_leaks(&sys, &model);
    }
    for quirk in [Quirk::ShortBuffers, Quirk::BadMetadataOffset, Quirk::BadValuesOffset] {
        let model = if quirk == Quirk::ShortBuffers {
            Model::jm()
        } else {
            Model::csf()
        };
        let model = model.quirk(quirk);
        let (mut src, sys) = source(&model);
        src.start().unwrap();
        let mut out = vec![0.0; src.catalogue().len()];
        let e = src.read(0, &mut out).unwrap_err();
        assert!(matches!(e, ReadError::Lost(_)), "{quirk:?}: {e:?}");
        // A lost session is closed at once, before the source is dropped.
        no_leaks(&sys, &model);
        drop(src);
    }
}
