//! Bringing a daemon up, the one way every daemon does it: bind its TCP
//! listener ([`DaemonContext::tcp_listener`]: `NETWORK_INTERFACE`,
//! `BIND_ALL_INTERFACES`, TLS unless loopback) or, when its master runs the
//! host's shared port, its handoff socket behind it
//! ([`DaemonContext::handoff_listener`]), and its Unix socket
//! (`$(LOCK)/<daemon>.sock`), serve its routes with the context's server
//! configuration, publish its address in its address file
//! (`<SUBSYS>_ADDRESS_FILE`), and log where it listens and the sinful string
//! it advertises (`MyAddress`: the advertised IP, its own port or the shared
//! port's with `sock=<id>`, and `alias=` the host name):
//! [`bring_up`], or [`bind`] and later [`Bound::serve`] for a daemon with
//! long work in between (callers connecting meanwhile wait, as they would
//! for a busy daemon).
//! The [`Listening`] daemon then fills the common header of its ads
//! ([`Listening::ad_header`]) and, at the end, withdraws its address file and
//! stops serving ([`Listening::shut_down`]).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use classad::ClassAd;
use skua_net::{Listener, Routes, Server, ServerHandle};

use crate::address::Sinful;
use crate::context::{DaemonContext, DaemonError};

/// A daemon serving its routes, found through its address file.
pub struct Listening {
    /// The TCP address other hosts reach it at: the advertised address
    /// with its own port (chosen by the system when asked for 0), or the
    /// host's shared port.
    pub addr: SocketAddr,
    /// HTCondor's sinful string, the `MyAddress` of its ads:
    /// `<addr?alias=HOST>`, or `<addr?sock=ID&alias=HOST>` behind the
    /// shared port.
    pub sinful: String,
    /// Its Unix socket.
    pub socket: PathBuf,
    /// Where its TCP address is published.
    pub address_file: PathBuf,
    /// The host's full name (`FULL_HOSTNAME`).
    pub host: String,
    /// When it came up, by the context's clock (`DaemonStartTime`).
    pub start_time: i64,
    handle: ServerHandle,
    /// Keeps the server's revocation set in step with the collector's.
    refresher: Option<tokio::task::JoinHandle<()>>,
}

/// Brings the daemon of `ctx` up on TCP port `port` (0: any) and its Unix
/// socket, serving `routes`; see the module documentation. The same as
/// [`bind`] then [`Bound::serve`].
pub async fn bring_up(
    ctx: &DaemonContext,
    port: u16,
    routes: Routes,
) -> Result<Listening, DaemonError> {
    bind(ctx, port).await?.serve(ctx, routes).await
}

/// A daemon's listeners, bound but not served yet: callers connecting wait
/// (in the listen backlog) until [`Bound::serve`]. For a daemon with long
/// work between binding and serving (the schedd recovering its queue).
pub struct Bound {
    tcp: Listener,
    unix: Listener,
    socket: PathBuf,
    /// The shared port's, when the daemon is behind it.
    shared: Option<Sinful>,
    advertise: IpAddr,
}

/// Binds the network listener of the daemon of `ctx` and its Unix socket:
/// behind the master's shared port, its handoff socket
/// ([`DaemonContext::handoff_listener`]); otherwise TCP on `port` (0: any).
pub async fn bind(ctx: &DaemonContext, port: u16) -> Result<Bound, DaemonError> {
    let daemon = ctx.subsystem.to_ascii_lowercase();
    let plan = ctx
        .listen_plan()
        .map_err(|e| DaemonError::Net(format!("{daemon}: {e}")))?;
    let (tcp, shared) = match ctx.behind_shared_port()? {
        Some(shared_port) => {
            let l = ctx
                .handoff_listener()
                .await
                .map_err(|e| DaemonError::Net(format!("{daemon}: {e}")))?;
            let sinful = Sinful::new(SocketAddr::new(plan.advertise, shared_port))
                .with_sock(ctx.shared_port_id());
            (l, Some(sinful))
        }
        None => {
            let l = ctx
                .tcp_listener(port)
                .await
                .map_err(|e| DaemonError::Net(format!("{daemon}: {e}")))?;
            (l, None)
        }
    };
    let socket = ctx.socket_path()?;
    let unix = Listener::unix(&socket).await.map_err(|e| {
        DaemonError::Net(format!(
            "{daemon}: binding its Unix socket {}: {e}",
            socket.display()
        ))
    })?;
    Ok(Bound {
        tcp,
        unix,
        socket,
        shared,
        advertise: plan.advertise,
    })
}

