//! URL transfers through the real daemons: `transfer_input_files` entries
//! with `http://` (a tiny server the test runs on loopback), `file://` and
//! a site plugin's own scheme (a shell script in `FILETRANSFER_PLUGINS`);
//! `output_destination` to a directory (`file://`) and to the server
//! (HTTP PUT), one file remapped to a URL; a failing plugin holds the job with its exit code.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{job_pool, scratch, wait_for};

/// A tiny HTTP/1.1 server on loopback: GET serves `root/<path>`, PUT
/// stores the body at `root/<path>` (directories made). One request per
/// connection. Runs until the test process ends.
fn http_server(root: PathBuf) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let root = root.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let mut parts = line.split_whitespace();
                let method = parts.next().unwrap_or("").to_string();
                let path = parts
                    .next()
                    .unwrap_or("/")
                    .trim_start_matches('/')
                    .to_string();
                let mut len = 0usize;
                loop {
                    let mut h = String::new();
                    reader.read_line(&mut h).unwrap();
                    if h.trim().is_empty() {
                        break;
                    }
                    if let Some((k, v)) = h.split_once(':') {
                        if k.eq_ignore_ascii_case("content-length") {
                            len = v.trim().parse().unwrap();
                        }
                    }
                }
                let file = root.join(&path);
                let reply = |conn: &mut std::net::TcpStream, status: &str, body: &[u8]| {
                    let head = format!(
                        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = conn.write_all(head.as_bytes());
                    let _ = conn.write_all(body);
                };
                if path.contains("..") {
                    reply(&mut conn, "403 Forbidden", b"");
                } else if method == "GET" {
                    match std::fs::read(&file) {
                        Ok(data) => reply(&mut conn, "200 OK", &data),
                        Err(_) => reply(&mut conn, "404 Not Found", b"no such file"),
                    }
                } else if method == "PUT" {
                    let mut body = vec![0u8; len];
                    reader.read_exact(&mut body).unwrap();
                    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                    std::fs::write(&file, body).unwrap();
                    reply(&mut conn, "201 Created", b"");
                } else {
                    reply(&mut conn, "405 Method Not Allowed", b"");
                }
            });
        }
    });
    port
}

/// A site plugin for the schemes `myx` (writes a line naming the URL) and
/// `fail` (fails with exit code 3 and a result ad saying why).
const SITE_PLUGIN: &str = r#"#!/bin/sh
if [ "$1" = "-classad" ]; then
  echo 'MultipleFileSupport = true'
  echo 'PluginType = "FileTransfer"'
  echo 'SupportedMethods = "myx,fail"'
  echo 'ProtocolVersion = 2'
  echo 'PluginVersion = "0.1"'
  exit 0
fi
[ "$1" = "-infile" ] && [ "$3" = "-outfile" ] || exit 2
url=$(sed -n 's/.*URL = "\([^"]*\)".*/\1/p' "$2")
local=$(sed -n 's/.*LocalFileName = "\([^"]*\)".*/\1/p' "$2")
case "$url" in
  fail://*)
    echo "[ TransferFileName = \"$local\"; TransferURL = \"$url\"; TransferSuccess = false; TransferError = \"the fail scheme always fails\" ]" > "$4"
    exit 3 ;;
esac
echo "fetched $url as $(id -un)" > "$local"
echo "[ TransferFileName = \"$local\"; TransferURL = \"$url\"; TransferSuccess = true; TransferTotalBytes = 1 ]" > "$4"
"#;

fn open_dir(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
}

