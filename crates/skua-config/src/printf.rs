//! The subset of C `printf` formatting that `$INT(x,fmt)`, `$REAL(x,fmt)` and `$STRING(x,fmt)` use.
//!
//! A format holds literal text and one conversion (`%[flags][width][.precision]conv`). When the
//! conversion does not suit the value's type (`%s` for `$INT`, `%d` for `$REAL`), HTCondor prints
//! the format text unchanged; [`format_value`] does the same.

/// The value to format.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arg<'a> {
    Int(i64),
    Real(f64),
    Str(&'a str),
}

#[derive(Debug, Default, Clone, Copy)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: usize,
    precision: Option<usize>,
    /// Bits of the integer argument as C reads it: 32 without a length modifier, 16 for `h`, 8 for
    /// `hh`, 64 for `l`, `ll`, `j`, `z`, `t`, `q`.
    int_bits: u32,
    conv: char,
}

/// The kind of value a format is meant for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Int,
    Real,
    Str,
}

/// Whether `fmt` holds a conversion suitable for a value of `kind` (else HTCondor prints the
/// format text itself, whatever the value).
pub(crate) fn suits(fmt: &str, kind: Kind) -> bool {
    let chars: Vec<char> = fmt.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '%' {
            i += 1;
            continue;
        }
        if chars.get(i + 1) == Some(&'%') {
            i += 2;
            continue;
        }
        return match parse_spec(&chars, i + 1) {
            Some((spec, _)) => match kind {
                Kind::Int => matches!(spec.conv, 'd' | 'i' | 'u' | 'x' | 'X' | 'o' | 'c'),
                Kind::Real => matches!(spec.conv, 'f' | 'F' | 'e' | 'E' | 'g' | 'G'),
                Kind::Str => spec.conv == 's',
            },
            None => false,
        };
    }
    false
}

/// Formats `arg` with the C format `fmt`; see the module documentation.
pub(crate) fn format_value(fmt: &str, arg: Arg<'_>) -> String {
    let mut out = String::new();
    let mut converted = false;
    let chars: Vec<char> = fmt.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c != '%' {
            out.push(c);
            i += 1;
            continue;
        }
        if chars.get(i + 1) == Some(&'%') {
            out.push('%');
            i += 2;
            continue;
        }
        if converted {
            // Only one conversion is supported; keep any further ones as text.
            out.push(c);
            i += 1;
            continue;
        }
        let Some((spec, next)) = parse_spec(&chars, i + 1) else {
            return fmt.to_string();
        };
        let Some(text) = convert(&spec, arg) else {
            return fmt.to_string();
        };
        out.push_str(&text);
        converted = true;
        i = next;
    }
    out
}

fn parse_spec(chars: &[char], mut i: usize) -> Option<(Spec, usize)> {
    let mut spec = Spec::default();
    while let Some(&c) = chars.get(i) {
        match c {
            '-' => spec.left = true,
            '+' => spec.plus = true,
            ' ' => spec.space = true,
            '#' => spec.alt = true,
            '0' => spec.zero = true,
            _ => break,
        }
        i += 1;
    }
    while let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
        spec.width = spec.width.saturating_mul(10).saturating_add(d as usize);
        i += 1;
    }
    if chars.get(i) == Some(&'.') {
        i += 1;
        let mut p = 0usize;
        while let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
            p = p.saturating_mul(10).saturating_add(d as usize);
            i += 1;
        }
        spec.precision = Some(p);
    }
    let mut length = String::new();
    while let Some(&c) = chars.get(i) {
        if matches!(c, 'h' | 'l' | 'L' | 'q' | 'j' | 'z' | 't') {
            length.push(c);
            i += 1;
        } else {
            break;
        }
    }
    spec.int_bits = match length.as_str() {
        "" => 32,
        "h" => 16,
        "hh" => 8,
        _ => 64,
    };
    spec.conv = *chars.get(i)?;
    Some((spec, i + 1))
}

/// The integer as C's `printf` reads it from a 64-bit argument: the low `bits` bits, signed.
fn narrow_signed(v: i64, bits: u32) -> i64 {
    match bits {
        8 => i64::from(v as i8),
        16 => i64::from(v as i16),
        32 => i64::from(v as i32),
        _ => v,
    }
}

/// The low `bits` bits of the integer, unsigned.
fn narrow_unsigned(v: i64, bits: u32) -> u64 {
    match bits {
        8 => u64::from(v as u8),
        16 => u64::from(v as u16),
        32 => u64::from(v as u32),
        _ => v as u64,
    }
}

