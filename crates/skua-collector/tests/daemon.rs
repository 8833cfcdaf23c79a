//! The collector's shell in-process, on a test's clock: updates are stored
//! before they are acknowledged, queries see them, and ads expire when the
//! daemon's clock (not the wall clock) passes their lifetime.

use std::path::Path;
use std::time::Duration;

use skua_daemon::{DaemonContext, ManualClock};
use skua_proto::{routes, Ack, AdUpdate, Query, QueryReply};
use tokio::sync::watch;

fn context(dir: &Path, clock: &ManualClock) -> DaemonContext {
    let text = format!(
        "LOG = {0}/log\nLOCK = {0}/lock\nSEC_TOKEN_POOL_SIGNING_KEY_FILE = {0}/key\n\
         COLLECTOR_HOST = 127.0.0.1:0\n",
        dir.display()
    );
    let files = skua_config::MemoryFiles::new().with("/skua_config", &text);
    let opts = skua_config::LoadOptions::new()
        .main_file("/skua_config")
        .subsystem("COLLECTOR");
    let config = skua_config::Config::load(&files, &opts).expect("configuration");
    let mut ctx = DaemonContext::from_config("COLLECTOR", config).expect("context");
    ctx.clock = clock.clock();
    ctx
}

async fn names(client: &skua_net::Client, ad_type: &str) -> Vec<String> {
    let reply: QueryReply = client
        .command(
            &routes::COLLECTOR_QUERY,
            Some(&Query {
                ad_type: ad_type.to_string(),
                constraint: Some("Name =!= undefined".to_string()),
                projection: vec!["Name".to_string()],
            }),
        )
        .await
        .expect("query");
    let mut names: Vec<String> = reply
        .ads
        .iter()
        .map(|t| {
            let ad = classad::parse_ad(t).expect("ad");
            match ad.lookup("Name") {
                Some(classad::Expr::Lit(v)) => v.as_string().expect("a name"),
                _ => panic!("no Name in {t}"),
            }
        })
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn ads_are_stored_queried_and_expired_by_the_daemons_clock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::frozen(1_000_000);
    let ctx = context(dir.path(), &clock);
    let socket = ctx.lock_dir.join("collector.sock");
    let (stop, shutdown) = watch::channel(false);
    let test = async {
        let client = wait_for_socket(&socket).await;
        let update = |name: &str, lifetime: u64| AdUpdate {
            ad_type: "Machine".to_string(),
            name: name.to_string(),
            ad: format!("[ MyType = \"Machine\"; Name = \"{name}\" ]"),
            lifetime_secs: lifetime,
        };
        let _: Ack = client
            .command(&routes::COLLECTOR_UPDATE, Some(&update("short", 60)))
            .await
            .expect("update");
        let _: Ack = client
            .command(&routes::COLLECTOR_UPDATE, Some(&update("long", 600)))
            .await
            .expect("update");
        // acknowledged means stored: the next query sees both
        assert_eq!(names(&client, "Machine").await, ["long", "short"]);
        // the collector's own ad, made at start
        assert_eq!(names(&client, "Collector").await.len(), 1);

        // no amount of wall time expires them while the daemon's clock
        // stands still; moving it past the short lifetime does
        clock.advance(Duration::from_secs(61));
        let give_up = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let now = names(&client, "Machine").await;
            if now == ["long"] {
                break;
            }
            assert!(
                std::time::Instant::now() < give_up,
                "the short-lived ad is still there: {now:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        stop.send(true).expect("stop");
    };
    let (served, ()) = tokio::join!(skua_collector::daemon::serve(ctx, shutdown), test);
    served.expect("serve");
    assert!(
        !dir.path().join("log/.collector_address").exists(),
        "the address file is withdrawn at the end"
    );
}

async fn wait_for_socket(socket: &Path) -> skua_net::Client {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the collector never came up"
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
