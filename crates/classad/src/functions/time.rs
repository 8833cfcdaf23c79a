//! Builtin functions: time family (`time`, `currentTime`, `dayTime`,
//! `timezoneOffset`, `formatTime`, `interval`, `splitTime`, `getYear` and
//! the other field getters).
//!
//! "Now" and the local time zone come from the evaluator's options; the
//! system clock is never read.

use super::math::{c_f64_to_i64, c_i64_to_i32, to_int};
use super::Builtin;
use crate::ad::ClassAd;
use crate::ast::Expr;
use crate::eval::{Evaluator, FrameId, Val};
use crate::time::{broken_down, c_double_to_int, days_from_civil, strftime, Tm};
use crate::value::AbsTime;

pub(super) const FUNCS: &[(&str, Builtin)] = &[
    ("time", time),
    ("currentTime", current_time),
    ("timezoneOffset", timezone_offset),
    ("dayTime", day_time),
    ("interval", interval),
    ("formatTime", format_time),
    ("splitTime", split_time),
    ("getYear", get_year),
    ("getMonth", get_month),
    ("getDayOfYear", get_day_of_year),
    ("getDayOfMonth", get_day_of_month),
    ("getDayOfWeek", get_day_of_week),
    ("getDays", get_days),
    ("getHours", get_hours),
    ("getMinutes", get_minutes),
    ("getSeconds", get_seconds),
];

/// "Now" as C's `time_t`.
fn now_secs(ev: &Evaluator) -> i64 {
    c_f64_to_i64(ev.now().floor())
}

/// The local time zone's offset at `secs`.
fn local_offset(ev: &Evaluator, secs: i64) -> i32 {
    (ev.opts.tz)(secs)
}

/// `secs` broken down in the local time zone (C's `localtime`).
fn local_tm(ev: &Evaluator, secs: i64) -> Tm {
    broken_down(secs, local_offset(ev, secs))
}

/// The current time as an absolute time in the local zone.
pub(super) fn current_abs_time(ev: &Evaluator) -> Val {
    let secs = now_secs(ev);
    Val::Abs(AbsTime {
        secs,
        offset: local_offset(ev, secs),
    })
}

/// `time()`: the current time in seconds since the epoch (an integer).
fn time(ev: &mut Evaluator, args: &[Expr], _cur: Option<FrameId>) -> Val {
    if !args.is_empty() {
        return Val::Error;
    }
    Val::Int(now_secs(ev))
}

/// `currentTime()`: the current time as an absolute time (local offset).
fn current_time(ev: &mut Evaluator, args: &[Expr], _cur: Option<FrameId>) -> Val {
    if !args.is_empty() {
        return Val::Error;
    }
    current_abs_time(ev)
}

/// `timezoneOffset()`: the local zone's current UTC offset, a relative time.
fn timezone_offset(ev: &mut Evaluator, args: &[Expr], _cur: Option<FrameId>) -> Val {
    if !args.is_empty() {
        return Val::Error;
    }
    Val::Rel(local_offset(ev, now_secs(ev)) as f64)
}

/// `dayTime()`: the time elapsed since local midnight, a relative time.
fn day_time(ev: &mut Evaluator, args: &[Expr], _cur: Option<FrameId>) -> Val {
    if !args.is_empty() {
        return Val::Error;
    }
    let tm = local_tm(ev, now_secs(ev));
    Val::Rel((tm.hour * 3600 + tm.min * 60 + tm.sec) as f64)
}

/// `interval(n)`: `n` converted to an integer (taken as a C `int`) and
/// written `[-]D+HH:MM:SS`, `H:MM:SS`, `M:SS` or `S`, leading zero fields
/// omitted (`interval(90061)` is `"1+01:01:01"`, `interval(60)` `"1:00"`).
/// Values that cannot be converted, UNDEFINED included, are ERROR.
fn interval(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let [a] = args else { return Val::Error };
    let v = ev.eval_in(a, cur);
    let Ok(i) = to_int(&v) else { return Val::Error };
    let total = c_i64_to_i32(i);
    let days = total / 86400;
    let rest = total % 86400;
    let hours = rest / 3600;
    let mins = (rest % 3600) / 60;
    let secs = rest % 60;
    let (h, m, s) = (
        hours.unsigned_abs(),
        mins.unsigned_abs(),
        secs.unsigned_abs(),
    );
    let text = if days != 0 {
        format!("{days}+{h:02}:{m:02}:{s:02}")
    } else if hours != 0 {
        format!("{hours}:{m:02}:{s:02}")
    } else if mins != 0 {
        format!("{mins}:{s:02}")
    } else {
        format!("{secs}")
    };
    Val::str(text)
}

