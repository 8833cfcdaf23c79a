//! Files the starter names on this host instead of sending them: when
//! the starter and the shadow share the host, a checkpoint file is
//! copied from the job's sandbox by the kernel (`copy_file_range`, as
//! `cp` does), not streamed through both processes.
//!
//! The shadow opens the file with the job owner's rights (the starter
//! read it with the same rights) and checks it is the very file the
//! starter meant: a regular file with the device, inode and length the
//! starter saw. Anything else is refused, and the starter sends the
//! bytes instead. Plain file operations, synchronous, run by the caller
//! on a thread with the right credentials.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use skua_proto::LocalSource;

/// Why a named file was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LocalCopyError {
    /// Not an absolute path.
    #[error("{0:?} is not an absolute path")]
    NotAbsolute(String),
    /// It could not be opened or inspected.
    #[error("{path}: {source}")]
    Open {
        /// The path.
        path: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// It is not the file the starter named.
    #[error("{0} is not the file the starter named (another file, or changed since)")]
    Changed(String),
}

/// Opens the file `src` names (with the caller's rights) and checks it.
pub fn open_source(src: &LocalSource) -> Result<File, LocalCopyError> {
    let path = Path::new(&src.path);
    if !path.is_absolute() {
        return Err(LocalCopyError::NotAbsolute(src.path.clone()));
    }
    let open_err = |source| LocalCopyError::Open {
        path: src.path.clone(),
        source,
    };
    let file = File::open(path).map_err(open_err)?;
    let meta = file.metadata().map_err(open_err)?;
    if !meta.is_file() || meta.dev() != src.dev || meta.ino() != src.ino || meta.len() != src.len {
        return Err(LocalCopyError::Changed(src.path.clone()));
    }
    Ok(file)
}

/// Copies `len` bytes of `from` into `to` (both at their start; `to`
/// empty), in the kernel where it can (`std::io::copy` between files uses
/// `copy_file_range`, and falls back to reading and writing). A source
/// that turns out shorter than `len` is an error.
pub fn copy(from: &mut File, to: &mut File, len: u64) -> io::Result<u64> {
    let copied = io::copy(&mut io::Read::take(&mut *from, len), to)?;
    if copied != len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("the file ended after {copied} of {len} bytes"),
        ));
    }
    Ok(copied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn source_of(path: &Path) -> LocalSource {
        let m = std::fs::metadata(path).expect("stat");
        LocalSource {
            path: path.to_string_lossy().into_owned(),
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
        }
    }

    #[test]
    fn the_named_file_is_copied_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = dir.path().join("a");
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::File::create(&a)
            .and_then(|mut f| f.write_all(&data))
            .expect("write");
        let src = source_of(&a);
        let mut from = open_source(&src).expect("open");
        let b = dir.path().join("b");
        let mut to = std::fs::File::create(&b).expect("create");
        assert_eq!(copy(&mut from, &mut to, src.len).expect("copy"), 300_000);
        let mut back = Vec::new();
        std::fs::File::open(&b)
            .and_then(|mut f| f.read_to_end(&mut back))
            .expect("read");
        assert_eq!(back, data);
    }

    #[test]
    fn another_file_at_the_same_place_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = dir.path().join("a");
        std::fs::write(&a, b"first").expect("write");
        let src = source_of(&a);
        // replaced by another file of the same length since
        std::fs::remove_file(&a).expect("rm");
        std::fs::write(dir.path().join("other"), b"x").expect("write");
        std::fs::write(&a, b"secon").expect("write");
        let err = open_source(&src).expect_err("another inode");
        assert!(matches!(err, LocalCopyError::Changed(_)), "{err}");
        // grown since
        let src = source_of(&a);
        std::fs::write(&a, b"second!").expect("write");
        assert!(matches!(open_source(&src), Err(LocalCopyError::Changed(_))));
        // a directory, a relative path, a missing file
        let mut d = source_of(dir.path());
        d.len = std::fs::metadata(dir.path()).expect("stat").len();
        assert!(matches!(open_source(&d), Err(LocalCopyError::Changed(_))));
        let rel = LocalSource {
            path: "a".into(),
            ..source_of(&a)
        };
        assert!(matches!(
            open_source(&rel),
            Err(LocalCopyError::NotAbsolute(_))
        ));
        let gone = LocalSource {
            path: dir.path().join("gone").to_string_lossy().into_owned(),
            ..source_of(&a)
        };
        assert!(matches!(
            open_source(&gone),
            Err(LocalCopyError::Open { .. })
        ));
    }

    #[test]
    fn a_source_shorter_than_named_fails_the_copy() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = dir.path().join("a");
        std::fs::write(&a, b"short").expect("write");
        let mut from = std::fs::File::open(&a).expect("open");
        let mut to = std::fs::File::create(dir.path().join("b")).expect("create");
        assert!(copy(&mut from, &mut to, 10).is_err());
    }
}