impl Bound {
    /// Serves `routes` on the bound listeners, publishes the TCP address in
    /// the address file and logs where the daemon listens.
    pub async fn serve(
        self,
        ctx: &DaemonContext,
        routes: Routes,
    ) -> Result<Listening, DaemonError> {
        let daemon = ctx.subsystem.to_ascii_lowercase();
        let Bound {
            tcp,
            unix,
            socket,
            shared,
            advertise,
        } = self;
        let server = Server::new(ctx.server_config(), routes)
            .map_err(|e| DaemonError::Net(format!("{daemon}: server setup: {e}")))?;
        let handle = server.spawn(vec![tcp, unix]);
        let host = host_name();
        let (sinful, listening) = match shared {
            Some(sinful) => {
                let at = handle
                    .unix_paths()
                    .first()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                (sinful.clone(), format!("{sinful} (handoff socket {at})"))
            }
            None => {
                let Some(bound) = handle.local_addr() else {
                    handle.shutdown().await;
                    return Err(DaemonError::Net(format!("{daemon}: no TCP address")));
                };
                let sinful = Sinful::new(SocketAddr::new(advertise, bound.port()));
                (sinful, bound.to_string())
            }
        };
        let sinful = sinful.with_alias(host.clone());
        let address_file = ctx.address_file()?;
        if let Err(e) = crate::address::write_address_file_sinful(&address_file, &sinful) {
            handle.shutdown().await;
            return Err(DaemonError::Io(format!("{daemon}: {e}")));
        }
        tracing::info!(
            "{daemon} listening on {listening} and {}, advertised as {sinful}",
            socket.display()
        );
        Ok(Listening {
            addr: sinful.addr,
            sinful: sinful.to_string(),
            socket,
            address_file,
            host,
            start_time: ctx.clock.now_secs(),
            handle,
            refresher: crate::revocation::spawn_refresher(ctx),
        })
    }
}

impl Listening {
    /// The attributes every daemon's own ad begins with: `MyType`, `Name`,
    /// `Machine` (the host part of `name`, after any `@`), `MyAddress`,
    /// `DaemonStartTime` and `CondorVersion` (Skua's one version string).
    pub fn ad_header(&self, my_type: &str, name: &str) -> ClassAd {
        let mut ad = ClassAd::new();
        ad.insert_value("MyType", my_type);
        ad.insert_value("Name", name);
        ad.insert_value("Machine", name.rsplit('@').next().unwrap_or(name));
        ad.insert_value("MyAddress", self.sinful.as_str());
        ad.insert_value("DaemonStartTime", self.start_time);
        ad.insert_value("CondorVersion", skua_proto::CONDOR_VERSION);
        ad.insert_value("CondorPlatform", skua_proto::condor_platform());
        ad
    }

    /// Withdraws the address file (clients stop finding the daemon) and
    /// stops serving.
    pub async fn shut_down(self) {
        if let Some(refresher) = &self.refresher {
            refresher.abort();
        }
        if let Err(e) = std::fs::remove_file(&self.address_file) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::debug!("removing {}: {e}", self.address_file.display());
            }
        }
        self.handle.shutdown().await;
    }
}