// ----- splitTime ----------------------------------------------------------

/// The ad `splitTime` gives for an absolute time: its fields in its own
/// offset, plus `Type = "AbsoluteTime"` and `Offset`.
fn abs_time_ad(t: AbsTime) -> ClassAd {
    let tm = broken_down(t.secs.wrapping_add(t.offset as i64), 0);
    let mut ad = ClassAd::new();
    ad.insert_value("Type", "AbsoluteTime");
    ad.insert_value("Year", tm.year);
    ad.insert_value("Month", tm.mon as i64 + 1);
    ad.insert_value("Day", tm.mday as i64);
    ad.insert_value("Hours", tm.hour as i64);
    ad.insert_value("Minutes", tm.min as i64);
    ad.insert_value("Seconds", tm.sec as i64);
    ad.insert_value("Offset", t.offset as i64);
    ad
}

/// The ad `splitTime` gives for a relative time: `Days`, `Hours`,
/// `Minutes` (integers, the sign on the first non-zero one) and `Seconds`
/// (a real keeping the fraction), plus `Type = "RelativeTime"`.
fn rel_time_ad(r: f64) -> ClassAd {
    let negative = r < 0.0;
    let r = r.abs();
    let whole = c_double_to_int(r);
    let mut days = whole / 86400;
    let mut hours = (whole % 86400) / 3600;
    let mut mins = (whole % 3600) / 60;
    let mut secs = (whole % 60) as f64 + (r - r.floor());
    if negative {
        if days > 0 {
            days = -days;
        } else if hours > 0 {
            hours = -hours;
        } else if mins > 0 {
            mins = -mins;
        } else {
            secs = -secs;
        }
    }
    let mut ad = ClassAd::new();
    ad.insert_value("Type", "RelativeTime");
    ad.insert_value("Days", days as i64);
    ad.insert_value("Hours", hours as i64);
    ad.insert_value("Minutes", mins as i64);
    ad.insert_value("Seconds", secs);
    ad
}

/// What `splitTime`/`formatTime` make of a time argument.
enum Split {
    /// An absolute time (numbers are seconds since the epoch, local zone).
    Abs(AbsTime),
    Rel(f64),
    /// An ad is used as it is.
    Ad(FrameId),
}

/// The reference's `doSplitTime` conversion; `None` for other types.
fn split_arg(ev: &Evaluator, v: &Val) -> Option<Split> {
    let local = |secs: i64| AbsTime {
        secs,
        offset: local_offset(ev, secs),
    };
    match v {
        Val::Int(i) => Some(Split::Abs(local(c_i64_to_i32(*i) as i64))),
        Val::Real(r) => Some(Split::Abs(local(c_double_to_int(*r) as i64))),
        Val::Abs(t) => Some(Split::Abs(*t)),
        Val::Rel(r) => Some(Split::Rel(*r)),
        Val::Ad(f) => Some(Split::Ad(*f)),
        _ => None,
    }
}

/// `splitTime(t)`: an ad with the fields of an absolute time (numbers are
/// seconds since the epoch in the local zone) or of a relative time.
/// UNDEFINED stays UNDEFINED; ads and other types are ERROR.
fn split_time(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let [a] = args else { return Val::Error };
    let v = ev.eval_in(a, cur);
    if v.is_undef() {
        return Val::Undefined;
    }
    let ad = match split_arg(ev, &v) {
        Some(Split::Abs(t)) => abs_time_ad(t),
        Some(Split::Rel(r)) => rel_time_ad(r),
        Some(Split::Ad(_)) | None => return Val::Error,
    };
    Val::Ad(ev.new_frame(ad, None))
}

// ----- formatTime ---------------------------------------------------------

/// A C `struct tm` as `formatTime` fills it: fields may be out of range
/// when they come from a user's ad.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fields {
    sec: i32,
    min: i32,
    hour: i32,
    mday: i32,
    /// 0-11
    mon: i32,
    /// The full year (not years since 1900).
    year: i64,
    wday: i32,
    yday: i32,
}

fn is_leap_year(year: i64) -> bool {
    let (mod4, mod400) = (year % 4, year % 400);
    mod4 == 0 && mod400 != 100 && mod400 != 200 && mod400 != 300
}

