//! Slot layout: how the machine's CPUs, memory and disk are divided into
//! slots, from HTCondor's knobs (`NUM_CPUS`, `MEMORY`, `NUM_SLOTS`,
//! `NUM_SLOTS_TYPE_<N>`, `SLOT_TYPE_<N>`, `SLOT_TYPE_<N>_PARTITIONABLE`).

use crate::SlotError;

/// One share of a resource in a slot type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Share {
    /// An even share of what the explicit shares leave.
    Auto,
    /// A fraction of the machine's total (`1/4`, `25%`).
    Fraction(f64),
    /// An absolute amount (CPUs; memory in MB; disk in KB).
    Amount(i64),
}

/// A parsed `SLOT_TYPE_<N>` value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlotTypeSpec {
    pub cpus: Share,
    pub memory: Share,
    pub disk: Share,
}

impl Default for SlotTypeSpec {
    fn default() -> Self {
        SlotTypeSpec {
            cpus: Share::Auto,
            memory: Share::Auto,
            disk: Share::Auto,
        }
    }
}

/// One slot type of the configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct SlotType {
    /// `N` of `SLOT_TYPE_<N>` (0 for the default layout).
    pub id: u32,
    /// `NUM_SLOTS_TYPE_<N>`.
    pub count: u32,
    pub spec: SlotTypeSpec,
    /// `SLOT_TYPE_<N>_PARTITIONABLE`.
    pub partitionable: bool,
}

/// The machine's resources and its slot types, as the configuration gives
/// them.
#[derive(Clone, Debug, PartialEq)]
pub struct LayoutConfig {
    /// `NUM_CPUS` (may exceed the detected CPUs: overcommit).
    pub cpus: i64,
    /// `MEMORY` (MB) or the detected memory, less `RESERVED_MEMORY`.
    pub memory_mb: i64,
    /// Free disk of `EXECUTE`, KB.
    pub disk_kb: i64,
    /// The slot types in order; empty: `NUM_SLOTS` even slots.
    pub types: Vec<SlotType>,
    /// `NUM_SLOTS` (default `NUM_CPUS`), used when `types` is empty.
    pub num_slots: u32,
}

/// One slot of the layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotDef {
    /// `SlotID`, from 1.
    pub id: u32,
    /// `SlotTypeID`.
    pub type_id: u32,
    pub partitionable: bool,
    pub cpus: i64,
    pub memory_mb: i64,
    pub disk_kb: i64,
}

fn bad(knob: &str, msg: impl Into<String>) -> SlotError {
    SlotError::Config {
        knob: knob.to_string(),
        message: msg.into(),
    }
}

/// Parses a share: `auto`, `1/4`, `25%`, or an amount (`unit` scales an
/// amount with a `K`/`M`/`G`/`T` suffix into the resource's unit, in KB:
/// memory is MB, so 1024; disk is KB, so 1; CPUs take no suffix).
fn parse_share(knob: &str, text: &str, unit_kb: Option<i64>) -> Result<Share, SlotError> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("auto") {
        return Ok(Share::Auto);
    }
    if let Some(p) = t.strip_suffix('%') {
        let v: f64 = p
            .trim()
            .parse()
            .map_err(|_| bad(knob, format!("`{t}` is not a percentage")))?;
        if !(0.0..=100.0).contains(&v) || v == 0.0 {
            return Err(bad(knob, format!("`{t}`: a share is between 0% and 100%")));
        }
        return Ok(Share::Fraction(v / 100.0));
    }
    if let Some((n, d)) = t.split_once('/') {
        let (n, d): (f64, f64) = match (n.trim().parse(), d.trim().parse()) {
            (Ok(n), Ok(d)) => (n, d),
            _ => return Err(bad(knob, format!("`{t}` is not a fraction"))),
        };
        if d <= 0.0 || n <= 0.0 || n > d {
            return Err(bad(knob, format!("`{t}`: a share is between 0 and 1")));
        }
        return Ok(Share::Fraction(n / d));
    }
    let (digits, scale) = match (unit_kb, t.char_indices().last()) {
        (Some(unit), Some((i, c))) if c.is_ascii_alphabetic() => {
            let kb: i64 = match c.to_ascii_uppercase() {
                'K' => 1,
                'M' => 1024,
                'G' => 1024 * 1024,
                'T' => 1024 * 1024 * 1024,
                _ => return Err(bad(knob, format!("`{t}`: unknown unit `{c}`"))),
            };
            (&t[..i], Some((kb, unit)))
        }
        _ => (t, None),
    };
    let v: f64 = digits.trim().parse().map_err(|_| {
        bad(
            knob,
            format!("`{t}` is not a number, fraction, percentage or auto"),
        )
    })?;
    if !v.is_finite() || v < 0.0 {
        return Err(bad(knob, format!("`{t}` is negative")));
    }
    let amount = match scale {
        Some((kb, unit)) => (v * kb as f64 / unit as f64).ceil() as i64,
        None => v as i64,
    };
    Ok(Share::Amount(amount))
}

