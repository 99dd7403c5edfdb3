//! `framescope report` (not implemented yet).

pub fn main(_args: &[String]) -> i32 {
    eprintln!("framescope: 'report' is not implemented yet");
    2
}