fn convert(spec: &Spec, arg: Arg<'_>) -> Option<String> {
    match (spec.conv, arg) {
        ('d' | 'i', Arg::Int(v)) => {
            let v = narrow_signed(v, spec.int_bits);
            Some(pad_number(
                spec,
                v < 0,
                &digits(v.unsigned_abs(), 10, false, spec.precision),
                "",
            ))
        }
        ('u', Arg::Int(v)) => Some(pad_number(
            spec,
            false,
            &digits(narrow_unsigned(v, spec.int_bits), 10, false, spec.precision),
            "",
        )),
        ('x' | 'X' | 'o', Arg::Int(v)) => {
            let v = narrow_unsigned(v, spec.int_bits);
            let upper = spec.conv == 'X';
            let base = if spec.conv == 'o' { 8 } else { 16 };
            let body = digits(v, base, upper, spec.precision);
            let prefix = match (spec.alt && v != 0, spec.conv) {
                (true, 'x') => "0x",
                (true, 'X') => "0X",
                (true, _) if !body.starts_with('0') => "0",
                _ => "",
            };
            let unsigned = Spec {
                plus: false,
                space: false,
                ..*spec
            };
            Some(pad_number(&unsigned, false, &body, prefix))
        }
        ('c', Arg::Int(v)) => {
            let ch = u32::try_from(v).ok().and_then(char::from_u32)?;
            Some(pad_text(spec, &ch.to_string()))
        }
        ('f' | 'F' | 'e' | 'E' | 'g' | 'G', Arg::Real(v)) => {
            let precision = spec.precision.unwrap_or(6);
            if !v.is_finite() {
                let text = if v.is_nan() { "nan" } else { "inf" };
                let text = if spec.conv.is_ascii_uppercase() {
                    text.to_ascii_uppercase()
                } else {
                    text.to_string()
                };
                let no_zero = Spec {
                    zero: false,
                    ..*spec
                };
                return Some(pad_number(
                    &no_zero,
                    v.is_sign_negative() && !v.is_nan(),
                    &text,
                    "",
                ));
            }
            let body = match spec.conv {
                'f' | 'F' => format!("{:.*}", precision, v.abs()),
                'e' | 'E' => format_exp(v.abs(), precision, spec.conv == 'E'),
                _ => format_general(v.abs(), precision, spec.conv == 'G', spec.alt),
            };
            let body = if spec.alt && precision == 0 && matches!(spec.conv, 'f' | 'F') {
                format!("{body}.")
            } else {
                body
            };
            Some(pad_number(
                spec,
                v.is_sign_negative() && v != 0.0 || (v == 0.0 && v.is_sign_negative()),
                &body,
                "",
            ))
        }
        ('s', Arg::Str(s)) => {
            let s: String = match spec.precision {
                Some(p) => s.chars().take(p).collect(),
                None => s.to_string(),
            };
            Some(pad_text(spec, &s))
        }
        _ => None,
    }
}

fn digits(mut v: u64, base: u64, upper: bool, precision: Option<usize>) -> String {
    let table: &[u8] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut buf = Vec::new();
    loop {
        buf.push(table[(v % base) as usize]);
        v /= base;
        if v == 0 {
            break;
        }
    }
    let mut s: String = buf.iter().rev().map(|&b| b as char).collect();
    if let Some(p) = precision {
        if p == 0 && s == "0" {
            s.clear();
        }
        while s.len() < p {
            s.insert(0, '0');
        }
    }
    s
}

fn pad_number(spec: &Spec, negative: bool, body: &str, prefix: &str) -> String {
    let sign = if negative {
        "-"
    } else if spec.plus {
        "+"
    } else if spec.space {
        " "
    } else {
        ""
    };
    let len = sign.len() + prefix.len() + body.chars().count();
    let fill = spec.width.saturating_sub(len);
    let zero_ok = spec.zero
        && !spec.left
        && (spec.precision.is_none() || !matches!(spec.conv, 'd' | 'i' | 'u' | 'x' | 'X' | 'o'));
    if spec.left {
        format!("{sign}{prefix}{body}{}", " ".repeat(fill))
    } else if zero_ok {
        format!("{sign}{prefix}{}{body}", "0".repeat(fill))
    } else {
        format!("{}{sign}{prefix}{body}", " ".repeat(fill))
    }
}

fn pad_text(spec: &Spec, text: &str) -> String {
    let fill = spec.width.saturating_sub(text.chars().count());
    if spec.left {
        format!("{text}{}", " ".repeat(fill))
    } else {
        format!("{}{text}", " ".repeat(fill))
    }
}