/// Parses a `SLOT_TYPE_<N>` value: a list of `name=share` items (names
/// matched by their first letter: `c`pus, `r`am or `m`emory, `d`isk,
/// `s`wap/`v`irtual memory, which is accepted and ignored) and at most one
/// bare share, the default for the resources not named.
pub fn parse_slot_type(knob: &str, text: &str) -> Result<SlotTypeSpec, SlotError> {
    let mut spec = SlotTypeSpec::default();
    let mut named = [false; 3];
    let mut blanket: Option<Share> = None;
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        match item.split_once(['=', ':']) {
            Some((name, value)) => {
                let name = name.trim().to_ascii_lowercase();
                let (slot, unit) = match name.chars().next() {
                    Some('c') => (0, None),
                    Some('r') | Some('m') => (1, Some(1024)),
                    Some('d') => (2, Some(1)),
                    Some('s') | Some('v') => {
                        parse_share(knob, value, Some(1))?;
                        continue;
                    }
                    _ => {
                        return Err(bad(
                            knob,
                            format!("unknown resource `{name}` (use cpus, ram, disk or swap)"),
                        ))
                    }
                };
                if named[slot] {
                    return Err(bad(knob, format!("`{name}` is given twice")));
                }
                named[slot] = true;
                let share = parse_share(knob, value, unit)?;
                match slot {
                    0 => spec.cpus = share,
                    1 => spec.memory = share,
                    _ => spec.disk = share,
                }
            }
            None => {
                let share = parse_share(knob, item, None)?;
                if matches!(share, Share::Amount(_)) {
                    return Err(bad(
                        knob,
                        format!("`{item}`: a share for every resource is a fraction, a percentage or auto"),
                    ));
                }
                if blanket.replace(share).is_some() {
                    return Err(bad(knob, "more than one share for every resource"));
                }
            }
        }
    }
    if let Some(b) = blanket {
        if !named[0] {
            spec.cpus = b;
        }
        if !named[1] {
            spec.memory = b;
        }
        if !named[2] {
            spec.disk = b;
        }
    }
    Ok(spec)
}

