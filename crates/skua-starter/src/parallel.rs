//! The environment of one node of a parallel-universe job, pure.
//!
//! The schedd starts node k of a parallel job with a copy of its proc's ad carrying
//! `ParallelNode = k`, `CurrentHosts = N` (the job's node count), `RemoteSpoolDir` (a directory
//! on the submit host the nodes share through chirp) and `ParallelHosts` (the execute hosts, in
//! node order). The node's program sees them as HTCondor's variables, and finds Skua's tools
//! (`skua chirp`) first in its `PATH`, as HTCondor puts its `bin` directory there.

use std::collections::BTreeMap;

use classad::ClassAd;

use crate::plan::{int_attr, string_attr};

/// What the node's environment needs besides the job ad.
#[derive(Clone, Debug, Default)]
pub struct NodeFacts {
    /// The directory of the running Skua binaries (the starter's own executable's).
    pub bin_dir: String,
    /// The starter's own `PATH`, used after `bin_dir` when the job sets none.
    pub starter_path: Option<String>,
}

/// The node number of a parallel job's node ad (`ParallelNode`), `None` for any other job.
pub fn node_number(job: &ClassAd) -> Option<i64> {
    int_attr(job, "ParallelNode")
}

/// Adds the parallel node's variables to `env` (the job's whole environment, its own
/// variables included), which they override as HTCondor's do: `_CONDOR_PROCNO` (the node),
/// `_CONDOR_NPROCS` (`CurrentHosts`), `_CONDOR_REMOTE_SPOOL_DIR` (`RemoteSpoolDir`, when the
/// ad has it), `SKUA_PARALLEL_HOSTS` (`ParallelHosts`, when the ad has it), and `PATH` =
/// `bin_dir` followed by the job's own `PATH`, else the starter's. A job ad without
/// `ParallelNode` is left alone. An ad with `ParallelNode` but no usable node number or node
/// count is an error (the node could not tell its place).
pub fn add_node_environment(
    job: &ClassAd,
    env: Vec<(String, String)>,
    facts: &NodeFacts,
) -> Result<Vec<(String, String)>, String> {
    if job.lookup("ParallelNode").is_none() {
        return Ok(env);
    }
    let node = node_number(job)
        .filter(|n| *n >= 0)
        .ok_or("the parallel node's ad has no valid ParallelNode")?;
    let count = int_attr(job, "CurrentHosts")
        .filter(|n| *n > node)
        .ok_or("the parallel node's ad has no CurrentHosts above its ParallelNode")?;
    let mut map: BTreeMap<String, String> = env.into_iter().collect();
    map.insert("_CONDOR_PROCNO".into(), node.to_string());
    map.insert("_CONDOR_NPROCS".into(), count.to_string());
    if let Some(dir) = string_attr(job, "RemoteSpoolDir") {
        map.insert("_CONDOR_REMOTE_SPOOL_DIR".into(), dir);
    }
    if let Some(hosts) = string_attr(job, "ParallelHosts") {
        map.insert("SKUA_PARALLEL_HOSTS".into(), hosts);
    }
    let rest = map
        .get("PATH")
        .cloned()
        .or_else(|| facts.starter_path.clone())
        .filter(|p| !p.is_empty());
    let path = match rest {
        Some(rest) if !facts.bin_dir.is_empty() => format!("{}:{rest}", facts.bin_dir),
        Some(rest) => rest,
        None => facts.bin_dir.clone(),
    };
    if !path.is_empty() {
        map.insert("PATH".into(), path);
    }
    Ok(map.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(text: &str) -> ClassAd {
        classad::parse_ad(text).unwrap()
    }

    fn facts() -> NodeFacts {
        NodeFacts {
            bin_dir: "/opt/skua/bin".into(),
            starter_path: Some("/usr/bin:/bin".into()),
        }
    }

    fn env_of(job: &ClassAd, env: &[(&str, &str)]) -> BTreeMap<String, String> {
        let env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        add_node_environment(job, env, &facts())
            .unwrap()
            .into_iter()
            .collect()
    }

    #[test]
    fn a_node_sees_its_number_the_node_count_the_spool_and_the_hosts() {
        let job = ad(r#"[ JobUniverse = 11; ParallelNode = 2; CurrentHosts = 4;
            RemoteSpoolDir = "/var/lib/skua/spool/7/parallel";
            ParallelHosts = "exec1,exec1,exec2,exec3" ]"#);
        let env = env_of(
            &job,
            &[("_CONDOR_SCRATCH_DIR", "/x/dir_1"), ("_CONDOR_PROCNO", "9")],
        );
        assert_eq!(env["_CONDOR_PROCNO"], "2");
        assert_eq!(env["_CONDOR_NPROCS"], "4");
        assert_eq!(
            env["_CONDOR_REMOTE_SPOOL_DIR"],
            "/var/lib/skua/spool/7/parallel"
        );
        assert_eq!(env["SKUA_PARALLEL_HOSTS"], "exec1,exec1,exec2,exec3");
        // its scratch directory is its own, as for any job
        assert_eq!(env["_CONDOR_SCRATCH_DIR"], "/x/dir_1");
        // Skua's binaries come first, then the starter's PATH
        assert_eq!(env["PATH"], "/opt/skua/bin:/usr/bin:/bin");
    }

    #[test]
    fn the_jobs_own_path_follows_the_skua_binaries() {
        let job = ad(r#"[ ParallelNode = 0; CurrentHosts = 1 ]"#);
        let env = env_of(&job, &[("PATH", "/home/u/bin:/usr/bin")]);
        assert_eq!(env["PATH"], "/opt/skua/bin:/home/u/bin:/usr/bin");
        // no spool or host list in the ad: no variable
        assert!(!env.contains_key("_CONDOR_REMOTE_SPOOL_DIR"));
        assert!(!env.contains_key("SKUA_PARALLEL_HOSTS"));
        // neither the job nor the starter has a PATH: the binaries' directory alone
        let bare = NodeFacts {
            bin_dir: "/opt/skua/bin".into(),
            starter_path: None,
        };
        let env: BTreeMap<_, _> = add_node_environment(&job, Vec::new(), &bare)
            .unwrap()
            .into_iter()
            .collect();
        assert_eq!(env["PATH"], "/opt/skua/bin");
    }

    #[test]
    fn other_jobs_are_left_alone() {
        let job = ad(r#"[ JobUniverse = 5; CurrentHosts = 1 ]"#);
        let env = env_of(&job, &[("A", "1")]);
        assert_eq!(env.len(), 1);
        assert_eq!(env["A"], "1");
        assert_eq!(node_number(&job), None);
    }

    #[test]
    fn a_node_ad_without_its_place_is_refused() {
        for text in [
            r#"[ ParallelNode = 1 ]"#,
            r#"[ ParallelNode = 1; CurrentHosts = 1 ]"#,
            r#"[ ParallelNode = -1; CurrentHosts = 3 ]"#,
            r#"[ ParallelNode = "zero"; CurrentHosts = 3 ]"#,
        ] {
            let r = add_node_environment(&ad(text), Vec::new(), &facts());
            assert!(r.is_err(), "{text}: {r:?}");
        }
    }
}
