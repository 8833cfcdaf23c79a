//! Where configuration text comes from: the [`FileSource`] trait and an in-memory implementation.
//!
//! The library never touches the file system itself; the caller (the `skua` binary, a daemon,
//! a test) hands in a `FileSource`.

use std::collections::BTreeMap;
use std::io;

/// Read access to configuration files and directories.
///
/// Paths are passed exactly as written in the configuration (after macro expansion): absolute,
/// or relative to whatever the implementation takes as its working directory (HTCondor resolves
/// relative include paths against the process's working directory).
pub trait FileSource {
    /// The whole content of the file at `path`.
    fn read(&self, path: &str) -> io::Result<String>;

    /// The names (not paths) of the regular files directly inside the directory `path`, in any
    /// order. Sub-directories are left out. An error if `path` is not a readable directory.
    fn list_dir(&self, path: &str) -> io::Result<Vec<String>>;

    /// Runs `command` and returns its standard output, for `include : COMMAND |`,
    /// `include command : COMMAND` and a `LOCAL_CONFIG_FILE` ending in `|`. An error (including
    /// a non-zero exit) refuses the configuration unless the include says `ifexist`.
    ///
    /// The default implementation refuses: a pure reader runs no programs.
    fn run_command(&self, command: &str) -> io::Result<String> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("running `{command}` is not supported by this file source"),
        ))
    }

    /// Every entry directly inside the directory `path` (files and sub-directories), in any
    /// order. The default lists only what [`FileSource::list_dir`] lists (regular files).
    fn list_entries(&self, path: &str) -> io::Result<Vec<DirEntry>> {
        Ok(self
            .list_dir(path)?
            .into_iter()
            .map(|name| DirEntry {
                name,
                is_dir: false,
            })
            .collect())
    }

    /// Whether `path` is an existing directory. The default asks [`FileSource::list_dir`].
    fn is_dir(&self, path: &str) -> bool {
        self.list_dir(path).is_ok()
    }

    /// The size in bytes of the regular file at `path`, if it exists. The default reads it.
    fn file_size(&self, path: &str) -> Option<u64> {
        self.read(path).ok().map(|t| t.len() as u64)
    }
}

/// One entry of a directory listing ([`FileSource::list_entries`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct DirEntry {
    /// The entry's name (not its path).
    pub name: String,
    /// Whether it is a directory.
    pub is_dir: bool,
}

/// An in-memory [`FileSource`]: a map from path to content. Directories exist implicitly as
/// the parents of the stored paths; a path ending in `/` stores an (empty) directory.
#[derive(Debug, Default, Clone)]
pub struct MemoryFiles {
    files: BTreeMap<String, String>,
}

impl MemoryFiles {
    /// An empty file system.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) a file; returns `self` for chaining.
    pub fn with(mut self, path: &str, text: &str) -> Self {
        self.insert(path, text);
        self
    }

    /// Adds (or replaces) a file.
    pub fn insert(&mut self, path: &str, text: &str) {
        self.files.insert(path.to_string(), text.to_string());
    }
}

impl FileSource for MemoryFiles {
    fn read(&self, path: &str) -> io::Result<String> {
        self.files
            .get(path)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such file"))
    }

    fn list_dir(&self, path: &str) -> io::Result<Vec<String>> {
        let dir = path.trim_end_matches('/');
        let prefix = format!("{dir}/");
        let mut found_any = false;
        let mut names = Vec::new();
        for key in self.files.keys() {
            if let Some(rest) = key.strip_prefix(&prefix) {
                found_any = true;
                if !rest.is_empty() && !rest.contains('/') {
                    names.push(rest.to_string());
                }
            }
        }
        if found_any {
            Ok(names)
        } else {
            Err(io::Error::new(io::ErrorKind::NotFound, "no such directory"))
        }
    }

    fn list_entries(&self, path: &str) -> io::Result<Vec<DirEntry>> {
        let dir = path.trim_end_matches('/');
        let prefix = format!("{dir}/");
        let mut found_any = false;
        let mut entries: BTreeMap<String, bool> = BTreeMap::new();
        for key in self.files.keys() {
            if let Some(rest) = key.strip_prefix(&prefix) {
                found_any = true;
                match rest.split_once('/') {
                    Some((d, _)) if !d.is_empty() => {
                        entries.insert(d.to_string(), true);
                    }
                    None if !rest.is_empty() => {
                        entries.entry(rest.to_string()).or_insert(false);
                    }
                    _ => {}
                }
            }
        }
        if found_any {
            Ok(entries
                .into_iter()
                .map(|(name, is_dir)| DirEntry { name, is_dir })
                .collect())
        } else {
            Err(io::Error::new(io::ErrorKind::NotFound, "no such directory"))
        }
    }

    fn is_dir(&self, path: &str) -> bool {
        let dir = path.trim_end_matches('/');
        let prefix = format!("{dir}/");
        dir.is_empty() || self.files.keys().any(|k| k.starts_with(&prefix))
    }

    fn file_size(&self, path: &str) -> Option<u64> {
        self.files
            .get(path)
            .filter(|_| !path.ends_with('/'))
            .map(|t| t.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_files_read_and_list() {
        let fs = MemoryFiles::new()
            .with("/etc/a", "A = 1\n")
            .with("/etc/d/x", "")
            .with("/etc/d/sub/y", "");
        assert_eq!(fs.read("/etc/a").expect("file"), "A = 1\n");
        assert!(fs.read("/etc/missing").is_err());
        assert_eq!(fs.list_dir("/etc/d").expect("dir"), vec!["x".to_string()]);
        assert_eq!(fs.list_dir("/etc/d/").expect("dir"), vec!["x".to_string()]);
        assert!(fs.list_dir("/nope").is_err());
    }
}