/// This host's full name (`FULL_HOSTNAME` of the host's facts), or
/// `localhost`: the name daemons give themselves by default.
pub fn host_name() -> String {
    crate::system_config::host_facts(&crate::system_config::environment())
        .get("FULL_HOSTNAME")
        .cloned()
        .unwrap_or_else(|| "localhost".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(dir: &std::path::Path) -> DaemonContext {
        let text = format!(
            "LOG = {0}/log\nLOCK = {0}/lock\nSEC_TOKEN_POOL_SIGNING_KEY_FILE = {0}/key\n",
            dir.display()
        );
        let files = skua_config::MemoryFiles::new().with("/skua_config", &text);
        let opts = skua_config::LoadOptions::new().main_file("/skua_config");
        let config = skua_config::Config::load(&files, &opts).expect("configuration");
        DaemonContext::from_config("NEGOTIATOR", config).expect("context")
    }

    #[tokio::test]
    async fn a_daemon_comes_up_published_and_goes_away() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ctx = context(dir.path());
        let up = bring_up(&ctx, 0, Routes::new()).await.expect("bring up");
        assert!(up.addr.ip().is_loopback());
        assert_ne!(up.addr.port(), 0);
        let sinful = crate::address::Sinful::parse(&up.sinful).expect("a sinful string");
        assert_eq!(sinful.addr, up.addr);
        assert_eq!(sinful.sock, None);
        assert_eq!(sinful.alias.as_deref(), Some(up.host.as_str()));
        assert_eq!(
            crate::read_address_file(&up.address_file).expect("address file"),
            up.addr
        );
        assert_eq!(up.address_file, dir.path().join("log/.negotiator_address"));
        assert_eq!(up.socket, dir.path().join("lock/negotiator.sock"));
        assert!(up.socket.exists());
        tokio::net::TcpStream::connect(up.addr)
            .await
            .expect("the daemon accepts connections");

        let ad = up.ad_header("Negotiator", "negotiator@node.example");
        let text = |name: &str| match ad.lookup(name) {
            Some(classad::Expr::Lit(v)) => v.as_string(),
            _ => None,
        };
        assert_eq!(text("MyType").as_deref(), Some("Negotiator"));
        assert_eq!(text("Name").as_deref(), Some("negotiator@node.example"));
        assert_eq!(text("Machine").as_deref(), Some("node.example"));
        assert_eq!(text("MyAddress"), Some(up.sinful.clone()));
        assert_eq!(
            text("CondorVersion").as_deref(),
            Some(skua_proto::CONDOR_VERSION)
        );
        assert_eq!(text("CondorPlatform"), Some(skua_proto::condor_platform()));
        assert!(ad.lookup("DaemonStartTime").is_some());

        let file = up.address_file.clone();
        up.shut_down().await;
        assert!(!file.exists(), "the address file is withdrawn");
    }

    fn context_with(dir: &std::path::Path, extra: &str) -> DaemonContext {
        let text = format!(
            "LOG = {0}/log\nLOCK = {0}/lock\nSEC_TOKEN_POOL_SIGNING_KEY_FILE = {0}/key\n{extra}",
            dir.display()
        );
        let files = skua_config::MemoryFiles::new().with("/skua_config", &text);
        let opts = skua_config::LoadOptions::new().main_file("/skua_config");
        let config = skua_config::Config::load(&files, &opts).expect("configuration");
        // a test context creates the signing key: the daemon's calls carry a token
        DaemonContext::for_test("NEGOTIATOR", config, "condor", crate::Clock::system())
            .expect("context")
    }

    async fn shared_port_for(ctx: &DaemonContext) -> skua_net::SharedPortHandle {
        let dir = ctx.daemon_socket_dir().expect("socket dir");
        crate::context::create_private_dir(&dir).expect("socket dir");
        let port = skua_net::SharedPort::bind(
            "127.0.0.1:0".parse().expect("addr"),
            skua_net::SharedPortConfig::new(&dir),
        )
        .await
        .expect("shared port");
        port.spawn()
    }

    #[tokio::test]
    async fn a_daemon_behind_the_shared_port_advertises_it_with_its_id() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut ctx = context_with(dir.path(), "");
        let port = shared_port_for(&ctx).await;
        let shared = port.local_addr().expect("bound");
        ctx.shared_port = Some(shared.port());
        let up = bring_up(&ctx, 0, Routes::new()).await.expect("bring up");

        assert_eq!(up.addr, shared);
        let sinful = crate::address::Sinful::parse(&up.sinful).expect("sinful");
        assert_eq!(sinful.addr, shared);
        assert_eq!(sinful.sock.as_deref(), Some("negotiator"));
        assert_eq!(sinful.alias.as_deref(), Some(up.host.as_str()));
        // the address file carries the id, so local clients find it too
        let in_file =
            crate::address::read_address_file_sinful(&up.address_file).expect("address file");
        assert_eq!(
            (in_file.addr, in_file.sock),
            (sinful.addr, sinful.sock.clone())
        );
        let handoff = dir.path().join("lock/daemon_sock/negotiator");
        assert!(handoff.exists());
        // reached through the shared port by its MyAddress...
        let client = ctx
            .client_at(&up.sinful, std::time::Duration::from_secs(5))
            .expect("client");
        assert_eq!(client.shared_port_id(), Some("negotiator"));
        client
            .hello()
            .await
            .expect("the daemon answers through the shared port");
        // ...and by the locator, over the network
        let located = ctx
            .locator("NEGOTIATOR")
            .expect("locator")
            .network_client(ctx.daemon_token.clone(), std::time::Duration::from_secs(5))
            .expect("client");
        located
            .hello()
            .await
            .expect("found through its address file");

        up.shut_down().await;
        assert!(!handoff.exists(), "the handoff socket is withdrawn");
        port.shutdown().await;
    }

    #[tokio::test]
    async fn a_daemon_can_keep_its_own_port_beside_the_shared_port() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut ctx = context_with(dir.path(), "NEGOTIATOR_USES_SHARED_PORT = false\n");
        let port = shared_port_for(&ctx).await;
        let shared = port.local_addr().expect("bound");
        ctx.shared_port = Some(shared.port());
        let up = bring_up(&ctx, 0, Routes::new()).await.expect("bring up");
        assert_ne!(up.addr, shared);
        let sinful = crate::address::Sinful::parse(&up.sinful).expect("sinful");
        assert_eq!(sinful.sock, None);
        tokio::net::TcpStream::connect(up.addr)
            .await
            .expect("its own port");
        up.shut_down().await;
        port.shutdown().await;
    }

    #[test]
    fn shared_port_knobs_follow_htcondor() {
        let dir = tempfile::tempdir().expect("tempdir");
        // the personal pool: loopback, no shared port
        let ctx = context_with(dir.path(), "");
        assert!(!ctx.use_shared_port().expect("knob"));
        assert_eq!(ctx.shared_port_port().expect("port"), 9618);
        assert_eq!(
            ctx.daemon_socket_dir().expect("dir"),
            dir.path().join("lock/daemon_sock")
        );
        assert_eq!(ctx.shared_port_default_id().expect("id"), "collector");
        assert_eq!(ctx.behind_shared_port().expect("knob"), None);
        // configured
        let ctx = context_with(
            dir.path(),
            "USE_SHARED_PORT = true\nSHARED_PORT_PORT = 4000\nDAEMON_SOCKET_DIR = /run/x\n",
        );
        assert!(ctx.use_shared_port().expect("knob"));
        assert_eq!(ctx.shared_port_port().expect("port"), 4000);
        assert_eq!(
            ctx.daemon_socket_dir().expect("dir"),
            std::path::PathBuf::from("/run/x")
        );
        // a central manager's collector port takes over
        let ctx = context_with(
            dir.path(),
            "DAEMON_LIST = MASTER COLLECTOR\nCOLLECTOR_HOST = cm.example:9700\n",
        );
        assert_eq!(ctx.shared_port_port().expect("port"), 9700);
        let ctx = context_with(
            dir.path(),
            "DAEMON_LIST = MASTER COLLECTOR\nCOLLECTOR_HOST = cm.example:9700\nCOLLECTOR_USES_SHARED_PORT = false\n",
        );
        assert_eq!(ctx.shared_port_port().expect("port"), 9618);
        let bad = context_with(dir.path(), "SHARED_PORT_PORT = 70000\n");
        assert!(bad.shared_port_port().is_err());
    }

    #[tokio::test]
    async fn a_daemon_takes_the_collectors_revoked_credentials() {
        use skua_net::routing::post;
        use skua_proto::{routes, RevocationList, RevocationQuery};
        async fn revoked(
            skua_net::Json(_): skua_net::Json<RevocationQuery>,
        ) -> skua_net::Json<RevocationList> {
            skua_net::Json(RevocationList {
                revoked: vec!["0a1b".into(), "ff".into()],
            })
        }
        let dir = tempfile::tempdir().expect("tempdir");
        // a stand-in collector serving the revocation list
        let mut collector_ctx = context(dir.path());
        collector_ctx.subsystem = "COLLECTOR".into();
        let routes = Routes::new().command(&routes::COLLECTOR_REVOCATIONS, post(revoked));
        let collector = bring_up(&collector_ctx, 0, routes)
            .await
            .expect("collector");
        assert!(
            collector.refresher.is_none(),
            "the collector fills its own set"
        );
        // a daemon that trusts no CA verifies no certificate: nothing to
        // revoke, no refresher
        let plain = bring_up(&context(dir.path()), 0, Routes::new())
            .await
            .expect("bring up");
        assert!(plain.refresher.is_none());
        plain.shut_down().await;
        // one that trusts the pool CA finds the collector through its
        // address file
        let ca = skua_net::pki::PoolCa::generate("test pool").expect("CA");
        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, ca.cert_pem()).expect("write the CA");
        let mut ctx = context(dir.path());
        ctx.config = skua_config::Config::load(
            &skua_config::MemoryFiles::new().with(
                "/skua_config",
                &format!(
                    "LOG = {0}/log\nLOCK = {0}/lock\nAUTH_SSL_CLIENT_CAFILE = {1}\n",
                    dir.path().display(),
                    ca_file.display()
                ),
            ),
            &skua_config::LoadOptions::new().main_file("/skua_config"),
        )
        .expect("configuration");
        assert!(ctx.revocations.ids().is_empty());
        let up = bring_up(&ctx, 0, Routes::new()).await.expect("bring up");
        let mut waited = 0;
        while ctx.revocations.ids().is_empty() && waited < 500 {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            waited += 1;
        }
        assert_eq!(ctx.revocations.ids(), vec!["0a1b".to_string(), "ff".into()]);
        up.shut_down().await;
        collector.shut_down().await;
    }

    #[tokio::test]
    async fn the_start_time_is_the_contexts_clock() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut ctx = context(dir.path());
        ctx.clock = crate::ManualClock::frozen(1_234_567).clock();
        let up = bring_up(&ctx, 0, Routes::new()).await.expect("bring up");
        assert_eq!(up.start_time, 1_234_567);
        let ad = up.ad_header("Collector", "collector@h");
        assert!(matches!(
            ad.lookup("DaemonStartTime"),
            Some(classad::Expr::Lit(classad::Value::Int(1_234_567)))
        ));
        up.shut_down().await;
    }
}