/// The reference's `fixed_from_gregorian` (a day number, R.D. 1 = Monday
/// 0001-01-01), computed in 64 bits.
fn fixed_from_gregorian(year: i64, month: i64, day: i64) -> i64 {
    let adjust = if month <= 2 {
        0
    } else if is_leap_year(year) {
        -1
    } else {
        -2
    };
    let y = year.wrapping_sub(1);
    365i64
        .wrapping_mul(y)
        .wrapping_add(y / 4)
        .wrapping_sub(y / 100)
        .wrapping_add(y / 400)
        .wrapping_add(367i64.wrapping_mul(month).wrapping_sub(362) / 12)
        .wrapping_add(adjust)
        .wrapping_add(day)
}

impl Fields {
    /// Fills in the weekday and the day of the year the way the reference
    /// does (its own calendar arithmetic, C truncating `%`).
    fn with_day_numbers(mut self) -> Fields {
        let fixed = fixed_from_gregorian(self.year, self.mon as i64 + 1, self.mday as i64);
        let jan1 = fixed_from_gregorian(self.year, 1, 1);
        self.wday = (fixed % 7) as i32;
        self.yday = fixed.wrapping_sub(jan1) as i32;
        self
    }

    /// The fields as the calendar module's `Tm`, if all are in its ranges.
    fn to_tm(self) -> Option<Tm> {
        let nonneg = |v: i32| u32::try_from(v).ok();
        let tm = Tm {
            year: self.year,
            mon: nonneg(self.mon).filter(|m| *m < 12)?,
            mday: nonneg(self.mday)?,
            hour: nonneg(self.hour)?,
            min: nonneg(self.min)?,
            sec: nonneg(self.sec)?,
            wday: nonneg(self.wday).filter(|w| *w < 7)?,
            yday: nonneg(self.yday)?,
            gmtoff: 0,
        };
        Some(tm)
    }
}

/// The fields of an absolute time in its own offset.
fn abs_fields(t: AbsTime) -> Fields {
    let tm = broken_down(t.secs.wrapping_add(t.offset as i64), 0);
    Fields {
        sec: tm.sec as i32,
        min: tm.min as i32,
        hour: tm.hour as i32,
        mday: tm.mday as i32,
        mon: tm.mon as i32,
        year: tm.year,
        wday: 0,
        yday: 0,
    }
    .with_day_numbers()
}

/// An integer attribute of an ad (as a C `int`); `None` if it is missing
/// or not an integer.
fn int_attr(ev: &mut Evaluator, f: FrameId, name: &str) -> Option<i32> {
    match ev.index_in(f, crate::name::intern(name)) {
        Val::Int(i) => Some(c_i64_to_i32(i)),
        _ => None,
    }
}

/// The fields `formatTime` reads from an ad (`Seconds`, `Minutes`,
/// `Hours`, `Day`, `Month` (1-12), `Year`); missing ones are 0.
fn ad_fields(ev: &mut Evaluator, f: FrameId) -> Fields {
    let mut get = |name: &str| int_attr(ev, f, name);
    let sec = get("Seconds").unwrap_or(0);
    let min = get("Minutes").unwrap_or(0);
    let hour = get("Hours").unwrap_or(0);
    let mday = get("Day").unwrap_or(0);
    let mon = get("Month").map_or(0, |m| m.wrapping_sub(1));
    let year = get("Year").map_or(1900, |y| y as i64);
    Fields {
        sec,
        min,
        hour,
        mday,
        mon,
        year,
        wday: 0,
        yday: 0,
    }
    .with_day_numbers()
}

/// C's `strftime` into the reference's 1023-byte buffer: a result that does
/// not fit gives the empty string.
fn format_fields(fmt: &[u8], f: &Fields) -> Vec<u8> {
    let out = match f.to_tm() {
        Some(tm) => strftime(fmt, &tm),
        None => strftime_raw(fmt, f),
    };
    if out.len() > 1022 {
        Vec::new()
    } else {
        out
    }
}

use crate::time::{MONTH, WDAY};

