//! Acting with a user's rights.
//!
//! A daemon that runs as root touches files that users name (a job's
//! input, output and log files, its initial directory, the standard
//! streams): every such operation must happen with that user's identity,
//! never root's, or a user could read or overwrite any file on the machine.
//!
//! On Linux credentials belong to threads (the C library makes `setuid`
//! process-wide by signalling every thread; the raw system calls do not).
//! So a user's file operations run on a thread of their own whose real,
//! effective, saved and file-system ids and supplementary groups are the
//! user's, with no capabilities left: the kernel checks every path, every
//! symbolic link and every permission bit exactly as for that user. The
//! files such a thread opens are ordinary descriptors, used afterwards by
//! any thread. The switch is one-way: the thread can never become root
//! again, and ends when its work is done or it has been idle a while.
//!
//! - [`Account`]: a local account (name, uid, gid, supplementary groups).
//! - [`AsUser`]: runs closures as an account, on one long-lived worker
//!   thread per account (a round trip costs a few microseconds).
//! - [`run_as_thread`]: runs a closure once on a fresh thread that becomes
//!   the account; a process spawned from it is born with the account's
//!   whole identity (how the starter starts a job).
//! - [`Rights`]: whose rights an operation uses: the daemon's own (a daemon
//!   that is not root, where no switch is possible or needed) or an
//!   account's.

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustix::process::{Gid, Uid};

/// Errors of looking up an account or acting as one.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    /// No account of this name on this host.
    #[error("no account `{0}` on this host")]
    NoSuchAccount(String),
    /// The account database could not be read.
    #[error("cannot look up the account `{name}`: {source}")]
    Lookup {
        /// The account.
        name: String,
        /// Why.
        source: nix::Error,
    },
    /// The thread could not take the account's identity.
    #[error("cannot act as `{name}` (uid {uid}): {source}")]
    Switch {
        /// The account.
        name: String,
        /// Its uid.
        uid: u32,
        /// Why.
        source: std::io::Error,
    },
    /// The worker thread ended without an answer (it panicked).
    #[error("the thread acting as `{0}` ended without an answer")]
    Lost(String),
}

/// A local account: what a thread or process needs to become it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    /// The login name.
    pub name: String,
    /// The user id.
    pub uid: u32,
    /// The primary group.
    pub gid: u32,
    /// Every group the account belongs to (the primary one included).
    pub groups: Vec<u32>,
}

impl Account {
    /// Looks up `name` in the account database, with its groups.
    pub fn lookup(name: &str) -> Result<Account, AccountError> {
        let lookup_err = |source| AccountError::Lookup {
            name: name.to_string(),
            source,
        };
        let user = nix::unistd::User::from_name(name)
            .map_err(lookup_err)?
            .ok_or_else(|| AccountError::NoSuchAccount(name.to_string()))?;
        let groups = match std::ffi::CString::new(name) {
            Ok(cname) => nix::unistd::getgrouplist(&cname, user.gid)
                .map(|g| g.into_iter().map(|g| g.as_raw()).collect())
                .unwrap_or_else(|_| vec![user.gid.as_raw()]),
            Err(_) => return Err(AccountError::NoSuchAccount(name.to_string())),
        };
        Ok(Account {
            name: user.name,
            uid: user.uid.as_raw(),
            gid: user.gid.as_raw(),
            groups,
        })
    }

    /// The account of `uid`, if there is one.
    pub fn by_uid(uid: u32) -> Result<Account, AccountError> {
        let user = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
            .map_err(|source| AccountError::Lookup {
                name: format!("uid {uid}"),
                source,
            })?
            .ok_or_else(|| AccountError::NoSuchAccount(format!("uid {uid}")))?;
        Account::lookup(&user.name)
    }

    /// Whether this is the superuser.
    pub fn is_root(&self) -> bool {
        self.uid == 0
    }

    /// Makes the calling thread this account, for good: supplementary
    /// groups, then real/effective/saved gid, then uid (which drops every
    /// capability of the thread). Only affects the calling thread.
    pub fn become_on_this_thread(&self) -> Result<(), AccountError> {
        let fail = |source| AccountError::Switch {
            name: self.name.clone(),
            uid: self.uid,
            source,
        };
        let groups: Vec<Gid> = self.groups.iter().map(|g| Gid::from_raw(*g)).collect();
        rustix::thread::set_thread_groups(&groups).map_err(|e| fail(e.into()))?;
        let gid = Gid::from_raw(self.gid);
        rustix::thread::set_thread_res_gid(gid, gid, gid).map_err(|e| fail(e.into()))?;
        let uid = Uid::from_raw(self.uid);
        rustix::thread::set_thread_res_uid(uid, uid, uid).map_err(|e| fail(e.into()))?;
        Ok(())
    }
}

