//! Recognises output of VK_LAYER_KHRONOS_validation (its default callback prints to stdout).

/// Every line that looks like a validation message.
pub fn messages(output: &str) -> Vec<String> {
    output
        .lines()
        .filter(|l| {
            l.contains("Validation Error")
                || l.contains("Validation Warning")
                || l.contains("VUID-")
                || l.contains("UNASSIGNED-")
        })
        .map(str::to_string)
        .collect()
}

/// Panics with the messages when there are any.
pub fn assert_clean(what: &str, output: &str) {
    let m = messages(output);
    assert!(
        m.is_empty(),
        "{what}: {} validation message(s):\n{}",
        m.len(),
        m.join("\n")
    );
}

#[cfg(test)]
mod tests {
    #[test]
    fn recognises_real_validation_output() {
        let sample = "VUID-vkCreateDevice-ppEnabledExtensionNames-01387(ERROR / SPEC): msgNum: 307460652 - Validation Error: [ VUID-vkCreateDevice-ppEnabledExtensionNames-01387 ]";
        assert_eq!(super::messages(sample).len(), 1);
        assert!(super::messages("Selected GPU 0: llvmpipe\nframescope: device destroyed").is_empty());
    }
}