/// glibc's `strftime` for fields out of their normal ranges (only reachable
/// with a user's ad): numbers are printed as they are and names of
/// out-of-range days and months as `?`.
fn strftime_raw(fmt: &[u8], f: &Fields) -> Vec<u8> {
    let name = |table: &[&'static str], i: i32, full: bool| -> String {
        match usize::try_from(i).ok().and_then(|i| table.get(i)) {
            Some(n) if full => (*n).to_string(),
            Some(n) => n.chars().take(3).collect(),
            None => "?".to_string(),
        }
    };
    let hour12 = if f.hour % 12 == 0 { 12 } else { f.hour % 12 };
    let ampm = if f.hour > 11 { "PM" } else { "AM" };
    crate::time::expand_format(fmt, |spec, out| {
        let text: String = match spec {
            b'a' => name(&WDAY, f.wday, false),
            b'A' => name(&WDAY, f.wday, true),
            b'b' | b'h' => name(&MONTH, f.mon, false),
            b'B' => name(&MONTH, f.mon, true),
            b'c' => String::from_utf8_lossy(&strftime_raw(b"%a %b %e %H:%M:%S %Y", f)).into_owned(),
            b'C' => format!("{:02}", f.year.div_euclid(100)),
            b'd' => format!("{:02}", f.mday),
            b'D' | b'x' => String::from_utf8_lossy(&strftime_raw(b"%m/%d/%y", f)).into_owned(),
            b'e' => format!("{:>2}", f.mday),
            b'F' => String::from_utf8_lossy(&strftime_raw(b"%Y-%m-%d", f)).into_owned(),
            b'H' => format!("{:02}", f.hour),
            b'I' => format!("{hour12:02}"),
            b'j' => format!("{:03}", f.yday as i64 + 1),
            b'k' => format!("{:>2}", f.hour),
            b'l' => format!("{hour12:>2}"),
            b'm' => format!("{:02}", f.mon as i64 + 1),
            b'M' => format!("{:02}", f.min),
            b'n' => "\n".to_string(),
            b'p' => ampm.to_string(),
            b'P' => ampm.to_ascii_lowercase(),
            b'r' => String::from_utf8_lossy(&strftime_raw(b"%I:%M:%S %p", f)).into_owned(),
            b'R' => String::from_utf8_lossy(&strftime_raw(b"%H:%M", f)).into_owned(),
            b's' => {
                let days = days_from_civil(f.year, f.mon as i64 + 1, f.mday as i64);
                let secs = days
                    .wrapping_mul(86400)
                    .wrapping_add(f.hour as i64 * 3600 + f.min as i64 * 60 + f.sec as i64);
                secs.to_string()
            }
            b'S' => format!("{:02}", f.sec),
            b't' => "\t".to_string(),
            b'T' | b'X' => String::from_utf8_lossy(&strftime_raw(b"%H:%M:%S", f)).into_owned(),
            b'u' => format!("{}", if f.wday == 0 { 7 } else { f.wday }),
            b'U' => format!("{:02}", (f.yday as i64 + 7 - f.wday as i64) / 7),
            b'w' => format!("{}", f.wday),
            b'W' => format!(
                "{:02}",
                (f.yday as i64 + 7 - (f.wday as i64 + 6).rem_euclid(7)) / 7
            ),
            b'y' => format!("{:02}", f.year.rem_euclid(100)),
            b'Y' | b'G' => format!("{}", f.year),
            b'g' => format!("{:02}", f.year.rem_euclid(100)),
            b'V' => format!(
                "{:02}",
                (f.yday as i64 + 7 - (f.wday as i64 + 6).rem_euclid(7)) / 7
            ),
            b'z' => "+0000".to_string(),
            b'Z' => "UTC".to_string(),
            b'%' => "%".to_string(),
            _ => return false,
        };
        out.extend_from_slice(text.as_bytes());
        true
    })
}

/// `formatTime([t[, fmt]])`: C `strftime` of a time (default format `%c`,
/// default time now, in the local zone). Numbers are seconds since the
/// epoch in the local zone, an absolute time is formatted in its own
/// offset (`%z` always prints `+0000`), an ad supplies the fields `Year`,
/// `Month`, `Day`, `Hours`, `Minutes`, `Seconds`. Relative times, other
/// types, a non-string format and three or more arguments are ERROR.
fn format_time(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    if args.is_empty() {
        let tm = local_tm(ev, now_secs(ev));
        return Val::str(strftime(b"%c", &tm));
    }
    if args.len() > 2 {
        return Val::Error;
    }
    let v = ev.eval_in(&args[0], cur);
    let fields = match split_arg(ev, &v) {
        Some(Split::Abs(t)) => abs_fields(t),
        Some(Split::Ad(f)) => ad_fields(ev, f),
        Some(Split::Rel(_)) | None => return Val::Error,
    };
    let fmt = match args.get(1) {
        None => Val::str("%c"),
        Some(e) => ev.eval_in(e, cur),
    };
    match fmt {
        Val::Str(s) => Val::str(format_fields(&s, &fields)),
        _ => Val::Error,
    }
}

