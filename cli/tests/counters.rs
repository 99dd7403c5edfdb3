//! `framescope counters`, run as a built binary.

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_framescope"))
        .arg("counters")
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn lists_the_bifrost_set_for_mali_g76() {
    let o = run(&["--gpu", "mali-g76"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    for name in [
        "JM.GPU_ACTIVE",
        "SC.FRAG_QUADS_EZS_KILLED",
        "TI.CULLED_COVERAGE_PERCENT",
        "L2.EXT_READ_CNT_Q4",
        "gpu_busy_pct",
    ] {
        assert!(text.contains(name), "{name} missing");
    }
    assert!(text.contains("SC.FRAG_QUADS_RAST - SC.FRAG_QUADS_EZS_KILLED - SC.FRAG_QUADS_OPAQUE"));
}

#[test]
fn json_listing_has_kind_unit_formula_and_description() {
    let o = run(&["--gpu", "mali-g76", "--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let counters = v["counters"].as_array().unwrap();
    // 75 raw + 34 derived Bifrost counters, plus the common metrics Mali has.
    assert!(counters.len() > 109, "{}", counters.len());
    let c = counters.iter().find(|c| c["key"] == "L2.READ_MISS_RATE").unwrap();
    assert_eq!(c["kind"], "derived");
    assert_eq!(c["unit"], "ratio");
    assert_eq!(c["formula"], "L2.EXTERNAL_READ_REQUEST / L2.READ_REQUEST");
    assert_eq!(c["errata"][0]["id"], "A-11");
    assert!(c["description"].as_str().unwrap().contains("missed"));
}

#[test]
fn explain_shows_the_hardware_only_expression() {
    let o = run(&["--gpu", "mali-g76", "--explain", "SC.LSC_UTILIZATION"]);
    assert!(o.status.success());
    let text = stdout(&o);
    let resolved = text.lines().find(|l| l.trim_start().starts_with("resolved:")).unwrap();
    // SC.LSC_ISSUES (derived) is expanded into its five hardware counters.
    assert!(resolved.contains("(SC.LSC_READS_FULL + SC.LSC_READS_SHORT + SC.LSC_WRITES_FULL + SC.LSC_WRITES_SHORT + SC.LSC_ATOMICS) / SC.EXEC_CORE_ACTIVE"), "{resolved}");
    assert!(!resolved.contains("SC.LSC_ISSUES"));

    let o = run(&["--gpu", "mali-g76", "--explain", "JM.GPU_UTILIZATION"]);
    let text = stdout(&o);
    assert!(text.contains("MALI_CONFIG_TIME_SPAN"));
    assert!(text.contains("erratum A-14"));
}

#[test]
fn explain_on_amd_and_errors() {
    let o = run(&["--gpu", "amd-gfx8", "--explain", "vertex_busy_cycles", "--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["resolved"],
        "VSBusyCycles + HSBusyCycles + DSBusyCycles + GSBusyCycles"
    );

    assert_eq!(run(&["--gpu", "no-such-gpu"]).status.code(), Some(1));
    assert_eq!(run(&["--gpu", "mali-g76", "--explain", "NOPE"]).status.code(), Some(1));
    assert_eq!(run(&["--explain", "JM.GPU_ACTIVE"]).status.code(), Some(2));
    assert_eq!(run(&["--bogus"]).status.code(), Some(2));
}

#[test]
fn overview_lists_gpus_and_common_metrics() {
    let o = run(&[]);
    assert!(o.status.success());
    let text = stdout(&o);
    for s in ["mali-g76", "amd-rdna3", "intel-gen9", "gpu_busy_pct"] {
        assert!(text.contains(s), "{s}");
    }
}
