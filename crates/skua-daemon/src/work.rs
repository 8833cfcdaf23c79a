//! Work that must not hold up a daemon's other requests: user expressions
//! evaluated over many ads run on a blocking thread, outside any lock, and
//! stop when the request they serve is abandoned.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A flag that long work checks between units (between ads); it is set
/// when the request the work serves is given up (its handler timed out or
/// was otherwise dropped).
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// Whether the work should stop.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Asks the work to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Cancels on drop: held by the waiting future, so that dropping the
/// future (a handler timeout) stops the work it waits for.
struct CancelOnDrop(Cancel);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// Runs `work` on a blocking thread and waits for it. If the waiting
/// future is dropped first, the [`Cancel`] given to `work` is set, and
/// `work` is expected to stop at its next check.
pub async fn off_thread<T: Send + 'static>(
    work: impl FnOnce(&Cancel) -> T + Send + 'static,
) -> anyhow::Result<T> {
    let cancel = Cancel::default();
    let _guard = CancelOnDrop(cancel.clone());
    tokio::task::spawn_blocking(move || work(&cancel))
        .await
        .map_err(|e| anyhow::anyhow!("evaluation task failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn dropping_the_waiting_future_cancels_the_work() {
        let (tx, rx) = std::sync::mpsc::channel();
        let fut = off_thread(move |cancel| {
            let mut spins = 0u64;
            while !cancel.is_cancelled() {
                std::thread::sleep(Duration::from_millis(1));
                spins += 1;
            }
            let _ = tx.send(spins);
        });
        // the handler gives up after a while
        assert!(tokio::time::timeout(Duration::from_millis(50), fut)
            .await
            .is_err());
        let stopped = tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(10)))
            .await
            .unwrap();
        assert!(
            stopped.is_ok(),
            "the work kept running after its request was given up"
        );
    }

    #[tokio::test]
    async fn finished_work_returns_its_value() {
        assert_eq!(
            off_thread(|c| (c.is_cancelled(), 7)).await.unwrap(),
            (false, 7)
        );
    }
}
