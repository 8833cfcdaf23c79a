//! The schedd's durable store: the job queue and its history in SQLite.
//!
//! The queue lives in memory (the `skua-queue` core); this store keeps a
//! copy that survives any crash. Every change the core decides is written
//! here in one SQLite transaction before anybody is told it happened, so a
//! submission is wholly present or wholly absent after a crash.
//!
//! Layout: `clusters(cluster, ad)` holds each cluster's common attributes,
//! `jobs(cluster, proc, ad)` each job's own attributes (chained to its
//! cluster ad when loaded), `history(seq, ...)` the final ads of jobs that
//! left the queue, `meta(key, value)` the schema version and the next
//! cluster id, `submissions(key, ...)` the cluster each keyed submission
//! made (so that a retried submission is answered, not repeated). Ads are
//! stored as canonical ClassAd text.
//!
//! The file and its `-wal` and `-shm` companions hold every user's job ads
//! (environments, arguments): they are created readable by the schedd's
//! user only (0600), and tightened to that when found more open.
//!
//! Durability: WAL journal with `synchronous = FULL`, so a commit returns
//! only after the write-ahead log is on disk; a run's bookkeeping (start,
//! executing, usage) is committed relaxed ([`Sync::Relaxed`]): whole or
//! absent after a crash, flushed by the next full commit. A schedd that
//! restarts puts jobs it finds Running back to Idle, so losing such a
//! commit to a machine crash changes nothing a user relies on.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension};

/// The layout version this build writes and reads.
pub const SCHEMA_VERSION: i64 = 1;

/// How durable a commit must be when it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sync {
    /// On disk: survives a crash of the machine (`synchronous = FULL`).
    Full,
    /// Written but not flushed: survives a crash of the schedd, and of the
    /// machine once a later `Full` commit returns (`synchronous = NORMAL`
    /// in WAL mode). For bookkeeping that the schedd rebuilds anyway after
    /// a restart (a run's start, progress and resource usage).
    Relaxed,
}

/// A store failure. The schedd treats any of these during a commit as
/// fatal for the change (nothing was committed) and reports it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite refused.
    #[error("job queue database {path}: {source}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// The file was written by an incompatible version.
    #[error(
        "job queue database {path}: layout version {found}, this build reads {SCHEMA_VERSION}"
    )]
    Version {
        /// The database file.
        path: PathBuf,
        /// The version found.
        found: i64,
    },
    /// The file's permissions could not be set.
    #[error("job queue database {path}: {source}")]
    Io {
        /// The database file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A row that cannot be what it claims to be.
    #[error("job queue database {path}: {what}")]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
}

/// One job that left the queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryRow {
    /// ClusterId.
    pub cluster: u32,
    /// ProcId.
    pub proc: u32,
    /// Owner.
    pub owner: String,
    /// When it left (CompletionDate or the removal time), Unix seconds.
    pub completion: i64,
    /// The whole final ad, canonical text.
    pub ad: String,
}

/// A submission made with a key: a retry with the same key is answered
/// with this instead of queueing the jobs again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubmissionRow {
    /// The key the submitting tool chose.
    pub key: String,
    /// Who submitted.
    pub owner: String,
    /// The cluster made.
    pub cluster: u32,
    /// How many jobs it had.
    pub jobs: u32,
    /// When (Unix seconds).
    pub at: i64,
}

/// How long the key of a submission is remembered (seconds): a retry comes
/// within seconds; a week covers any client that waits and tries again.
pub const SUBMISSION_KEY_LIFETIME: i64 = 7 * 24 * 3600;

/// Everything one transaction changes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// The next cluster id to hand out, when it changes.
    pub next_cluster: Option<u32>,
    /// Cluster ads written (inserted or replaced).
    pub put_clusters: Vec<(u32, String)>,
    /// Job ads written (inserted or replaced).
    pub put_jobs: Vec<(u32, u32, String)>,
    /// Jobs deleted from the queue.
    pub delete_jobs: Vec<(u32, u32)>,
    /// Clusters deleted from the queue.
    pub delete_clusters: Vec<u32>,
    /// Jobs appended to the history.
    pub history: Vec<HistoryRow>,
    /// A keyed submission recorded with its cluster.
    pub submission: Option<SubmissionRow>,
}

