//! Attribute names, folded and interned once at parse time.
//!
//! HTCondor compares attribute names case-insensitively (ASCII). Comparing
//! strings case-insensitively on every lookup is the single biggest cost of a
//! naive implementation, so every [`Name`] carries a small integer symbol
//! for its ASCII-lowercased spelling, assigned once by a process-wide
//! interner. Lookups compare symbols only.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock, RwLock};

/// An interned, case-folded attribute name.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Sym(pub(crate) u32);

/// Symbols known to the evaluator, interned first so they have fixed ids.
pub(crate) mod well_known {
    use super::Sym;
    pub const MY: Sym = Sym(0);
    pub const TARGET: Sym = Sym(1);
    pub const OTHER: Sym = Sym(2);
    pub const PARENT: Sym = Sym(3);
    pub const ROOT: Sym = Sym(4);
    pub const TOPLEVEL: Sym = Sym(5);
    pub const SELF: Sym = Sym(6);
    pub const CURRENT_TIME: Sym = Sym(7);
    pub const LEFT: Sym = Sym(8);
    pub const RIGHT: Sym = Sym(9);
    pub const LCTX: Sym = Sym(10);
    pub const RCTX: Sym = Sym(11);
    pub const REQUIREMENTS: Sym = Sym(12);
    pub const RANK: Sym = Sym(13);
    #[allow(dead_code)]
    pub const AD: Sym = Sym(14);
    pub(crate) const NAMES: [&str; 15] = [
        "my",
        "target",
        "other",
        "parent",
        "root",
        "toplevel",
        "self",
        "currenttime",
        "left",
        "right",
        "lctx",
        "rctx",
        "requirements",
        "rank",
        "ad",
    ];
}

struct Interner {
    map: HashMap<Box<str>, u32>,
}

fn interner() -> &'static RwLock<Interner> {
    static INTERNER: OnceLock<RwLock<Interner>> = OnceLock::new();
    INTERNER.get_or_init(|| {
        let mut map = HashMap::new();
        for (i, n) in well_known::NAMES.iter().enumerate() {
            map.insert((*n).into(), i as u32);
        }
        RwLock::new(Interner { map })
    })
}

/// Interns the ASCII-lowercased form of `name`.
pub fn intern(name: &str) -> Sym {
    // Most names repeat: the per-thread cache answers without the global
    // lock or hashing the folded copy.
    let hit = CACHE.with(|c| c.borrow().get(name).map(|(sym, _)| *sym));
    match hit {
        Some(sym) => sym,
        None => intern_name(name).0,
    }
}

/// Interns the ASCII-lowercased form of `name` in the process-wide table.
fn intern_global(name: &str) -> Sym {
    let lowered: std::borrow::Cow<'_, str> = if name.bytes().any(|b| b.is_ascii_uppercase()) {
        std::borrow::Cow::Owned(name.to_ascii_lowercase())
    } else {
        std::borrow::Cow::Borrowed(name)
    };
    {
        let guard = interner().read().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = guard.map.get(lowered.as_ref()) {
            return Sym(id);
        }
    }
    let mut guard = interner().write().unwrap_or_else(|e| e.into_inner());
    let next = guard.map.len() as u32;
    let id = *guard
        .map
        .entry(lowered.into_owned().into_boxed_str())
        .or_insert(next);
    Sym(id)
}

/// A small, fast string hasher for the per-thread name cache.
#[derive(Default)]
struct NameHasher(u64);
impl std::hash::Hasher for NameHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mix = |h: u64, w: u64| (h.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        let mut h = self.0;
        // Whole words are loaded as such; the tail (zero-padded, as a word)
        // is assembled in a register: copying it into a buffer and loading
        // the buffer as a word stalls the processor (no store forwarding).
        let mut words = bytes.chunks_exact(8);
        for c in &mut words {
            h = mix(
                h,
                u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
            );
        }
        let tail = words.remainder();
        if !tail.is_empty() {
            let w = tail
                .iter()
                .rev()
                .fold(0u64, |w, &b| (w << 8) | u64::from(b));
            h = mix(h, w);
        }
        self.0 = h;
    }
}

type NameCache = HashMap<Box<str>, (Sym, Arc<str>), std::hash::BuildHasherDefault<NameHasher>>;

thread_local! {
    /// Exact spelling -> (symbol, shared spelling): most names repeat, and a
    /// hit costs neither the global lock nor an allocation.
    static CACHE: std::cell::RefCell<NameCache> = std::cell::RefCell::new(NameCache::default());
}

/// The symbol and a shared copy of the spelling of `text`.
fn intern_name(text: &str) -> (Sym, Arc<str>) {
    let hit = CACHE.with(|c| c.borrow().get(text).cloned());
    if let Some(h) = hit {
        return h;
    }
    let entry = (intern_global(text), Arc::<str>::from(text));
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() > 100_000 {
            // bounded: hostile input with endless distinct names
            c.clear();
        }
        c.insert(text.into(), entry.clone());
    });
    entry
}

/// An attribute name as written (its case is kept for printing) together
/// with its folded symbol (used for every comparison).
#[derive(Clone)]
pub struct Name {
    pub(crate) sym: Sym,
    text: Arc<str>,
}

impl Name {
    /// Makes a name, interning its folded form.
    pub fn new(text: &str) -> Name {
        let (sym, text) = intern_name(text);
        Name { sym, text }
    }

    /// The name as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The case-folded symbol.
    pub fn sym(&self) -> Sym {
        self.sym
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Self) -> bool {
        self.sym == other.sym
    }
}
impl Eq for Name {}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", &*self.text)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Name {
        Name::new(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fold_case() {
        assert_eq!(Name::new("Memory"), Name::new("MEMORY"));
        assert_eq!(Name::new("memory").sym(), intern("mEmOrY"));
        assert_ne!(Name::new("Memory"), Name::new("Memory2"));
        assert_eq!(Name::new("Memory").as_str(), "Memory");
    }

    #[test]
    fn well_known_symbols_are_fixed() {
        assert_eq!(intern("TARGET"), well_known::TARGET);
        assert_eq!(intern("My"), well_known::MY);
        assert_eq!(intern("CurrentTime"), well_known::CURRENT_TIME);
        assert_eq!(intern("Requirements"), well_known::REQUIREMENTS);
    }
}
