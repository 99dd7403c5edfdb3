//! The Panfrost source against a fake Panfrost render node: node discovery through sysfs,
//! the `unstable_ioctls` module parameter, GET_PARAM, PERFCNT_ENABLE, PERFCNT_DUMP into the
//! user buffer, decoding of the same v5 dump the kbase fixture uses, and single-user EBUSY.

mod support {
    pub mod kbase_fake;
    pub mod mali_expected;
    pub mod shared_sys;
}

use framescope_collectors::mali::panfrost::UNSTABLE_IOCTLS_FIX;
use framescope_collectors::mali::PanfrostSource;
use framescope_collectors::seam::ScriptedFs;
use framescope_collectors::sys::fake::{FakeFile, FakeSys, IoctlReply};
use framescope_collectors::sys::{Access, IoctlArg};
use framescope_collectors::{CounterSource, ReadError, StartError};
use std::io;
use std::sync::{Arc, Mutex};
use support::kbase_fake::{self as fx};
use support::mali_expected::{close, expected};
use support::shared_sys::SharedSys;

// Published numbers (panfrost_drm.h; vendor-counter-backends.md, Appendix A).
const GET_PARAM: u64 = 0xC010_6444;
const PERFCNT_ENABLE: u64 = 0x4008_6446;
const PERFCNT_DUMP: u64 = 0x4008_6447;

#[derive(Default)]
struct Seen {
    enabled: Option<(u32, u32)>,
    dumps: u64,
}

struct Panfrost {
    seen: Arc<Mutex<Seen>>,
    busy: bool,
}

impl FakeFile for Panfrost {
    fn ioctl(&mut self, request: u64, arg: IoctlArg<'_>) -> io::Result<IoctlReply> {
        match (request, arg) {
            (GET_PARAM, IoctlArg::Struct(s)) => {
                let value: u64 = match u32::from_le_bytes(s[0..4].try_into().unwrap()) {
                    0 => 0x7211,        // GPU_PROD_ID: G76
                    1 => fx::CORE_MASK, // SHADER_PRESENT
                    7 => 0x0700_0206,   // L2_FEATURES: 128-bit bus
                    10 => 0x0000_0101,  // MEM_FEATURES: bits 11:8 = 1, so 2 L2 slices
                    _ => return Err(io::Error::from_raw_os_error(libc::EINVAL)),
                };
                s[8..16].copy_from_slice(&value.to_le_bytes());
            }
            (PERFCNT_ENABLE, IoctlArg::Struct(s)) => {
                if self.busy {
                    return Err(io::Error::from_raw_os_error(libc::EBUSY));
                }
                let w = |at: usize| u32::from_le_bytes(s[at..at + 4].try_into().unwrap());
                self.seen.lock().unwrap().enabled = Some((w(0), w(4)));
            }
            (PERFCNT_DUMP, IoctlArg::StructWithBuffer(_, b)) => {
                // The kernel copies its whole buffer: (l2 + fls64(shader_present) + 2) blocks.
                if b.bytes.len() != fx::DUMP_BYTES {
                    return Err(io::Error::from_raw_os_error(libc::EFAULT));
                }
                let mut seen = self.seen.lock().unwrap();
                b.bytes.copy_from_slice(&fx::v5_dump(seen.dumps));
                seen.dumps += 1;
            }
            _ => return Err(io::Error::from_raw_os_error(libc::ENOTTY)),
        }
        Ok(IoctlReply::Value(0))
    }
}

fn sysfs(param: Option<&str>) -> ScriptedFs {
    let mut fs = ScriptedFs::new();
    fs.link(
        "/sys/class/drm/renderD128/device/driver",
        "../../../bus/platform/drivers/vc4",
    )
    .link(
        "/sys/class/drm/renderD129/device/driver",
        "../../../bus/platform/drivers/panfrost",
    )
    .file(
        "/sys/class/drm/renderD129/device/devfreq/ff9a0000.gpu/cur_freq",
        ["500000000\n"],
    );
    if let Some(p) = param {
        fs.file("/sys/module/panfrost/parameters/unstable_ioctls", [p]);
    }
    fs
}

fn source(param: Option<&str>, busy: bool) -> (PanfrostSource, Arc<Mutex<FakeSys>>, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let mut sys = FakeSys::default();
    let s = seen.clone();
    sys.node("/dev/dri/renderD129", move |_: Access| {
        Ok(Box::new(Panfrost { seen: s.clone(), busy }) as Box<dyn FakeFile>)
    });
    let (shared, inner) = SharedSys::new(sys, sysfs(param));
    (PanfrostSource::with_sys(Box::new(shared)), inner, seen)
}

#[test]
fn open_enable_dump_decode_round_trip() {
    let (mut src, sys, seen) = source(Some("Y\n"), false);
    src.start().unwrap();
    assert_eq!(src.node(), Some("renderD129"));
    assert_eq!(seen.lock().unwrap().enabled, Some((1, 0)));
    let mut out = vec![0.0; src.catalogue().len()];
    // The first dump only opens the first window.
    assert_eq!(src.read(fx::T0, &mut out), Err(ReadError::NotYet));
    for k in 1..=2u64 {
        let w = src.read(fx::T0 + fx::SPAN_NS * k, &mut out).unwrap();
        assert_eq!(
            (w.begin_ns, w.end_ns),
            (fx::T0 + fx::SPAN_NS * (k - 1), fx::T0 + fx::SPAN_NS * k)
        );
        for (name, want) in expected(k as f64) {
            let i = src.catalogue().iter().position(|c| c.name == name).unwrap();
            assert!(close(out[i], want), "{name} in dump {k}: got {}, want {want}", out[i]);
        }
    }
    drop(src);
    assert_eq!(sys.lock().unwrap().open_fds(), 0);
}

#[test]
fn without_the_module_parameter_the_fix_is_named() {
    for param in [None, Some("N\n")] {
        let (mut src, sys, _) = source(param, false);
        assert_eq!(src.start(), Err(StartError::Unavailable(UNSTABLE_IOCTLS_FIX.into())));
        assert_eq!(
            UNSTABLE_IOCTLS_FIX,
            "panfrost perfcnt needs the module parameter unstable_ioctls=1 (modprobe panfrost unstable_ioctls=1)"
        );
        assert_eq!(sys.lock().unwrap().open_fds(), 0);
    }
}

#[test]
fn a_second_perfcnt_user_is_retried_and_no_panfrost_node_is_unavailable() {
    let (mut src, sys, _) = source(Some("Y"), true);
    let e = src.start().unwrap_err();
    assert!(matches!(&e, StartError::Retry(r) if r.contains("in use")), "{e:?}");
    assert_eq!(sys.lock().unwrap().open_fds(), 0);
    let mut src = PanfrostSource::with_sys(Box::new(FakeSys::default()));
    assert!(matches!(src.start(), Err(StartError::Unavailable(_))));
}
