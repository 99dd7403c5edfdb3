pub fn install_main(_a: &[String]) -> i32 { 2 }
pub fn uninstall_main(_a: &[String]) -> i32 { 2 }
