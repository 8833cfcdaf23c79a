//! The negotiator's shell in-process, on a test's clock: an administrator's
//! change is on disk when it is acknowledged, and `skua userprio` is
//! answered while a cycle waits on a collector that does not answer.

use std::path::Path;
use std::time::Duration;

use skua_daemon::{DaemonContext, ManualClock};
use skua_proto::{routes, Ack, UserPrioChange, UserPrioEdit, UserPrioQuery, UserPrioReply};
use tokio::sync::watch;

fn context(dir: &Path, clock: &ManualClock, collector: &str) -> DaemonContext {
    let text = format!(
        "LOG = {0}/log\nLOCK = {0}/lock\nSPOOL = {0}/spool\n\
         SEC_TOKEN_POOL_SIGNING_KEY_FILE = {0}/key\n\
         COLLECTOR_HOST = {collector}\nNEGOTIATOR_INTERVAL = 60\n",
        dir.display()
    );
    let files = skua_config::MemoryFiles::new().with("/skua_config", &text);
    let opts = skua_config::LoadOptions::new()
        .main_file("/skua_config")
        .subsystem("NEGOTIATOR");
    let config = skua_config::Config::load(&files, &opts).expect("configuration");
    let mut ctx = DaemonContext::from_config("NEGOTIATOR", config).expect("context");
    ctx.clock = clock.clock();
    ctx
}

async fn wait_for_socket(socket: &Path) -> skua_net::Client {
    let give_up = std::time::Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        assert!(
            std::time::Instant::now() < give_up,
            "the negotiator never came up"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    skua_net::Client::new(
        skua_net::Endpoint::Unix(socket.to_path_buf()),
        None,
        Duration::from_secs(10),
    )
    .expect("client")
}

async fn userprio(client: &skua_net::Client) -> UserPrioReply {
    client
        .command(
            &routes::NEGOTIATOR_USERPRIO,
            Some(&UserPrioQuery { all: true }),
        )
        .await
        .expect("userprio")
}

#[tokio::test]
async fn userprio_is_answered_during_a_cycle_and_edits_are_saved_before_the_ack() {
    let dir = tempfile::tempdir().expect("tempdir");
    // a "collector" that accepts the cycle's query and never answers it
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("listener");
    let collector = silent.local_addr().expect("address").to_string();
    let clock = ManualClock::frozen(2_000_000);
    let ctx = context(dir.path(), &clock, &collector);
    let socket = ctx.lock_dir.join("negotiator.sock");
    let accountant_file = dir.path().join("spool/Accountant.json");
    let (stop, shutdown) = watch::channel(false);
    let test = async {
        let client = wait_for_socket(&socket).await;
        // the first cycle is due half a second after the start (read
        // before the socket appears), by the daemon's clock, which stands
        // still until the test moves it
        clock.advance(Duration::from_secs(1));
        // two callers wait on it: the advertiser (from the start) and the
        // cycle's query
        let mut held = Vec::new();
        for _ in 0..2 {
            let (stream, _) = tokio::time::timeout(Duration::from_secs(10), silent.accept())
                .await
                .expect("the advertiser and the cycle call the collector")
                .expect("accept");
            held.push(stream);
        }

        // the cycle waits for its collector; the loop answers meanwhile
        let before = tokio::time::timeout(Duration::from_secs(5), userprio(&client))
            .await
            .expect("userprio answered while a cycle runs");
        assert!(before.users.is_empty(), "{:?}", before.users);

        let _: Ack = client
            .command(
                &routes::NEGOTIATOR_USERPRIO_EDIT,
                Some(&UserPrioEdit {
                    user: "alice@example".to_string(),
                    change: UserPrioChange::SetFactor { factor: 5000.0 },
                }),
            )
            .await
            .expect("edit");
        // acknowledged means saved
        let saved: skua_negotiation::Accountant =
            serde_json::from_slice(&std::fs::read(&accountant_file).expect("the accountant file"))
                .expect("an accountant");
        assert_eq!(
            saved.customers.get("alice@example").and_then(|c| c.factor),
            Some(5000.0)
        );
        let after = userprio(&client).await;
        let alice = after
            .users
            .iter()
            .find(|u| u.name == "alice@example")
            .expect("alice's record");
        assert_eq!(alice.factor, 5000.0);

        // a bad change is refused and saves nothing
        let refused = client
            .command::<_, Ack>(
                &routes::NEGOTIATOR_USERPRIO_EDIT,
                Some(&UserPrioEdit {
                    user: "alice@example".to_string(),
                    change: UserPrioChange::SetFactor { factor: 0.5 },
                }),
            )
            .await;
        assert!(refused.is_err());
        // the collector goes away (the waiting calls fail at once) and the
        // negotiator stops
        drop(held);
        drop(silent);
        stop.send(true).expect("stop");
    };
    let (served, ()) = tokio::join!(skua_negotiator::daemon::serve(ctx, shutdown), test);
    served.expect("serve");
    let saved: skua_negotiation::Accountant =
        serde_json::from_slice(&std::fs::read(&accountant_file).expect("the accountant file"))
            .expect("an accountant");
    assert_eq!(
        saved.customers.get("alice@example").and_then(|c| c.factor),
        Some(5000.0),
        "the refused change did not reach the file"
    );
    assert!(!dir.path().join("log/.negotiator_address").exists());
}
