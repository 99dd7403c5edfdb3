//! A GL app on Mesa's zink (GL over Vulkan) under `framescope run`: both of framescope's
//! libraries are in the process, the GL shim must leave zink's contexts to the Vulkan layer, and
//! the Vulkan layer must survive zink's calls (zink calls `vkGetPhysicalDeviceFeatures2KHR`,
//! which once crashed every such app when nothing sat between framescope and the driver). Runs in
//! both lanes (tests/src/lane.rs).

use framescope_tests::artifacts::require_program;
use framescope_tests::{dump, validation, Artifacts, Sandbox, Xvfb};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

/// glxgears for 5 s, then Escape: glxgears then exits normally (status 0), so zink destroys its
/// device and the dump gets its summary, as in a real session that ends.
const GEARS: &str = r#"glxgears > /dev/null & pid=$!
sleep 5
xdotool search --sync --limit 1 --name '^glxgears$' key Escape
wait $pid"#;

fn zink_sandbox(name: &str, x: &Xvfb) -> Sandbox {
    let mut sb = Sandbox::new(name);
    sb.display(x)
        .with_validation()
        .set("MESA_LOADER_DRIVER_OVERRIDE", "zink")
        .set("LIBGL_ALWAYS_SOFTWARE", "1");
    sb
}

#[test]
fn glxgears_on_zink_gets_one_dump_one_hud_and_exits_as_bare() {
    for p in ["glxgears", "xdotool", "sh"] {
        require_program(p);
    }
    let a = Artifacts::get();
    let x = Xvfb::start();

    let bare = zink_sandbox("zink-bare", &x);
    let b = bare.run(std::path::Path::new("sh"), &["-c", GEARS], LIMIT);
    assert_eq!(b.code(), Some(0), "bare glxgears on zink: {}", b.describe());

    let mut sb = zink_sandbox("zink", &x);
    let dumps = sb.path("dumps");
    std::fs::create_dir_all(&dumps).unwrap();
    let shots = sb.path("shots");
    std::fs::create_dir_all(&shots).unwrap();
    sb.set("FRAMESCOPE_DUMP", format!("{}/gears-%p.jsonl", dumps.display()))
        .set(
            "FRAMESCOPE_CONFIG",
            format!(
                "log=debug,command_counts=1,screenshot=60,screenshot_path={}/shot-%p-%N.png",
                shots.display()
            ),
        );
    let out = sb.run_under_framescope(&a, "sh", &["-c", GEARS], LIMIT);
    assert_eq!(
        out.code(),
        b.code(),
        "exit status differs from bare: {}",
        out.describe()
    );
    validation::assert_clean("glxgears on zink", &out.combined());
    assert!(
        out.stderr.contains("is Zink: left to the Vulkan layer"),
        "the GL shim did not recognise zink: {}",
        out.describe()
    );

    // One dump for the one GL process: the Vulkan layer's (xdotool and sh make no GL context).
    let files: Vec<_> = std::fs::read_dir(&dumps).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "dumps: {files:?}\n{}", out.describe());
    let d = dump::read(&files[0]);
    assert_eq!(d.header["api"], "vulkan", "zink's frames come from the Vulkan layer");
    assert!(d.frames.len() >= 10, "{} frames in 5 s", d.frames.len());
    assert!(d.summary.is_some(), "no summary: the device was not destroyed cleanly");
    assert_eq!(
        d.summary.as_ref().unwrap()["frames"].as_u64(),
        Some(d.frames.len() as u64)
    );
    assert!(
        d.frames.iter().any(|f| f["draws"].as_u64().is_some_and(|n| n > 0)),
        "zink's draws were not counted"
    );

    // One HUD: exactly one of the two libraries drew and saved frame 60.
    let pngs: Vec<_> = std::fs::read_dir(&shots).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(pngs.len(), 1, "screenshots: {pngs:?}\n{}", out.describe());
}
