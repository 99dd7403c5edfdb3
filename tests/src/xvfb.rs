//! A private Xvfb server on a free display number, chosen by the server itself (`-displayfd`).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

pub struct Xvfb {
    child: Child,
    /// e.g. `:5`
    pub display: String,
}

impl Xvfb {
    pub fn start() -> Xvfb {
        Self::start_with_screen("1280x720x24")
    }

    pub fn start_with_screen(screen: &str) -> Xvfb {
        crate::artifacts::require_program("Xvfb");
        // Xvfb writes the display number it picked to fd 1 once it accepts connections.
        let mut child = Command::new("Xvfb")
            .args([
                "-displayfd",
                "1",
                "-screen",
                "0",
                screen,
                "-nolisten",
                "tcp",
                "-noreset",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .stdin(Stdio::null())
            .spawn()
            .expect("cannot start Xvfb");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped stdout");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("reading Xvfb's display number");
        let n = line.trim();
        assert!(
            !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()),
            "Xvfb gave no display number: {line:?}"
        );
        Xvfb {
            child,
            display: format!(":{n}"),
        }
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