impl Changes {
    /// True when committing would write nothing.
    pub fn is_empty(&self) -> bool {
        self.next_cluster.is_none()
            && self.put_clusters.is_empty()
            && self.put_jobs.is_empty()
            && self.delete_jobs.is_empty()
            && self.delete_clusters.is_empty()
            && self.history.is_empty()
            && self.submission.is_none()
    }
}

/// The queue as stored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The next cluster id to hand out (1 for a new queue).
    pub next_cluster: u32,
    /// Cluster ads.
    pub clusters: Vec<(u32, String)>,
    /// Job ads, in (cluster, proc) order.
    pub jobs: Vec<(u32, u32, String)>,
}

/// The open database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// The connection's current `synchronous` setting.
    sync: Sync,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// Opens (creating if needed) the database at `path`.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let err = |source| StoreError::Sqlite {
            path: path.to_path_buf(),
            source,
        };
        private_files(path).map_err(|e| StoreError::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        let conn = Connection::open(path).map_err(err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(err)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(err)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(err)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS clusters (cluster INTEGER PRIMARY KEY, ad TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS jobs (
                 cluster INTEGER NOT NULL, proc INTEGER NOT NULL, ad TEXT NOT NULL,
                 PRIMARY KEY (cluster, proc)) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS history (
                 seq INTEGER PRIMARY KEY AUTOINCREMENT, cluster INTEGER NOT NULL,
                 proc INTEGER NOT NULL, owner TEXT NOT NULL, completion INTEGER NOT NULL,
                 ad TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS submissions (
                 key TEXT PRIMARY KEY, owner TEXT NOT NULL, cluster INTEGER NOT NULL,
                 jobs INTEGER NOT NULL, at INTEGER NOT NULL);
             INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', 1);
             INSERT OR IGNORE INTO meta (key, value) VALUES ('next_cluster', 1);",
        )
        .map_err(err)?;
        let store = Store {
            sync: Sync::Full,
            conn,
            path: path.to_path_buf(),
        };
        let version = store.meta("schema_version")?.unwrap_or(0);
        if version != SCHEMA_VERSION {
            return Err(StoreError::Version {
                path: store.path.clone(),
                found: version,
            });
        }
        Ok(store)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    fn corrupt(&self, what: impl Into<String>) -> StoreError {
        StoreError::Corrupt {
            path: self.path.clone(),
            what: what.into(),
        }
    }

    fn meta(&self, key: &str) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))
    }

    fn id(&self, v: i64, what: &str) -> Result<u32, StoreError> {
        u32::try_from(v).map_err(|_| self.corrupt(format!("{what} {v} out of range")))
    }

    /// Reads the whole queue.
    pub fn load(&self) -> Result<Snapshot, StoreError> {
        let next = self.meta("next_cluster")?.unwrap_or(1);
        let mut snap = Snapshot {
            next_cluster: self.id(next, "next cluster id")?,
            ..Snapshot::default()
        };
        let mut stmt = self
            .conn
            .prepare("SELECT cluster, ad FROM clusters ORDER BY cluster")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            .map_err(|e| self.err(e))?;
        for row in rows {
            let (c, ad) = row.map_err(|e| self.err(e))?;
            snap.clusters.push((self.id(c, "cluster id")?, ad));
        }
        let mut stmt = self
            .conn
            .prepare("SELECT cluster, proc, ad FROM jobs ORDER BY cluster, proc")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        for row in rows {
            let (c, p, ad) = row.map_err(|e| self.err(e))?;
            snap.jobs
                .push((self.id(c, "cluster id")?, self.id(p, "proc id")?, ad));
        }
        Ok(snap)
    }

    /// Writes `changes` in one transaction; when this returns `Ok` the
    /// change is on disk, and when it returns `Err` nothing of it is.
    pub fn commit(&mut self, changes: &Changes) -> Result<(), StoreError> {
        self.commit_as(changes, Sync::Full)
    }

    /// Writes `changes` in one transaction with the given durability.
    /// [`Sync::Relaxed`] skips the flush to disk: the transaction is whole
    /// or absent after any crash of the process, and after a crash of the
    /// machine it may be lost, together with the relaxed transactions just
    /// before it but never anything before the last [`Sync::Full`] commit,
    /// which also makes every earlier relaxed one durable.
    pub fn commit_as(&mut self, changes: &Changes, sync: Sync) -> Result<(), StoreError> {
        if changes.is_empty() {
            return Ok(());
        }
        let path = self.path.clone();
        let err = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        if sync != self.sync {
            let mode = match sync {
                Sync::Full => "FULL",
                Sync::Relaxed => "NORMAL",
            };
            self.conn
                .pragma_update(None, "synchronous", mode)
                .map_err(err)?;
            self.sync = sync;
        }
        let tx = self.conn.transaction().map_err(err)?;
        {
            if let Some(n) = changes.next_cluster {
                tx.execute(
                    "UPDATE meta SET value = ?1 WHERE key = 'next_cluster'",
                    [i64::from(n)],
                )
                .map_err(err)?;
            }
            let mut put_cluster = tx
                .prepare_cached("INSERT OR REPLACE INTO clusters (cluster, ad) VALUES (?1, ?2)")
                .map_err(err)?;
            for (c, ad) in &changes.put_clusters {
                put_cluster.execute(params![c, ad]).map_err(err)?;
            }
            let mut put_job = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO jobs (cluster, proc, ad) VALUES (?1, ?2, ?3)",
                )
                .map_err(err)?;
            for (c, p, ad) in &changes.put_jobs {
                put_job.execute(params![c, p, ad]).map_err(err)?;
            }
            let mut del_job = tx
                .prepare_cached("DELETE FROM jobs WHERE cluster = ?1 AND proc = ?2")
                .map_err(err)?;
            for (c, p) in &changes.delete_jobs {
                del_job.execute(params![c, p]).map_err(err)?;
            }
            let mut del_cluster = tx
                .prepare_cached("DELETE FROM clusters WHERE cluster = ?1")
                .map_err(err)?;
            for c in &changes.delete_clusters {
                del_cluster.execute(params![c]).map_err(err)?;
            }
            let mut hist = tx
                .prepare_cached(
                    "INSERT INTO history (cluster, proc, owner, completion, ad)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(err)?;
            for h in &changes.history {
                hist.execute(params![h.cluster, h.proc, h.owner, h.completion, h.ad])
                    .map_err(err)?;
            }
            if let Some(sub) = &changes.submission {
                tx.execute(
                    "DELETE FROM submissions WHERE at < ?1",
                    [sub.at - SUBMISSION_KEY_LIFETIME],
                )
                .map_err(err)?;
                tx.execute(
                    "INSERT OR REPLACE INTO submissions (key, owner, cluster, jobs, at)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![sub.key, sub.owner, sub.cluster, sub.jobs, sub.at],
                )
                .map_err(err)?;
            }
        }
        tx.commit().map_err(err)
    }

    /// The submission recorded under `key`, if it is remembered.
    pub fn submission(&self, key: &str) -> Result<Option<SubmissionRow>, StoreError> {
        self.conn
            .query_row(
                "SELECT owner, cluster, jobs, at FROM submissions WHERE key = ?1",
                [key],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, i64>(3)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| self.err(e))?
            .map(|(owner, cluster, jobs, at)| {
                Ok(SubmissionRow {
                    key: key.to_string(),
                    owner,
                    cluster: self.id(cluster, "cluster id")?,
                    jobs: self.id(jobs, "job count")?,
                    at,
                })
            })
            .transpose()
    }

    /// Visits the history newest first; `visit` returns false to stop.
    pub fn history(&self, mut visit: impl FnMut(&HistoryRow) -> bool) -> Result<(), StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT cluster, proc, owner, completion, ad FROM history ORDER BY seq DESC")
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let get = |i| r.get::<_, i64>(i);
            let row = HistoryRow {
                cluster: self.id(get(0).map_err(|e| self.err(e))?, "cluster id")?,
                proc: self.id(get(1).map_err(|e| self.err(e))?, "proc id")?,
                owner: r.get(2).map_err(|e| self.err(e))?,
                completion: get(3).map_err(|e| self.err(e))?,
                ad: r.get(4).map_err(|e| self.err(e))?,
            };
            if !visit(&row) {
                break;
            }
        }
        Ok(())
    }

    /// Keeps only the newest `keep` history rows; returns how many went.
    pub fn trim_history(&mut self, keep: usize) -> Result<usize, StoreError> {
        let keep = i64::try_from(keep).unwrap_or(i64::MAX);
        self.conn
            .execute(
                "DELETE FROM history WHERE seq <= (SELECT seq FROM history ORDER BY seq DESC LIMIT 1 OFFSET ?1)",
                [keep],
            )
            .map_err(|e| self.err(e))
    }
}