// ----- field getters ------------------------------------------------------

/// A field of an absolute time (broken down in the local zone) or of a
/// relative time (`None` where the field is not meaningful).
struct Getter {
    abs: fn(&Tm) -> Option<i64>,
    rel: fn(i64) -> Option<i64>,
}

/// The shared body of the `get*` functions: one argument, an absolute or
/// relative time; anything else (UNDEFINED included) is ERROR.
fn get_field(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>, g: Getter) -> Val {
    let [a] = args else { return Val::Error };
    let v = ev.eval_in(a, cur);
    let field = match v {
        Val::Abs(t) => (g.abs)(&local_tm(ev, t.secs)),
        Val::Rel(r) => (g.rel)(super::math::rel_secs(r)),
        _ => None,
    };
    field.map_or(Val::Error, Val::Int)
}

/// `getYear(t)`: the year of an absolute time in the local zone.
fn get_year(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    get_field(
        ev,
        args,
        cur,
        Getter {
            abs: |tm| Some(tm.year),
            rel: |_| None,
        },
    )
}

/// `getMonth(t)`: the month (1-12) of an absolute time.
fn get_month(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    get_field(
        ev,
        args,
        cur,
        Getter {
            abs: |tm| Some(tm.mon as i64 + 1),
            rel: |_| None,
        },
    )
}

/// `getDayOfYear(t)`: the day of the year, counted from 0.
fn get_day_of_year(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    get_field(
        ev,
        args,
        cur,
        Getter {
            abs: |tm| Some(tm.yday as i64),
            rel: |_| None,
        },
    )
}

/// `getDayOfMonth(t)`: the day of the month (1-31).
fn get_day_of_month(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    get_field(
        ev,
        args,
        cur,
        Getter {
            abs: |tm| Some(tm.mday as i64),
            rel: |_| None,
        },
    )
}

/// `getDayOfWeek(t)`: the weekday, 0 = Sunday.
fn get_day_of_week(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    get_field(
        ev,
        args,
        cur,
        Getter {
            abs: |tm| Some(tm.wday as i64),
            rel: |_| None,
        },
    )
}

/// `getDays(r)`: whole days of a relative time (ERROR for absolute times).
fn get_days(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    get_field(
        ev,
        args,
        cur,
        Getter {
            abs: |_| None,
            rel: |s| Some(s / 86400),
        },
    )
}

/// `getHours(t)`: the hour of an absolute time, or the hours field of a
/// relative time.
fn get_hours(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    get_field(
        ev,
        args,
        cur,
        Getter {
            abs: |tm| Some(tm.hour as i64),
            rel: |s| Some((s % 86400) / 3600),
        },
    )
}

/// `getMinutes(t)`: the minute of an absolute time, or the minutes field
/// of a relative time.
fn get_minutes(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    get_field(
        ev,
        args,
        cur,
        Getter {
            abs: |tm| Some(tm.min as i64),
            rel: |s| Some((s % 3600) / 60),
        },
    )
}