/// Reads the layout knobs through `knob` (expanded values, `None` when
/// undefined or empty). `detected_cpus`, `detected_memory_mb` and
/// `disk_kb` are the measured facts.
pub fn layout_config(
    knob: &dyn Fn(&str) -> Option<String>,
    detected_cpus: i64,
    detected_memory_mb: i64,
    disk_kb: i64,
) -> Result<LayoutConfig, SlotError> {
    let int = |name: &str| -> Result<Option<i64>, SlotError> {
        match knob(name) {
            None => Ok(None),
            Some(v) if v.trim().is_empty() => Ok(None),
            Some(v) => v
                .trim()
                .parse::<i64>()
                .map(Some)
                .map_err(|_| bad(name, format!("`{v}` is not an integer"))),
        }
    };
    let cpus = int("NUM_CPUS")?.unwrap_or(detected_cpus);
    if cpus < 1 {
        return Err(bad("NUM_CPUS", format!("{cpus}: at least one CPU")));
    }
    let reserved = int("RESERVED_MEMORY")?.unwrap_or(0).max(0);
    let memory_mb = int("MEMORY")?.unwrap_or(detected_memory_mb) - reserved;
    if memory_mb < 1 {
        return Err(bad(
            "MEMORY",
            format!("{memory_mb} MB: no memory left for slots"),
        ));
    }
    let max_types = int("MAX_SLOT_TYPES")?.unwrap_or(10).clamp(1, 1000) as u32;
    let mut types = Vec::new();
    for n in 1..=max_types {
        let count_knob = format!("NUM_SLOTS_TYPE_{n}");
        let Some(count) = int(&count_knob)? else {
            continue;
        };
        if count < 0 {
            return Err(bad(&count_knob, format!("{count} is negative")));
        }
        if count == 0 {
            continue;
        }
        let type_knob = format!("SLOT_TYPE_{n}");
        let spec = match knob(&type_knob) {
            Some(t) if !t.trim().is_empty() => parse_slot_type(&type_knob, &t)?,
            _ => SlotTypeSpec::default(),
        };
        let part_knob = format!("SLOT_TYPE_{n}_PARTITIONABLE");
        let partitionable = match knob(&part_knob) {
            None => false,
            Some(t) if t.trim().is_empty() => false,
            Some(t) => parse_bool(&part_knob, &t)?,
        };
        types.push(SlotType {
            id: n,
            count: count as u32,
            spec,
            partitionable,
        });
    }
    let num_slots = match int("NUM_SLOTS")? {
        None => cpus,
        Some(n) if n < 1 => return Err(bad("NUM_SLOTS", format!("{n}: at least one slot"))),
        Some(n) if n > cpus => {
            return Err(bad(
                "NUM_SLOTS",
                format!("{n} slots but NUM_CPUS is {cpus}: a slot needs a CPU"),
            ))
        }
        Some(n) => n,
    };
    Ok(LayoutConfig {
        cpus,
        memory_mb,
        disk_kb: disk_kb.max(0),
        types,
        num_slots: num_slots as u32,
    })
}

/// A boolean knob: `true`/`false` in any case, or a ClassAd expression.
pub fn parse_bool(knob: &str, text: &str) -> Result<bool, SlotError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "1" => Ok(true),
        "false" | "no" | "0" => Ok(false),
        _ => {
            let e = classad::parse_expr(text)
                .map_err(|e| bad(knob, format!("`{text}` is not a boolean: {e}")))?;
            match classad::eval(&e) {
                classad::Value::Bool(b) => Ok(b),
                v => Err(bad(knob, format!("`{text}` is not a boolean ({v:?})"))),
            }
        }
    }
}

