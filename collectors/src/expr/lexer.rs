use super::error::{ParseError, ParseErrorKind};

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    Num(f64),
    Ident(String),
    Plus,
    Minus,
    Star,
    Slash,
    LParen,
    RParen,
    Comma,
    End,
}

impl Tok {
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Num(v) => format!("number {v}"),
            Tok::Ident(n) => format!("name '{n}'"),
            Tok::Plus => "'+'".into(),
            Tok::Minus => "'-'".into(),
            Tok::Star => "'*'".into(),
            Tok::Slash => "'/'".into(),
            Tok::LParen => "'('".into(),
            Tok::RParen => "')'".into(),
            Tok::Comma => "','".into(),
            Tok::End => "end of input".into(),
        }
    }
}

/// A token and the byte offset where it starts.
pub(crate) type Spanned = (Tok, usize);

pub(crate) fn tokenize(src: &str) -> Result<Vec<Spanned>, ParseError> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        let single = match c {
            b' ' | b'\t' | b'\r' | b'\n' => {
                i += 1;
                continue;
            }
            b'+' => Some(Tok::Plus),
            b'-' => Some(Tok::Minus),
            b'*' => Some(Tok::Star),
            b'/' => Some(Tok::Slash),
            b'(' => Some(Tok::LParen),
            b')' => Some(Tok::RParen),
            b',' => Some(Tok::Comma),
            _ => None,
        };
        if let Some(t) = single {
            out.push((t, start));
            i += 1;
        } else if c.is_ascii_digit() {
            i = number_end(bytes, i);
            let text = &src[start..i];
            let v: f64 = text
                .parse()
                .map_err(|_| ParseError::new(start, ParseErrorKind::BadNumber(text.into())))?;
            // Literals like 1e999 parse to infinity; the engine promises finite values only.
            if !v.is_finite() {
                return Err(ParseError::new(start, ParseErrorKind::BadNumber(text.into())));
            }
            out.push((Tok::Num(v), start));
        } else if is_ident_start(c) {
            i = ident_end(bytes, i).map_err(|pos| ParseError::new(pos, ParseErrorKind::BadName))?;
            out.push((Tok::Ident(src[start..i].to_string()), start));
        } else {
            let ch = src[start..].chars().next().unwrap_or('\u{fffd}');
            return Err(ParseError::new(start, ParseErrorKind::UnexpectedChar(ch)));
        }
    }
    out.push((Tok::End, src.len()));
    Ok(out)
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Digits, an optional fraction and an optional exponent.
fn number_end(b: &[u8], mut i: usize) -> usize {
    let digits = |b: &[u8], mut i: usize| {
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    i = digits(b, i);
    if i + 1 < b.len() && b[i] == b'.' && b[i + 1].is_ascii_digit() {
        i = digits(b, i + 1);
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            i = digits(b, j);
        }
    }
    i
}

/// `IDENT ('.' IDENT)*`; on a dot not followed by an identifier, returns the dot's offset.
fn ident_end(b: &[u8], mut i: usize) -> Result<usize, usize> {
    loop {
        while i < b.len() && is_ident_char(b[i]) {
            i += 1;
        }
        if i < b.len() && b[i] == b'.' {
            if i + 1 < b.len() && is_ident_start(b[i + 1]) {
                i += 1;
                continue;
            }
            return Err(i);
        }
        return Ok(i);
    }
}
