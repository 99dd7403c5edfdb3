//! `framescope counters` (not implemented yet).

pub fn main(_args: &[String]) -> i32 {
    eprintln!("framescope: 'counters' is not implemented yet");
    2
}