/// Divides the machine into slots as HTCondor does: for every resource,
/// the explicit shares (fractions of the total, amounts) are given first;
/// what they leave is divided evenly among the slots that said `auto` (or
/// did not name the resource). Asking more than exists is an error naming
/// the slot type's knob.
pub fn layout(cfg: &LayoutConfig) -> Result<Vec<SlotDef>, SlotError> {
    let types: Vec<SlotType> = if cfg.types.is_empty() {
        vec![SlotType {
            id: 0,
            count: cfg.num_slots,
            spec: SlotTypeSpec::default(),
            partitionable: false,
        }]
    } else {
        cfg.types.clone()
    };
    let knob_of = |t: &SlotType| {
        if t.id == 0 {
            "NUM_SLOTS".to_string()
        } else {
            format!("SLOT_TYPE_{}", t.id)
        }
    };
    // resource index: 0 cpus, 1 memory, 2 disk
    let totals = [cfg.cpus, cfg.memory_mb, cfg.disk_kb];
    let names = ["CPUs", "MB of memory", "KB of disk"];
    let share_of = |s: &SlotTypeSpec, r: usize| match r {
        0 => s.cpus,
        1 => s.memory,
        _ => s.disk,
    };
    let mut explicit: Vec<[i64; 3]> = Vec::new();
    let mut used = [0i64; 3];
    let mut autos = [0i64; 3];
    for t in &types {
        let mut amounts = [0i64; 3];
        for r in 0..3 {
            let a = match share_of(&t.spec, r) {
                Share::Auto => {
                    autos[r] += i64::from(t.count);
                    0
                }
                Share::Amount(a) => a,
                Share::Fraction(f) => {
                    let v = (totals[r] as f64 * f).floor() as i64;
                    if r == 0 {
                        v.max(1)
                    } else {
                        v
                    }
                }
            };
            amounts[r] = a;
            used[r] += a * i64::from(t.count);
            if used[r] > totals[r] && !(r == 2 && totals[r] == 0) {
                return Err(bad(
                    &knob_of(t),
                    format!(
                        "the slots ask for {} {} but the machine has {}",
                        used[r], names[r], totals[r]
                    ),
                ));
            }
        }
        explicit.push(amounts);
    }
    let mut auto_share = [0i64; 3];
    for r in 0..3 {
        if autos[r] > 0 {
            auto_share[r] = (totals[r] - used[r]) / autos[r];
            if r < 2 && auto_share[r] < 1 {
                let t = types
                    .iter()
                    .find(|t| share_of(&t.spec, r) == Share::Auto)
                    .map(knob_of)
                    .unwrap_or_default();
                return Err(bad(
                    &t,
                    format!(
                        "{} slot(s) share the {} {} left: less than one each",
                        autos[r],
                        totals[r] - used[r],
                        names[r]
                    ),
                ));
            }
        }
    }
    let mut slots = Vec::new();
    for (t, amounts) in types.iter().zip(&explicit) {
        for _ in 0..t.count {
            let pick = |r: usize| {
                if share_of(&t.spec, r) == Share::Auto {
                    auto_share[r]
                } else {
                    amounts[r]
                }
            };
            slots.push(SlotDef {
                id: slots.len() as u32 + 1,
                type_id: t.id,
                partitionable: t.partitionable,
                cpus: pick(0),
                memory_mb: pick(1),
                disk_kb: pick(2),
            });
        }
    }
    Ok(slots)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn cfg(
        knobs: &[(&str, &str)],
        cpus: i64,
        mem: i64,
        disk: i64,
    ) -> Result<Vec<SlotDef>, SlotError> {
        let map: BTreeMap<String, String> = knobs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let lookup = move |k: &str| map.get(k).cloned();
        layout(&layout_config(&lookup, cpus, mem, disk)?)
    }

    fn sizes(slots: &[SlotDef]) -> Vec<(i64, i64, i64, bool)> {
        slots
            .iter()
            .map(|s| (s.cpus, s.memory_mb, s.disk_kb, s.partitionable))
            .collect()
    }

    #[test]
    fn default_is_one_slot_per_cpu_with_even_shares() {
        let s = cfg(&[], 4, 8000, 4000).unwrap();
        assert_eq!(sizes(&s), vec![(1, 2000, 1000, false); 4]);
        assert_eq!(s.iter().map(|s| s.id).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
    }

    #[test]
    fn num_cpus_overcommits_and_memory_overrides() {
        let s = cfg(&[("NUM_CPUS", "6"), ("MEMORY", "600")], 2, 8000, 600).unwrap();
        assert_eq!(sizes(&s), vec![(1, 100, 100, false); 6]);
        let s = cfg(
            &[("MEMORY", "1000"), ("RESERVED_MEMORY", "200")],
            2,
            8000,
            0,
        )
        .unwrap();
        assert_eq!(s[0].memory_mb, 400);
    }

    #[test]
    fn num_slots_divides_evenly_and_cannot_exceed_cpus() {
        let s = cfg(&[("NUM_SLOTS", "2")], 4, 4000, 400).unwrap();
        assert_eq!(sizes(&s), vec![(2, 2000, 200, false); 2]);
        let e = cfg(&[("NUM_SLOTS", "5")], 4, 4000, 400).unwrap_err();
        assert!(e.to_string().contains("NUM_SLOTS"), "{e}");
    }

    #[test]
    fn slot_types_with_fractions_percentages_amounts_and_auto() {
        let s = cfg(
            &[
                ("NUM_SLOTS_TYPE_1", "1"),
                ("SLOT_TYPE_1", "cpus=2, mem=25%, disk=1/4"),
                ("NUM_SLOTS_TYPE_2", "2"),
                ("SLOT_TYPE_2", "cpus=1,ram=512"),
                ("NUM_SLOTS_TYPE_3", "1"),
                ("SLOT_TYPE_3", "auto"),
            ],
            8,
            4096,
            1000,
        )
        .unwrap();
        // memory: 1024 explicit + 2*512 = 2048; one auto slot gets the rest
        // cpus: 2 + 2 explicit, auto gets 4; disk: 250 explicit, three
        // auto shares of 750
        assert_eq!(
            sizes(&s),
            vec![
                (2, 1024, 250, false),
                (1, 512, 250, false),
                (1, 512, 250, false),
                (4, 2048, 250, false)
            ]
        );
        assert_eq!(
            s.iter().map(|s| s.type_id).collect::<Vec<_>>(),
            vec![1, 2, 2, 3]
        );
    }

    #[test]
    fn a_blanket_share_and_units() {
        let s = cfg(
            &[("NUM_SLOTS_TYPE_1", "2"), ("SLOT_TYPE_1", "1/2, ram=1G")],
            4,
            4096,
            800,
        )
        .unwrap();
        assert_eq!(sizes(&s), vec![(2, 1024, 400, false); 2]);
    }

    #[test]
    fn partitionable_slot_takes_everything() {
        let s = cfg(
            &[
                ("NUM_SLOTS_TYPE_1", "1"),
                ("SLOT_TYPE_1", "100%"),
                ("SLOT_TYPE_1_PARTITIONABLE", "TRUE"),
            ],
            4,
            4096,
            800,
        )
        .unwrap();
        assert_eq!(sizes(&s), vec![(4, 4096, 800, true)]);
    }

    #[test]
    fn errors_name_the_knob() {
        let e = cfg(
            &[("NUM_SLOTS_TYPE_1", "3"), ("SLOT_TYPE_1", "cpus=2")],
            4,
            4096,
            800,
        )
        .unwrap_err();
        assert!(e.to_string().contains("SLOT_TYPE_1"), "{e}");
        assert!(e.to_string().contains("6 CPUs"), "{e}");
        for bad_spec in [
            "cpus=two",
            "gpus=1",
            "cpus=1, cpus=2",
            "150%",
            "3/2",
            "1/4, 1/2",
        ] {
            let e = cfg(
                &[("NUM_SLOTS_TYPE_2", "1"), ("SLOT_TYPE_2", bad_spec)],
                4,
                4096,
                800,
            )
            .unwrap_err();
            assert!(e.to_string().contains("SLOT_TYPE_2"), "{bad_spec}: {e}");
        }
        let e = cfg(&[("NUM_SLOTS_TYPE_1", "x")], 4, 4096, 800).unwrap_err();
        assert!(e.to_string().contains("NUM_SLOTS_TYPE_1"), "{e}");
        let e = cfg(
            &[
                ("NUM_SLOTS_TYPE_1", "1"),
                ("SLOT_TYPE_1_PARTITIONABLE", "maybe"),
            ],
            4,
            4096,
            800,
        )
        .unwrap_err();
        assert!(e.to_string().contains("SLOT_TYPE_1_PARTITIONABLE"), "{e}");
        // more auto slots than CPUs left
        let e = cfg(
            &[
                ("NUM_SLOTS_TYPE_1", "1"),
                ("SLOT_TYPE_1", "cpus=4"),
                ("NUM_SLOTS_TYPE_2", "1"),
            ],
            4,
            4096,
            800,
        )
        .unwrap_err();
        assert!(e.to_string().contains("SLOT_TYPE_2"), "{e}");
    }
}