#[test]
fn url_inputs_output_destination_and_site_plugins() {
    let base = scratch("url_transfer_files");
    let served = base.join("served");
    open_dir(&served);
    // a megabyte and a bit of every byte value
    let data: Vec<u8> = (0..(1 << 20) + 17)
        .map(|i: u32| (i * 7 % 251) as u8)
        .collect();
    std::fs::write(served.join("data.bin"), &data).unwrap();
    let port = http_server(served.clone());

    let local = base.join("local");
    open_dir(&local);
    std::fs::write(local.join("local.txt"), "from a file URL\n").unwrap();
    std::fs::set_permissions(
        local.join("local.txt"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let plugin = base.join("site_plugin.sh");
    std::fs::write(&plugin, SITE_PLUGIN).unwrap();
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&*base, std::fs::Permissions::from_mode(0o755)).unwrap();
    let outdir = base.join("outdir");
    open_dir(&outdir);

    let plugin_s = plugin.display().to_string();
    let pool = job_pool(
        "url_transfer",
        "2",
        &[("_CONDOR_FILETRANSFER_PLUGINS", plugin_s.as_str())],
    );
    // the slots offer the built-in schemes and the site plugin's
    let methods = pool.ok(&["status", "-af", "HasFileTransferPluginMethods"]);
    for line in methods.lines() {
        assert_eq!(
            line.trim(),
            "fail,file,http,myx",
            "{methods}\n{}",
            pool.logs()
        );
    }

    let work = base.join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(
        work.join("copy.sh"),
        "#!/bin/sh\ncp data.bin out_http.bin && cp local.txt out_file.txt && cp thing.txt out_x.txt && echo done\n",
    )
    .unwrap();
    std::fs::set_permissions(work.join("copy.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let inputs = format!(
        "http://127.0.0.1:{port}/data.bin, file://{}/local.txt, myx://somewhere/thing.txt",
        local.display()
    );
    // outputs to a directory, through the built-in file plugin
    let to_dir = pool.submit_job(
        &work,
        &format!(
            "executable = copy.sh\nshould_transfer_files = YES\n\
             transfer_input_files = {inputs}\noutput_destination = file://{}\n\
             transfer_output_remaps = \"out_x.txt = http://127.0.0.1:{port}/remapped/x.txt\"\n\
             output = copy.out\nlog = job.log\nqueue\n",
            outdir.display()
        ),
    );
    // outputs to the HTTP server (PUT)
    let to_http = pool.submit_job(
        &work,
        &format!(
            "executable = copy.sh\nshould_transfer_files = YES\n\
             transfer_input_files = {inputs}\noutput_destination = http://127.0.0.1:{port}/up/\n\
             output = copy2.out\nlog = job.log\nqueue\n"
        ),
    );
    // a plugin that fails
    let failing = pool.submit_job(
        &work,
        "executable = copy.sh\nshould_transfer_files = YES\n\
         transfer_input_files = fail://nowhere/x.txt\nlog = job.log\nqueue\n",
    );

    wait_for("the failing job's hold", Duration::from_secs(90), || {
        pool.ok(&["q", &failing, "-af", "JobStatus"]).trim() == "5"
    });
    let held = pool.ok(&[
        "q",
        &failing,
        "-af",
        "HoldReasonCode",
        "HoldReasonSubCode",
        "HoldReason",
    ]);
    // TransferInputError, the plugin's exit code << 8
    assert!(held.starts_with("13 768 "), "{held}");
    assert!(held.contains("using protocol fail"), "{held}");
    assert!(held.contains("fail://nowhere/x.txt"), "{held}");
    assert!(held.contains("the fail scheme always fails"), "{held}");
    pool.ok(&["rm", &failing]);

    for id in [&to_dir, &to_http] {
        wait_for("the copying jobs", Duration::from_secs(90), || {
            !pool
                .ok(&["history", id, "-af", "ExitCode"])
                .trim()
                .is_empty()
        });
        assert_eq!(pool.ok(&["history", id, "-af", "ExitCode"]).trim(), "0");
    }
    // the URL inputs arrived byte-exact, and the outputs went to their
    // destinations, not back to the submit side
    for (dir, name) in [(&outdir, "to_dir"), (&served.join("up"), "to_http")] {
        assert_eq!(
            std::fs::read(dir.join("out_http.bin")).unwrap(),
            data,
            "{name}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("out_file.txt")).unwrap(),
            "from a file URL\n",
            "{name}"
        );
        // (the first job's is remapped to the server)
        let x_path = if name == "to_dir" {
            assert!(!dir.join("out_x.txt").exists());
            served.join("remapped/x.txt")
        } else {
            dir.join("out_x.txt")
        };
        let x = std::fs::read_to_string(x_path).unwrap();
        assert!(
            x.starts_with("fetched myx://somewhere/thing.txt as "),
            "{name}: {x}"
        );
        // the plugin ran as the job's account, not root (when there is one)
        if common::submitter().is_some() {
            assert!(!x.trim_end().ends_with(" root"), "{name}: {x}");
        }
    }
    assert!(!work.join("out_http.bin").exists());
    assert!(!work.join("out_x.txt").exists());
    // stdout still came back to the submit side
    assert_eq!(
        std::fs::read_to_string(work.join("copy.out")).unwrap(),
        "done\n"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("copy2.out")).unwrap(),
        "done\n"
    );
}