/// `getSeconds(t)`: the second of an absolute time, or the seconds field
/// of a relative time (fractions dropped).
fn get_seconds(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    get_field(
        ev,
        args,
        cur,
        Getter {
            abs: |tm| Some(tm.sec as i64),
            rel: |s| Some(s % 60),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::EvalOptions;

    fn ev_at(src: &str, now: f64) -> String {
        let e = crate::parse_expr(src).expect("parses");
        let mut ev = Evaluator::new(EvalOptions {
            now,
            ..EvalOptions::default()
        });
        ev.eval(&e, None, None).to_string()
    }

    fn ev(src: &str) -> String {
        ev_at(src, 1_600_000_000.5)
    }

    #[test]
    fn clock_functions() {
        assert_eq!(ev("time()"), "1600000000");
        assert_eq!(ev("time(1)"), "error");
        assert_eq!(
            ev("currentTime()"),
            "absTime(\"2020-09-13T12:26:40-00:00\")"
        );
        assert_eq!(ev("absTime()"), "absTime(\"2020-09-13T12:26:40-00:00\")");
        assert_eq!(ev("timezoneOffset()"), "relTime(\"00\")");
        assert_eq!(ev("dayTime()"), "relTime(\"12:26:40\")");
        assert_eq!(ev("formatTime()"), "\"Sun Sep 13 12:26:40 2020\"");
    }

    #[test]
    fn intervals() {
        assert_eq!(ev("interval(0)"), "\"0\"");
        assert_eq!(ev("interval(60)"), "\"1:00\"");
        assert_eq!(ev("interval(3725)"), "\"1:02:05\"");
        assert_eq!(ev("interval(90061)"), "\"1+01:01:01\"");
        assert_eq!(ev("interval(-90061)"), "\"-1+01:01:01\"");
        assert_eq!(ev("interval(-61)"), "\"-1:01\"");
        assert_eq!(ev("interval(\"60\")"), "\"1:00\"");
        assert_eq!(ev("interval(undefined)"), "error");
        assert_eq!(ev("interval()"), "error");
    }

    #[test]
    fn formatting() {
        assert_eq!(ev("formatTime(0)"), "\"Thu Jan  1 00:00:00 1970\"");
        assert_eq!(ev("formatTime(0, \"%Y-%m-%d\")"), "\"1970-01-01\"");
        assert_eq!(
            ev("formatTime(absTime(\"2020-02-29T12:34:56+01:00\"), \"%H:%M %z\")"),
            "\"12:34 +0000\""
        );
        assert_eq!(ev("formatTime(1e12, \"%Y\")"), "\"1901\"");
        assert_eq!(ev("formatTime(1.5, \"%S\")"), "\"01\"");
        assert_eq!(ev("formatTime(relTime(5))"), "error");
        assert_eq!(ev("formatTime(0, 1)"), "error");
        assert_eq!(ev("formatTime(undefined, \"%Y\")"), "error");
        assert_eq!(ev("formatTime(0, \"%Y\", 3)"), "error");
        assert_eq!(
            ev("formatTime([Year = 2020; Month = 2; Day = 29], \"%F %a\")"),
            "\"2020-02-29 Sat\""
        );
        assert_eq!(ev("formatTime([], \"%c\")"), "\"Sun Jan  0 00:00:00 1900\"");
        assert_eq!(ev("formatTime([Month = 13], \"%b %m\")"), "\"? 13\"");
    }

    #[test]
    fn splitting() {
        let v = ev("splitTime(absTime(\"2020-02-29T12:34:56+01:00\"))");
        for part in [
            "Year = 2020",
            "Month = 2",
            "Day = 29",
            "Hours = 12",
            "Offset = 3600",
            "Seconds = 56",
        ] {
            assert!(v.contains(part), "{v}");
        }
        let v = ev("splitTime(relTime(-90061.5))");
        for part in [
            "Days = -1",
            "Hours = 1",
            "Minutes = 1",
            "Seconds = 1.500000000000000E+00",
        ] {
            assert!(v.contains(part), "{v}");
        }
        assert_eq!(
            ev("splitTime(relTime(-5)).Seconds"),
            "-5.000000000000000E+00"
        );
        assert_eq!(ev("splitTime(0).Year"), "1970");
        assert_eq!(ev("splitTime(undefined)"), "undefined");
        assert_eq!(ev("splitTime(\"x\")"), "error");
        assert_eq!(ev("splitTime([a = 1])"), "error");
        assert_eq!(ev("splitTime()"), "error");
    }

    #[test]
    fn getters() {
        let t = "absTime(\"2020-02-29T12:34:56Z\")";
        assert_eq!(ev(&format!("getYear({t})")), "2020");
        assert_eq!(ev(&format!("getMonth({t})")), "2");
        assert_eq!(ev(&format!("getDayOfMonth({t})")), "29");
        assert_eq!(ev(&format!("getDayOfWeek({t})")), "6");
        assert_eq!(ev(&format!("getDayOfYear({t})")), "59");
        assert_eq!(ev(&format!("getHours({t})")), "12");
        assert_eq!(ev(&format!("getMinutes({t})")), "34");
        assert_eq!(ev(&format!("getSeconds({t})")), "56");
        assert_eq!(ev(&format!("getDays({t})")), "error");
        assert_eq!(
            ev("getYear(absTime(\"2020-12-31T23:30:00-05:00\"))"),
            "2021"
        );
        assert_eq!(ev("getDays(relTime(-90061))"), "-1");
        assert_eq!(ev("getHours(relTime(90061))"), "1");
        assert_eq!(ev("getSeconds(relTime(3725.5))"), "5");
        assert_eq!(ev("getYear(relTime(1))"), "error");
        assert_eq!(ev("getYear(\"x\")"), "error");
        assert_eq!(ev("getYear()"), "error");
    }
}
