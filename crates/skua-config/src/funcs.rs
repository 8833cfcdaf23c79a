//! The function macros: `$INT`, `$REAL`, `$STRING`, `$EVAL`, `$CHOICE`, `$SUBSTR`,
//! `$RANDOM_CHOICE`, `$RANDOM_INTEGER`, `$DIRNAME`, `$BASENAME` and `$F<flags>`.
//!
//! A function that cannot produce a value expands to the empty string (HTCondor does not refuse
//! the configuration for it). Arguments that name a macro are replaced by that macro's expanded
//! value; anything else is taken as a ClassAd expression (evaluated by [`crate::expr`]).

use crate::expand::{macro_value, MacroScope};
use crate::expr;
use crate::lines::trim_c;
use crate::printf::{self, format_value, Arg};
use crate::ConfigError;

/// The function macros whose body runs to the first `)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Func {
    Int,
    Real,
    Str,
    Eval,
    Choice,
    Substr,
    RandomChoice,
    RandomInteger,
    Dirname,
    Basename,
}

impl Func {
    /// The function named `ident` (case-sensitive, as in HTCondor).
    pub(crate) fn from_name(ident: &str) -> Option<Func> {
        Some(match ident {
            "INT" => Func::Int,
            "REAL" => Func::Real,
            "STRING" => Func::Str,
            "EVAL" => Func::Eval,
            "CHOICE" => Func::Choice,
            "SUBSTR" => Func::Substr,
            "RANDOM_CHOICE" => Func::RandomChoice,
            "RANDOM_INTEGER" => Func::RandomInteger,
            "DIRNAME" => Func::Dirname,
            "BASENAME" => Func::Basename,
            _ => return None,
        })
    }
}

/// The text an argument stands for: the macro's value when the argument names a defined macro,
/// else the argument itself. `None` when the macro is defined but empty.
fn arg_text(cfg: &dyn MacroScope, arg: &str, depth: usize) -> Result<Option<String>, ConfigError> {
    Ok(match macro_value(cfg, arg, depth)? {
        Some(v) if v.is_empty() => None,
        Some(v) => Some(v),
        None => Some(arg.to_string()),
    })
}

/// A path without its surrounding double quotes.
fn strip_quotes(v: &str) -> &str {
    match v.strip_prefix('"') {
        Some(rest) => rest.strip_suffix('"').unwrap_or(rest),
        None => v,
    }
}

/// A path argument: the value of the macro it names, or the argument itself.
fn path_arg(cfg: &dyn MacroScope, arg: &str, depth: usize) -> Result<String, ConfigError> {
    Ok(macro_value(cfg, arg, depth)?.unwrap_or_else(|| arg.to_string()))
}

/// Evaluates an argument (macro name or expression) to an integer.
fn int_arg(cfg: &dyn MacroScope, arg: &str, depth: usize) -> Result<Option<i64>, ConfigError> {
    Ok(arg_text(cfg, arg, depth)?
        .and_then(|t| expr::eval_str(&t, cfg.next_random()))
        .as_ref()
        .and_then(expr::as_int))
}