/// Whose rights a file operation uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rights {
    /// The daemon's own: it is not root, so it can do nothing a user could
    /// not, and it acts for the one user who started it.
    Daemon,
    /// This account's.
    User(Arc<Account>),
}

impl Rights {
    /// The rights for the account `name`: [`Rights::Daemon`] when this
    /// process is not root (no switch is possible; the personal pool of
    /// one user), else the account, which must exist and must not be root.
    pub fn of_user(name: &str) -> Result<Rights, AccountError> {
        if !rustix::process::geteuid().is_root() {
            return Ok(Rights::Daemon);
        }
        let account = Account::lookup(name)?;
        if account.is_root() {
            return Err(AccountError::Switch {
                name: account.name,
                uid: 0,
                source: std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    "a daemon never acts for root on a user's behalf",
                ),
            });
        }
        Ok(Rights::User(Arc::new(account)))
    }
}

type Work = Box<dyn FnOnce() + Send + 'static>;

/// How long an account's worker thread waits for more work before it ends.
const WORKER_IDLE: Duration = Duration::from_secs(60);

/// Runs closures with an account's rights, one worker thread per account
/// (made on first use, ended after a minute without work). Cheap to clone.
#[derive(Clone, Default)]
pub struct AsUser {
    workers: Arc<Mutex<Workers>>,
    /// Accounts looked up lately, by name, with when.
    accounts: Arc<Mutex<HashMap<String, (std::time::Instant, Rights)>>>,
}

/// How long a looked-up account is trusted before it is looked up again.
const ACCOUNT_TTL: Duration = Duration::from_secs(60);

/// The live workers by uid, each with the generation that made it.
type Workers = HashMap<u32, (u64, mpsc::Sender<Work>)>;

impl std::fmt::Debug for AsUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsUser").finish_non_exhaustive()
    }
}

impl AsUser {
    /// A service with no worker yet.
    pub fn new() -> AsUser {
        AsUser::default()
    }

    /// [`Rights::of_user`], remembered for a minute (an account database
    /// read per file operation would cost more than the operation).
    pub fn rights_of(&self, name: &str) -> Result<Rights, AccountError> {
        let now = std::time::Instant::now();
        let mut cache = self.accounts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((when, rights)) = cache.get(name) {
            if now.duration_since(*when) < ACCOUNT_TTL {
                return Ok(rights.clone());
            }
        }
        let rights = Rights::of_user(name)?;
        if cache.len() > 10_000 {
            cache.clear();
        }
        cache.insert(name.to_string(), (now, rights.clone()));
        Ok(rights)
    }

    /// Runs `f` with `rights`, waiting for its result: on the calling
    /// thread for [`Rights::Daemon`], else on the account's worker.
    pub fn run<R, F>(&self, rights: &Rights, f: F) -> Result<R, AccountError>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        let account = match rights {
            Rights::Daemon => return Ok(f()),
            Rights::User(a) => a.clone(),
        };
        let (tx, rx) = mpsc::sync_channel(1);
        self.submit(
            &account,
            Box::new(move || {
                let _ = tx.send(f());
            }),
        )?;
        rx.recv()
            .map_err(|_| AccountError::Lost(account.name.clone()))
    }

    /// [`run`](Self::run) for async callers: the task waits without
    /// blocking its runtime thread.
    pub async fn run_async<R, F>(&self, rights: &Rights, f: F) -> Result<R, AccountError>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        let account = match rights {
            Rights::Daemon => {
                return tokio::task::spawn_blocking(f)
                    .await
                    .map_err(|_| AccountError::Lost("the daemon".into()))
            }
            Rights::User(a) => a.clone(),
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.submit(
            &account,
            Box::new(move || {
                let _ = tx.send(f());
            }),
        )?;
        rx.await
            .map_err(|_| AccountError::Lost(account.name.clone()))
    }

    /// Hands `work` to the account's worker, starting one when there is
    /// none. Every send happens under the map's lock, and a worker leaves
    /// the map under that lock before it ends, so no work is ever lost.
    fn submit(&self, account: &Arc<Account>, work: Work) -> Result<(), AccountError> {
        let mut workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        let work = match workers.get(&account.uid) {
            Some((_, tx)) => match tx.send(work) {
                Ok(()) => return Ok(()),
                Err(mpsc::SendError(w)) => w,
            },
            None => work,
        };
        let generation = NEXT_GENERATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tx = start_worker(account.clone(), Arc::downgrade(&self.workers), generation)?;
        let sent = tx
            .send(work)
            .map_err(|_| AccountError::Lost(account.name.clone()));
        workers.insert(account.uid, (generation, tx));
        sent
    }
}

