//! Resource usage of the job's process group, from `/proc`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use nix::unistd::Pid;
use skua_daemon::cgroup::CpuStat;
use skua_proto::JobUsage;

/// One sample of a process group: summed over its processes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sample {
    /// Virtual size, KiB.
    pub vsize_kb: u64,
    /// Resident set, KiB.
    pub rss_kb: u64,
    /// User CPU seconds.
    pub user_secs: f64,
    /// System CPU seconds.
    pub sys_secs: f64,
}

/// Parses one `/proc/<pid>/stat` line: `(pgrp, utime ticks, stime ticks,
/// vsize bytes, rss pages)`. The command name may hold spaces and
/// parentheses; the fields start after the last `)`.
pub fn parse_stat(line: &str) -> Option<(i32, u64, u64, u64, u64)> {
    let rest = &line[line.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // f[0] is field 3 (state)
    let get = |field: usize| f.get(field - 3);
    Some((
        get(5)?.parse().ok()?,
        get(14)?.parse().ok()?,
        get(15)?.parse().ok()?,
        get(23)?.parse().ok()?,
        get(24)?.parse().ok()?,
    ))
}

/// Sums the processes of group `pgid`.
pub fn sample_group(pgid: i32) -> Sample {
    let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .filter(|t| *t > 0)
        .unwrap_or(100) as f64;
    let page_kb = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .filter(|p| *p > 0)
        .unwrap_or(4096) as u64
        / 1024;
    let mut s = Sample::default();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return s;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(line) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let Some((pgrp, ut, st, vsize, rss)) = parse_stat(&line) else {
            continue;
        };
        if pgrp != pgid {
            continue;
        }
        s.vsize_kb += vsize / 1024;
        s.rss_kb += rss * page_kb;
        s.user_secs += ut as f64 / ticks;
        s.sys_secs += st as f64 / ticks;
    }
    s
}

/// CPU seconds (user, system) and peak RSS (KiB) of the reaped children
/// of this process, all of them since it started.
fn children_rusage() -> Option<(f64, f64, u64)> {
    let ru = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).ok()?;
    let secs = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1_000_000.0;
    Some((
        secs(ru.user_time()),
        secs(ru.system_time()),
        ru.max_rss().max(0) as u64,
    ))
}

/// Peak sizes and CPU of the job so far.
#[derive(Debug, Default)]
pub struct UsageMeter {
    pgid: Option<i32>,
    started: Option<Instant>,
    ended: Option<f64>,
    /// The children's usage before this job: a starter runs a claim's jobs
    /// one after another, and the kernel sums all its reaped children.
    baseline: Option<(f64, f64, u64)>,
    peak_vsize_kb: u64,
    peak_rss_kb: u64,
    user_secs: f64,
    sys_secs: f64,
    /// The job's cgroup, when it has one: its `cpu.stat` counts every
    /// process of the job, those that left the process group or exited
    /// included.
    cgroup: Option<PathBuf>,
    cgroup_cpu: Option<CpuStat>,
    /// CPU seconds (user, system) of the cgroups of the job's earlier
    /// processes in this run (a self-checkpointing job is restarted).
    earlier_cgroups: (f64, f64),
}

impl UsageMeter {
    /// The job's process group started now. The group is first sampled at
    /// the first sampling interval: scanning `/proc` costs more than a
    /// short job runs.
    pub fn start(&mut self, pgid: Pid) {
        self.pgid = Some(pgid.as_raw());
        self.started = Some(Instant::now());
        self.baseline = children_rusage();
    }

    /// The job was started again in the same run (after a checkpoint):
    /// its new process group is measured from now on, and the usage keeps
    /// accumulating (wall time from the first start, the CPU of every
    /// process, the peaks).
    pub fn restart(&mut self, pgid: Pid) {
        if self.started.is_none() {
            self.start(pgid);
            return;
        }
        self.pgid = Some(pgid.as_raw());
        self.ended = None;
        if let Some(cpu) = self.cgroup_cpu.take() {
            self.earlier_cgroups.0 += cpu.user_secs();
            self.earlier_cgroups.1 += cpu.sys_secs();
        }
    }

    /// Reads the CPU time of the job's cgroup at each sample from now on.
    pub fn watch_cgroup(&mut self, dir: Option<&Path>) {
        self.cgroup = dir.map(Path::to_path_buf);
        self.sample_cgroup();
    }

    /// The cgroup's figures at the end (read before it was removed): they
    /// are the job's CPU time.
    pub fn cgroup_final(&mut self, cpu: CpuStat) {
        self.cgroup = None;
        self.cgroup_cpu = Some(cpu);
        self.user_secs = self.user_secs.max(self.earlier_cgroups.0 + cpu.user_secs());
        self.sys_secs = self.sys_secs.max(self.earlier_cgroups.1 + cpu.sys_secs());
    }