pub(crate) fn call(
    cfg: &dyn MacroScope,
    func: Func,
    body: &str,
    depth: usize,
) -> Result<String, ConfigError> {
    match func {
        Func::Int | Func::Real | Func::Str => {
            let (arg, fmt) = match body.split_once(',') {
                Some((a, f)) => (a, Some(f)),
                None => (body, None),
            };
            let kind = match func {
                Func::Int => printf::Kind::Int,
                Func::Real => printf::Kind::Real,
                _ => printf::Kind::Str,
            };
            // A format without a conversion for this kind of value is printed as it is.
            if let Some(f) = fmt.filter(|f| !printf::suits(f, kind)) {
                return Ok(f.to_string());
            }
            let Some(text) = arg_text(cfg, arg, depth)? else {
                return Ok(String::new());
            };
            let value = expr::eval_str(&text, cfg.next_random());
            Ok(match func {
                Func::Int => match value.as_ref().and_then(expr::as_int) {
                    Some(i) => format_value(fmt.unwrap_or("%lld"), Arg::Int(i)),
                    None => String::new(),
                },
                Func::Real => match (value.as_ref().and_then(expr::as_number), fmt) {
                    // With an explicit format HTCondor makes sure the text looks like a real.
                    (Some(r), Some(f)) => {
                        let mut out = format_value(f, Arg::Real(r));
                        if !out.contains('.') {
                            out.push_str(".0");
                        }
                        out
                    }
                    (Some(r), None) => format_value("%.16G", Arg::Real(r)),
                    (None, _) => String::new(),
                },
                _ => {
                    let s = value.as_ref().and_then(expr::as_text).unwrap_or(text);
                    format_value(fmt.unwrap_or("%s"), Arg::Str(&s))
                }
            })
        }
        Func::Eval => {
            // A body that still holds a `$` is left as it is (it is expanded again later).
            if body.contains('$') {
                return Ok(body.to_string());
            }
            let Some(text) = arg_text(cfg, body, depth)? else {
                return Ok(String::new());
            };
            Ok(expr::eval_str(&text, cfg.next_random())
                .map_or_else(String::new, |v| expr::to_eval_string(&v)))
        }
        Func::Choice => {
            let mut parts = body.split(',');
            let index_arg = parts.next().unwrap_or("");
            let mut items: Vec<String> = parts.map(|p| trim_c(p).to_string()).collect();
            if items.is_empty() {
                return Ok(String::new());
            }
            if items.len() == 1 {
                // A single argument names a macro holding the comma-separated list.
                match macro_value(cfg, &items[0], depth)? {
                    Some(list) => items = list.split(',').map(|p| trim_c(p).to_string()).collect(),
                    None => return Ok(String::new()),
                }
            }
            let index = int_arg(cfg, index_arg, depth)?.unwrap_or(0).max(0);
            Ok(usize::try_from(index)
                .ok()
                .and_then(|i| items.get(i).cloned())
                .unwrap_or_default())
        }
        Func::Substr => {
            let parts: Vec<&str> = body.split(',').collect();
            if parts.len() < 2 {
                return Ok(String::new());
            }
            let Some(value) = macro_value(cfg, parts[0], depth)? else {
                return Ok(String::new());
            };
            let chars: Vec<char> = value.chars().collect();
            let len = chars.len() as i64;
            let Some(mut start) = int_arg(cfg, parts[1], depth)? else {
                return Ok(String::new());
            };
            if start < 0 {
                start = (len + start).max(0);
            }
            if start >= len {
                return Ok(String::new());
            }
            let end = match parts.get(2) {
                None => len,
                Some(p) => match int_arg(cfg, p, depth)? {
                    Some(l) if l < 0 => len + l,
                    Some(l) => start.saturating_add(l),
                    None => return Ok(String::new()),
                },
            };
            let end = end.clamp(start, len);
            Ok(chars[start as usize..end as usize].iter().collect())
        }
        Func::RandomChoice => {
            let items: Vec<&str> = body.split(',').map(trim_c).collect();
            let n = items.len() as u64;
            let pick = (cfg.next_random() % n.max(1)) as usize;
            Ok(items.get(pick).map(|s| s.to_string()).unwrap_or_default())
        }
        Func::RandomInteger => {
            let parts: Vec<&str> = body.split(',').collect();
            let min = parts
                .first()
                .map(|p| int_arg(cfg, p, depth))
                .transpose()?
                .flatten();
            let max = parts
                .get(1)
                .map(|p| int_arg(cfg, p, depth))
                .transpose()?
                .flatten();
            let step = match parts.get(2) {
                Some(p) => int_arg(cfg, p, depth)?,
                None => Some(1),
            };
            let (Some(min), Some(max), Some(step)) = (min, max, step) else {
                return Ok(String::new());
            };
            if max < min || step <= 0 {
                return Ok(min.to_string());
            }
            let slots = ((max - min) / step).saturating_add(1) as u64;
            let k = (cfg.next_random() % slots.max(1)) as i64;
            Ok((min + k * step).to_string())
        }
        Func::Dirname => {
            let value = path_arg(cfg, body, depth)?;
            let value = strip_quotes(&value);
            Ok(value
                .rfind('/')
                .map(|i| value[..=i].to_string())
                .unwrap_or_default())
        }
        Func::Basename => {
            let (name, suffix) = match body.split_once(',') {
                Some((n, s)) => (n, Some(trim_c(s))),
                None => (body, None),
            };
            let value = path_arg(cfg, name, depth)?;
            let base = strip_quotes(&value).rsplit('/').next().unwrap_or("");
            Ok(match suffix {
                Some(suf) if !suf.is_empty() && base.ends_with(suf) => {
                    base[..base.len() - suf.len()].to_string()
                }
                _ => base.to_string(),
            })
        }
    }
}