static NEXT_GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Starts a worker thread that becomes `account` and runs work until it
/// has been idle for [`WORKER_IDLE`]; it then leaves `workers` (if it is
/// still the entry of `generation`) and runs what arrived meanwhile.
fn start_worker(
    account: Arc<Account>,
    workers: std::sync::Weak<Mutex<Workers>>,
    generation: u64,
) -> Result<mpsc::Sender<Work>, AccountError> {
    let (tx, rx) = mpsc::channel::<Work>();
    let (ready_tx, ready_rx) = mpsc::sync_channel(1);
    let name = account.name.clone();
    std::thread::Builder::new()
        .name(format!("as-{}", account.name))
        .spawn(move || {
            let switched = account.become_on_this_thread();
            let ok = switched.is_ok();
            let _ = ready_tx.send(switched);
            if !ok {
                return;
            }
            loop {
                match rx.recv_timeout(WORKER_IDLE) {
                    Ok(work) => work(),
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if let Some(map) = workers.upgrade() {
                            let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
                            if map.get(&account.uid).is_some_and(|(g, _)| *g == generation) {
                                map.remove(&account.uid);
                            }
                        }
                        while let Ok(work) = rx.try_recv() {
                            work();
                        }
                        return;
                    }
                }
            }
        })
        .map_err(|source| AccountError::Switch {
            name: name.clone(),
            uid: 0,
            source,
        })?;
    ready_rx
        .recv()
        .map_err(|_| AccountError::Lost(name.clone()))??;
    Ok(tx)
}

/// Runs `f` once on a fresh thread that first becomes `account` (its whole
/// identity: a process spawned from that thread is born as the account,
/// with its groups and no capabilities), and returns its result.
pub fn run_as_thread<R, F>(account: &Account, f: F) -> Result<R, AccountError>
where
    R: Send,
    F: FnOnce() -> R + Send,
{
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name(format!("as-{}", account.name))
            .spawn_scoped(scope, move || {
                account.become_on_this_thread()?;
                Ok(f())
            })
            .map_err(|source| AccountError::Switch {
                name: account.name.clone(),
                uid: account.uid,
                source,
            })?;
        handle
            .join()
            .map_err(|_| AccountError::Lost(account.name.clone()))?
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn nobody() -> Option<Account> {
        if !rustix::process::geteuid().is_root() {
            return None;
        }
        Account::lookup("nobody").ok()
    }

    #[test]
    fn lookup_finds_root_and_refuses_unknown_names() {
        let root = Account::lookup("root").unwrap();
        assert_eq!((root.uid, root.gid), (0, 0));
        assert!(root.groups.contains(&0));
        assert!(matches!(
            Account::lookup("no-such-user-skua-test"),
            Err(AccountError::NoSuchAccount(_))
        ));
    }

    #[test]
    fn a_worker_has_the_users_rights_and_the_daemon_keeps_its_own() {
        let Some(nobody) = nobody() else { return };
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "root only").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let svc = AsUser::new();
        let rights = Rights::User(Arc::new(nobody.clone()));
        let s = secret.clone();
        let read = svc
            .run(&rights, move || std::fs::read_to_string(&s))
            .unwrap();
        assert_eq!(
            read.unwrap_err().kind(),
            std::io::ErrorKind::PermissionDenied
        );
        // the same worker again, and the caller still is root
        let uid = svc
            .run(&rights, || rustix::process::geteuid().as_raw())
            .unwrap();
        assert_eq!(uid, nobody.uid);
        assert!(rustix::process::geteuid().is_root());
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "root only");
    }

    #[test]
    fn a_file_made_as_the_user_is_the_users() {
        let Some(nobody) = nobody() else { return };
        let dir = tempfile::tempdir().unwrap();
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let path = dir.path().join("made");
        let p = path.clone();
        run_as_thread(&nobody, move || std::fs::write(&p, "x"))
            .unwrap()
            .unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().uid(), nobody.uid);
    }

    #[test]
    fn looked_up_rights_are_remembered() {
        let svc = AsUser::new();
        let a = svc.rights_of("root");
        // root is never acted for (when this process is root), else the
        // daemon's own rights: the same answer twice either way
        assert_eq!(format!("{a:?}"), format!("{:?}", svc.rights_of("root")));
        assert!(
            svc.rights_of("no-such-user-skua-test").is_err()
                || !rustix::process::geteuid().is_root()
        );
    }

    #[tokio::test]
    async fn async_callers_wait_without_blocking() {
        let svc = AsUser::new();
        let v = svc.run_async(&Rights::Daemon, || 41 + 1).await.unwrap();
        assert_eq!(v, 42);
        let Some(nobody) = nobody() else { return };
        let rights = Rights::User(Arc::new(nobody.clone()));
        let uid = svc
            .run_async(&rights, || rustix::process::geteuid().as_raw())
            .await
            .unwrap();
        assert_eq!(uid, nobody.uid);
    }
}