    fn sample_cgroup(&mut self) {
        if let Some(cpu) = self.cgroup.as_deref().and_then(CpuStat::read) {
            self.cgroup_cpu = Some(cpu);
            self.user_secs = self.user_secs.max(self.earlier_cgroups.0 + cpu.user_secs());
            self.sys_secs = self.sys_secs.max(self.earlier_cgroups.1 + cpu.sys_secs());
        }
    }

    /// Takes a sample of the group, keeping peaks.
    pub fn sample(&mut self) {
        self.sample_cgroup();
        let Some(pgid) = self.pgid else { return };
        let s = sample_group(pgid);
        self.peak_vsize_kb = self.peak_vsize_kb.max(s.vsize_kb);
        self.peak_rss_kb = self.peak_rss_kb.max(s.rss_kb);
        // CPU of live processes only grows; exited ones show in rusage.
        self.user_secs = self.user_secs.max(s.user_secs);
        self.sys_secs = self.sys_secs.max(s.sys_secs);
    }

    /// The job is over (its processes reaped): fold in the CPU of its
    /// reaped processes and, when one of them set a new peak, their peak
    /// RSS. A job never sampled gets that peak as its image size too. With
    /// a cgroup, its CPU time is the job's: it also counts processes that
    /// escaped the process group.
    pub fn finish(&mut self) {
        if let Some(t) = self.started {
            self.ended = Some(t.elapsed().as_secs_f64());
        }
        if let Some((user, sys, max_rss)) = children_rusage() {
            let (u0, s0, r0) = self.baseline.unwrap_or_default();
            self.user_secs = self.user_secs.max(user - u0);
            self.sys_secs = self.sys_secs.max(sys - s0);
            if max_rss > r0 || self.baseline.is_none() {
                self.peak_rss_kb = self.peak_rss_kb.max(max_rss);
            }
        }
        self.peak_vsize_kb = self.peak_vsize_kb.max(self.peak_rss_kb);
        if let Some(cpu) = self.cgroup_cpu {
            self.user_secs = self.earlier_cgroups.0 + cpu.user_secs();
            self.sys_secs = self.earlier_cgroups.1 + cpu.sys_secs();
        }
    }

    /// Usage so far.
    pub fn usage(&self) -> JobUsage {
        JobUsage {
            image_size_kb: self.peak_vsize_kb,
            resident_set_size_kb: self.peak_rss_kb,
            user_cpu_secs: self.user_secs,
            sys_cpu_secs: self.sys_secs,
            wall_secs: self
                .ended
                .or_else(|| self.started.map(|t| t.elapsed().as_secs_f64()))
                .unwrap_or(0.0),
        }
    }

    /// Usage at the end.
    pub fn final_usage(&self) -> JobUsage {
        self.usage()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names() {
        let line = "4242 (my (odd) cmd) S 1 4240 4240 0 -1 4194304 100 0 0 0 250 30 0 0 20 0 1 0 12345 104857600 2560 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        assert_eq!(parse_stat(line), Some((4240, 250, 30, 104857600, 2560)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn a_cgroup_s_cpu_time_is_the_job_s() {
        let mut m = UsageMeter::default();
        m.start(nix::unistd::getpgrp());
        m.cgroup_final(CpuStat {
            usage_usec: 3_500_000,
            user_usec: 3_000_000,
            system_usec: 500_000,
        });
        m.finish();
        let u = m.final_usage();
        assert!((u.user_cpu_secs - 3.0).abs() < 1e-9, "{u:?}");
        assert!((u.sys_cpu_secs - 0.5).abs() < 1e-9, "{u:?}");
    }

    #[test]
    fn a_restarted_job_s_usage_accumulates() {
        let mut m = UsageMeter::default();
        m.start(nix::unistd::getpgrp());
        m.cgroup_final(CpuStat {
            usage_usec: 2_000_000,
            user_usec: 1_500_000,
            system_usec: 500_000,
        });
        m.finish();
        let first = m.final_usage();
        m.restart(nix::unistd::getpgrp());
        m.cgroup_final(CpuStat {
            usage_usec: 1_250_000,
            user_usec: 1_000_000,
            system_usec: 250_000,
        });
        m.finish();
        let u = m.final_usage();
        assert!((u.user_cpu_secs - 2.5).abs() < 1e-9, "{u:?}");
        assert!((u.sys_cpu_secs - 0.75).abs() < 1e-9, "{u:?}");
        assert!(u.wall_secs >= first.wall_secs, "{u:?} {first:?}");
    }

    #[test]
    fn the_own_group_is_measured() {
        let me = nix::unistd::getpgrp().as_raw();
        let s = sample_group(me);
        assert!(s.rss_kb > 0 && s.vsize_kb >= s.rss_kb, "{s:?}");
    }
}
