//! Sizes with units for `request_memory` (MiB) and `request_disk` (KiB).

/// What a size value turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Size {
    /// A number, converted to the base unit and rounded up.
    Number(i64),
    /// Not a number with a unit: an expression to keep as it is.
    Expression,
}

/// Parses `value` as a number with an optional unit suffix (`K`, `M`, `G`, `T`, optionally
/// followed by `B`, any case, binary multiples). `base` is the size of the result's unit in
/// KiB (1024 for MiB, 1 for KiB); a plain number is already in that unit. `Err` for a number
/// followed by an unknown suffix.
pub(crate) fn parse_size(value: &str, base_kib: f64) -> Result<Size, String> {
    let v = value.trim();
    let num_end = v
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.'))
        .map_or(v.len(), |(i, _)| i);
    let (num, suffix) = v.split_at(num_end);
    if num.is_empty() || num == "." || num.matches('.').count() > 1 {
        return Ok(Size::Expression);
    }
    let Ok(n) = num.parse::<f64>() else {
        return Ok(Size::Expression);
    };
    let suffix = suffix.trim();
    let kib = match suffix.to_ascii_uppercase().as_str() {
        "" => return Ok(Size::Number(n.ceil() as i64)),
        "K" | "KB" => n,
        "M" | "MB" => n * 1024.0,
        "G" | "GB" => n * 1024.0 * 1024.0,
        "T" | "TB" => n * 1024.0 * 1024.0 * 1024.0,
        "B" => n / 1024.0,
        _ => {
            // A number followed by something that starts like a name is not an expression
            // HTCondor accepts either (`5 XB`).
            if suffix.starts_with(|c: char| c.is_ascii_alphabetic()) {
                return Err(format!("invalid size: {value}"));
            }
            return Ok(Size::Expression);
        }
    };
    Ok(Size::Number((kib / base_kib).ceil() as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_units() {
        let cases = [
            ("1000", 1000),
            ("2048K", 2),
            ("100MB", 100),
            ("1.5 GB", 1536),
            ("1T", 1_048_576),
            ("2 gb", 2048),
        ];
        for (text, want) in cases {
            assert_eq!(parse_size(text, 1024.0), Ok(Size::Number(want)), "{text}");
        }
        assert_eq!(
            parse_size("ifThenElse(a, 1, 2)", 1024.0),
            Ok(Size::Expression)
        );
        assert!(parse_size("5 XB", 1024.0).is_err());
    }

    #[test]
    fn disk_units() {
        assert_eq!(parse_size("2GB", 1.0), Ok(Size::Number(2_097_152)));
        assert_eq!(parse_size("1000000", 1.0), Ok(Size::Number(1_000_000)));
    }
}