/// Creates the database file readable and writable by its owner only
/// (0600) when it does not exist, and takes away any access of the group
/// and others from it and its `-wal` and `-shm` companions when they do.
/// (SQLite gives the companions it creates the database file's mode.)
fn private_files(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    if !path.exists() {
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)?;
    }
    let mut names = vec![path.to_path_buf()];
    for suffix in ["-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        names.push(PathBuf::from(p));
    }
    for p in names {
        match std::fs::metadata(&p) {
            Ok(m) if m.permissions().mode() & 0o077 != 0 => {
                let mode = m.permissions().mode() & 0o700;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode))?;
                tracing::info!("{}: access of group and others taken away", p.display());
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(dir: &tempfile::TempDir) -> Store {
        Store::open(&dir.path().join("queue.db")).unwrap()
    }

    #[test]
    fn a_new_store_is_empty_and_starts_at_cluster_one() {
        let dir = tempfile::tempdir().unwrap();
        let snap = open(&dir).load().unwrap();
        assert_eq!(snap.next_cluster, 1);
        assert!(snap.clusters.is_empty() && snap.jobs.is_empty());
    }

    #[test]
    fn relaxed_and_full_commits_interleave_and_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut s = open(&dir);
            let put = |p: u32, ad: &str| Changes {
                put_jobs: vec![(5, p, ad.into())],
                ..Changes::default()
            };
            s.commit_as(&put(0, "[ JobStatus = 1 ]"), Sync::Full)
                .unwrap();
            s.commit_as(&put(0, "[ JobStatus = 2 ]"), Sync::Relaxed)
                .unwrap();
            s.commit_as(&put(1, "[ JobStatus = 1 ]"), Sync::Relaxed)
                .unwrap();
            s.commit_as(&put(1, "[ JobStatus = 4 ]"), Sync::Full)
                .unwrap();
            s.commit_as(&put(2, "[ JobStatus = 2 ]"), Sync::Relaxed)
                .unwrap();
        }
        let snap = open(&dir).load().unwrap();
        assert_eq!(
            snap.jobs,
            vec![
                (5, 0, "[ JobStatus = 2 ]".to_string()),
                (5, 1, "[ JobStatus = 4 ]".to_string()),
                (5, 2, "[ JobStatus = 2 ]".to_string()),
            ]
        );
    }

    #[test]
    fn committed_changes_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut s = open(&dir);
            s.commit(&Changes {
                next_cluster: Some(3),
                put_clusters: vec![(2, "[ Owner = \"ann\" ]".into())],
                put_jobs: vec![
                    (2, 0, "[ ProcId = 0 ]".into()),
                    (2, 1, "[ ProcId = 1 ]".into()),
                ],
                ..Changes::default()
            })
            .unwrap();
            s.commit(&Changes {
                delete_jobs: vec![(2, 0)],
                history: vec![HistoryRow {
                    cluster: 2,
                    proc: 0,
                    owner: "ann".into(),
                    completion: 10,
                    ad: "[ ProcId = 0; JobStatus = 3 ]".into(),
                }],
                ..Changes::default()
            })
            .unwrap();
        }
        let s = open(&dir);
        let snap = s.load().unwrap();
        assert_eq!(snap.next_cluster, 3);
        assert_eq!(snap.clusters, vec![(2, "[ Owner = \"ann\" ]".to_string())]);
        assert_eq!(snap.jobs, vec![(2, 1, "[ ProcId = 1 ]".to_string())]);
        let mut seen = Vec::new();
        s.history(|h| {
            seen.push((h.cluster, h.proc, h.owner.clone()));
            true
        })
        .unwrap();
        assert_eq!(seen, vec![(2, 0, "ann".to_string())]);
    }

    #[test]
    fn history_is_newest_first_and_can_be_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = open(&dir);
        for p in 0..5 {
            s.commit(&Changes {
                history: vec![HistoryRow {
                    cluster: 1,
                    proc: p,
                    owner: "bob".into(),
                    completion: i64::from(p),
                    ad: "[]".into(),
                }],
                ..Changes::default()
            })
            .unwrap();
        }
        let mut procs = Vec::new();
        s.history(|h| {
            procs.push(h.proc);
            procs.len() < 3
        })
        .unwrap();
        assert_eq!(procs, vec![4, 3, 2]);
        assert_eq!(s.trim_history(2).unwrap(), 3);
        let mut left = Vec::new();
        s.history(|h| {
            left.push(h.proc);
            true
        })
        .unwrap();
        assert_eq!(left, vec![4, 3]);
    }

    #[test]
    fn the_database_and_its_companions_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("queue.db");
        let companions =
            |p: &Path| ["-wal", "-shm"].map(|s| PathBuf::from(format!("{}{s}", p.display())));
        {
            let mut s = Store::open(&path).unwrap();
            s.commit(&Changes {
                put_jobs: vec![(1, 0, "[ Environment = \"SECRET=1\" ]".into())],
                ..Changes::default()
            })
            .unwrap();
            // while the store is open the WAL files exist
            assert_eq!(mode(&path), 0o600);
            for c in companions(&path) {
                assert_eq!(mode(&c), 0o600, "{}", c.display());
            }
        }
        // files left world-readable by an older build are tightened
        let old = dir.path().join("old.db");
        drop(Store::open(&old).unwrap());
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        for c in companions(&old) {
            std::fs::write(&c, b"").unwrap();
            std::fs::set_permissions(&c, std::fs::Permissions::from_mode(0o666)).unwrap();
        }
        let _s = Store::open(&old).unwrap();
        assert_eq!(mode(&old), 0o600);
        for c in companions(&old) {
            if c.exists() {
                assert_eq!(mode(&c), 0o600, "{}", c.display());
            }
        }
    }

    #[test]
    fn a_keyed_submission_is_remembered_for_a_week() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = open(&dir);
        let row = |key: &str, at| SubmissionRow {
            key: key.into(),
            owner: "ann".into(),
            cluster: 4,
            jobs: 2,
            at,
        };
        s.commit(&Changes {
            submission: Some(row("k1", 1000)),
            ..Changes::default()
        })
        .unwrap();
        assert_eq!(s.submission("k1").unwrap(), Some(row("k1", 1000)));
        assert_eq!(s.submission("k2").unwrap(), None);
        s.commit(&Changes {
            submission: Some(row("k2", 1000 + SUBMISSION_KEY_LIFETIME + 1)),
            ..Changes::default()
        })
        .unwrap();
        assert_eq!(s.submission("k1").unwrap(), None);
        assert!(s.submission("k2").unwrap().is_some());
    }

    #[test]
    fn a_file_that_is_not_a_database_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("queue.db");
        std::fs::write(
            &path,
            b"this is not sqlite, just some bytes that are long enough to matter",
        )
        .unwrap();
        let e = Store::open(&path).unwrap_err().to_string();
        assert!(e.contains("queue.db"), "{e}");
    }

    #[test]
    fn a_newer_layout_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("queue.db");
        drop(Store::open(&path).unwrap());
        let c = Connection::open(&path).unwrap();
        c.execute(
            "UPDATE meta SET value = 99 WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
        drop(c);
        let e = Store::open(&path).unwrap_err();
        assert!(matches!(e, StoreError::Version { found: 99, .. }), "{e}");
    }
}