/// `$F<flags>(name)`: parts of the path held by macro `name`.
///
/// Flags (case-insensitive): `p` directory with trailing `/`, `d` last directory with trailing
/// `/`, `n` file name without extension, `x` extension with its dot (several select the span
/// from the first to the last), `b` drop the trailing `/` of a directory or the dot of an
/// extension, `q` add double quotes, `u`/`w` turn `\` into `/` / `/` into `\` first, `f` and `a`
/// change nothing. Surrounding double quotes of the value are removed first.
pub(crate) fn filename(
    cfg: &dyn MacroScope,
    flags: &str,
    body: &str,
    depth: usize,
) -> Result<String, ConfigError> {
    let value = path_arg(cfg, body, depth)?;
    let flags = flags.to_ascii_lowercase();
    let has = |c: char| flags.contains(c);
    let mut v = strip_quotes(&value).to_string();
    if has('u') {
        v = v.replace('\\', "/");
    }
    if has('w') {
        v = v.replace('/', "\\");
    }
    // With `q` the parts are found in the text behind an opening quote, which shifts HTCondor's
    // rules for paths without a directory: a leading dot then starts an extension, and `d`
    // selects the quote itself.
    let quote = has('q');
    let buf = if quote { format!("\"{v}") } else { v };
    let len = buf.len();
    let ixn = buf.rfind('/').map_or(0, |i| i + 1);
    let ixx = match buf[ixn..].rfind('.') {
        Some(j) if j > 0 => ixn + j,
        _ => len,
    };
    let has_dir = ixn > 0;
    let ixd = if has_dir {
        buf[..ixn - 1].rfind('/').map_or(0, |i| i + 1)
    } else {
        0
    };
    let (p, d, n, x) = (has('p'), has('d'), has('n'), has('x'));
    let quote_as_dir = d && quote && !has_dir && !(n || x);
    let (start, end) = if !(p || d || n || x) {
        (Some(0), len)
    } else {
        let start = if p && has_dir {
            Some(0)
        } else if d && has_dir {
            Some(ixd)
        } else if quote_as_dir {
            Some(0)
        } else if n {
            Some(ixn)
        } else if x {
            Some(ixx)
        } else {
            None
        };
        let end = if x {
            len
        } else if n {
            ixx
        } else if quote_as_dir {
            1
        } else {
            ixn
        };
        (start, end)
    };
    let mut result = match start {
        Some(s) if s < end => buf[s..end].to_string(),
        _ => String::new(),
    };
    if has('b') {
        if (p || d) && !n && !x {
            if result.ends_with('/') || result.ends_with('\\') {
                result.pop();
            }
        } else if x && !(p || d || n) {
            if let Some(rest) = result.strip_prefix('.') {
                result = rest.to_string();
            }
        }
    }
    if quote {
        result = if result.is_empty() {
            "\"".to_string()
        } else if start == Some(0) {
            // The range already begins with the opening quote.
            format!("{result}\"")
        } else {
            format!("\"{result}\"")
        };
    }
    Ok(result)
}