/// C `%.{precision}e` / `%.{precision}E` for a finite value (`2.500000e+00`).
pub(crate) fn format_exp(v: f64, precision: usize, upper: bool) -> String {
    let s = format!("{:.*e}", precision, v);
    let (mantissa, exp) = s.split_once('e').unwrap_or((s.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let e = if upper { 'E' } else { 'e' };
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}{e}{sign}{:02}", exp.unsigned_abs())
}

/// C `%g` / `%G` for a finite, non-negative value.
fn format_general(v: f64, precision: usize, upper: bool, alt: bool) -> String {
    let p = if precision == 0 { 1 } else { precision };
    if v == 0.0 {
        return if alt {
            format!("{:.*}", p - 1, 0.0)
        } else {
            "0".to_string()
        };
    }
    // The exponent after rounding to `p` significant digits.
    let probe = format!("{:.*e}", p - 1, v);
    let exp: i32 = probe
        .split_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0);
    let out = if exp < -4 || exp >= p as i32 {
        let s = format_exp(v, p - 1, upper);
        if alt {
            s
        } else {
            let (m, e) = s.split_at(s.find(['e', 'E']).unwrap_or(s.len()));
            format!("{}{}", strip_zeros(m), e)
        }
    } else {
        let decimals = usize::try_from(p as i32 - 1 - exp).unwrap_or(0);
        let s = format!("{:.*}", decimals, v);
        if alt {
            s
        } else {
            strip_zeros(&s).to_string()
        }
    };
    out
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        assert_eq!(format_value("%d", Arg::Int(5)), "5");
        assert_eq!(format_value("%03d", Arg::Int(10)), "010");
        assert_eq!(format_value("%5.3d", Arg::Int(4)), "  004");
        assert_eq!(format_value("%x", Arg::Int(255)), "ff");
        assert_eq!(format_value("%X", Arg::Int(255)), "FF");
        assert_eq!(format_value("%o", Arg::Int(255)), "377");
        assert_eq!(format_value("abc%dxyz", Arg::Int(5)), "abc5xyz");
        assert_eq!(format_value("%s", Arg::Int(5)), "%s");
        assert_eq!(format_value("%f", Arg::Int(5)), "%f");
        assert_eq!(format_value("%-4d|", Arg::Int(-3)), "-3  |");
        // Without a length modifier C reads an int: the low 32 bits.
        assert_eq!(format_value("%d", Arg::Int(10_000_000_000)), "1410065408");
        assert_eq!(
            format_value("%lld", Arg::Int(10_000_000_000)),
            "10000000000"
        );
        assert_eq!(format_value("%x", Arg::Int(-2)), "fffffffe");
        assert_eq!(format_value("%lx", Arg::Int(-2)), "fffffffffffffffe");
        assert_eq!(format_value("%u", Arg::Int(-1)), "4294967295");
        assert_eq!(format_value("%hd", Arg::Int(10_000_000_000)), "-7168");
    }

    #[test]
    fn reals() {
        assert_eq!(
            format_value("%.16G", Arg::Real(1.0 / 3.0)),
            "0.3333333333333333"
        );
        assert_eq!(format_value("%.16G", Arg::Real(1e20)), "1E+20");
        assert_eq!(format_value("%.16G", Arg::Real(2.0)), "2");
        assert_eq!(
            format_value("%.16G", Arg::Real(123456789.123)),
            "123456789.123"
        );
        assert_eq!(format_value("%.16G", Arg::Real(-0.0001234)), "-0.0001234");
        assert_eq!(format_value("%g", Arg::Real(2.0 / 3.0)), "0.666667");
        assert_eq!(format_value("%g", Arg::Real(1234567.0)), "1.23457e+06");
        assert_eq!(format_value("%G", Arg::Real(0.00001234)), "1.234E-05");
        assert_eq!(format_value("%.3f", Arg::Real(2.5)), "2.500");
        assert_eq!(format_value("%e", Arg::Real(2.5)), "2.500000e+00");
        assert_eq!(format_value("%8.2f", Arg::Real(2.5)), "    2.50");
        assert_eq!(format_value("%+.1f", Arg::Real(3.0)), "+3.0");
        assert_eq!(format_value("%d", Arg::Real(5.0)), "%d");
    }

    #[test]
    fn suitability() {
        assert!(suits("%03d", Kind::Int));
        assert!(suits("x%%y%d", Kind::Int));
        assert!(!suits("%s", Kind::Int));
        assert!(!suits("lit", Kind::Int));
        assert!(suits("%.2f", Kind::Real));
        assert!(!suits("r%s", Kind::Real));
        assert!(suits("[%s]", Kind::Str));
    }

    #[test]
    fn strings() {
        assert_eq!(format_value("%10s", Arg::Str("hello")), "     hello");
        assert_eq!(format_value("[%s]", Arg::Str("x")), "[x]");
    }
}
