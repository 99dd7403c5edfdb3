//! placeholder
pub fn pins_for(_absent: &[&str], _foreign: &str) -> Result<Vec<String>, String> {
    Ok(Vec::new())
}
