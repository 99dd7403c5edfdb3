//! Numbers with units as people read them: bytes in KiB/MiB/GiB/TiB, nanoseconds in µs/ms/s,
//! large counts with thousands separators. One scale per row (its largest value picks it), so
//! a row's mean, minimum and maximum read in the same unit. Used by `report`'s text; the HUD's
//! counter lines follow the same rules.

/// The divisor and the unit to show values of `unit` whose largest magnitude is `max_abs` in.
/// Units not scaled here keep their name and a divisor of 1.
pub fn scale(unit: &str, max_abs: f64) -> (f64, String) {
    const BINARY: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let binary = |base: usize, suffix: &str| {
        let mut i = base;
        let mut div = 1.0;
        while i + 1 < BINARY.len() && max_abs / div >= 1024.0 {
            div *= 1024.0;
            i += 1;
        }
        (div, format!("{}{suffix}", BINARY[i]))
    };
    match unit {
        "bytes" | "B" => binary(0, ""),
        "KiB" => binary(1, ""),
        "MiB" => binary(2, ""),
        "bytes/s" => binary(0, "/s"),
        "ns" => match max_abs {
            v if v >= 1e9 => (1e9, "s".into()),
            v if v >= 1e6 => (1e6, "ms".into()),
            v if v >= 1e3 => (1e3, "µs".into()),
            _ => (1.0, "ns".into()),
        },
        u => (1.0, u.to_string()),
    }
}

/// `v` with up to 3 decimals (fewer as it grows: 1 from 1000, none from 100 000), thousands
/// separated by `,`; exponent form where that would print only zeros or more than 15 digits.
pub fn number(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    if v != 0.0 && !(1e-3..1e15).contains(&a) {
        return format!("{v:.4e}");
    }
    let decimals = match a {
        a if a >= 1e5 => 0,
        a if a >= 1e3 => 1,
        _ => 3,
    };
    let text = format!("{a:.decimals$}");
    let (int, frac) = text
        .split_once('.')
        .map_or((text.as_str(), None), |(i, f)| (i, Some(f)));
    let mut out = String::with_capacity(text.len() + int.len() / 3 + 1);
    if v < 0.0 && text.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        out.push('-');
    }
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_and_nanoseconds_take_the_unit_of_their_largest_value() {
        // The issue's own examples: RAM total and VRAM total printed raw.
        let (d, u) = scale("bytes", 25_276_502_016.0);
        assert_eq!((number(25_276_502_016.0 / d), u.as_str()), ("23.541".into(), "GiB"));
        let (d, u) = scale("bytes", 110_952_577.289);
        assert_eq!((number(110_952_577.289 / d), u.as_str()), ("105.813".into(), "MiB"));
        assert_eq!(scale("bytes", 512.0), (1.0, "B".into()));
        assert_eq!(scale("KiB", 3.0 * 1024.0 * 1024.0).1, "GiB");
        assert_eq!(scale("bytes/s", 2048.0).1, "KiB/s");
        assert_eq!(scale("ns", 16_700_000.0), (1e6, "ms".into()));
        assert_eq!(scale("ns", 2.5e9).1, "s");
        assert_eq!(scale("ns", 900.0).1, "ns");
        assert_eq!(scale("%", 1e9), (1.0, "%".into()));
    }

    #[test]
    fn numbers_get_separators_and_fewer_decimals_as_they_grow() {
        assert_eq!(number(42.5), "42.500");
        assert_eq!(number(1234.56), "1,234.6");
        assert_eq!(number(1_618_312_208_139.0), "1,618,312,208,139");
        assert_eq!(number(-98_765.4), "-98,765.4");
        assert_eq!(number(0.0), "0.000");
        assert_eq!(number(-0.0001), "-1.0000e-4");
        assert_eq!(number(2e15), "2.0000e15");
        assert_eq!(number(f64::NAN), "-");
        assert_eq!(number(-0.0), "0.000");
    }
}
