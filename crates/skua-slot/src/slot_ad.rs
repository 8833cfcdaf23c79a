//! The slot ads: what a slot advertises about the machine, its resources,
//! its state and its claim.

use classad::{ClassAd, Value};

use crate::machine::{evaluator, Machine, Slot, SlotKind};
use crate::state::{Activity, State};

impl Machine {
    /// Every slot's ad, with its name.
    pub fn ads(&self, now: i64) -> Vec<(String, ClassAd)> {
        (0..self.slots.len())
            .map(|i| (self.slots[i].name.clone(), self.slot_ad(i, now)))
            .collect()
    }

    /// The ad of slot `i` at `now`.
    pub fn slot_ad(&self, i: usize, now: i64) -> ClassAd {
        let s = &self.slots[i];
        let f = &self.facts;
        let c = &self.config;
        let mut ad = ClassAd::new();
        ad.insert_value("MyType", "Machine");
        ad.insert_value("TargetType", "Job");
        ad.insert_value("Name", s.name.as_str());
        ad.insert_value("Machine", f.hostname.as_str());
        ad.insert_value("SlotID", i64::from(s.id));
        ad.insert_value("VirtualMachineID", i64::from(s.id));
        ad.insert_value("SlotTypeID", i64::from(s.type_id));
        if let Some(sub) = s.sub_id {
            ad.insert_value("DSlotId", i64::from(sub));
        }
        ad.insert_value("SlotType", s.kind.as_str());
        ad.insert_value("PartitionableSlot", s.kind == SlotKind::Partitionable);
        ad.insert_value("DynamicSlot", s.kind == SlotKind::Dynamic);
        ad.insert_value("Cpus", s.cpus);
        ad.insert_value("Memory", s.memory_mb);
        let pending = self.pending_output_kb.get(&s.name).copied().unwrap_or(0);
        ad.insert_value("Disk", crate::machine::advertised_disk(s.disk_kb, pending));
        ad.insert_value("TotalSlotCpus", s.total.0);
        ad.insert_value("TotalSlotMemory", s.total.1);
        ad.insert_value("TotalSlotDisk", s.total.2);
        if s.kind == SlotKind::Partitionable {
            let children = self
                .slots
                .iter()
                .filter(|d| d.kind == SlotKind::Dynamic && d.id == s.id)
                .count() as i64;
            ad.insert_value("NumDynamicSlots", children);
        }
        ad.insert_value("TotalCpus", c.total_cpus);
        ad.insert_value("TotalMemory", c.total_memory_mb);
        ad.insert_value("TotalDisk", c.total_disk_kb);
        ad.insert_value(
            "TotalSlots",
            self.slots
                .iter()
                .filter(|s| s.kind != SlotKind::Dynamic)
                .count() as i64,
        );
        ad.insert_value("DetectedCpus", f.cpus);
        ad.insert_value("DetectedMemory", f.memory_mb);
        ad.insert_value("Arch", f.arch.as_str());
        ad.insert_value("OpSys", f.opsys.as_str());
        ad.insert_value("OpSysAndVer", f.opsys_and_ver.as_str());
        ad.insert_value("OpSysName", f.opsys_name.as_str());
        ad.insert_value("OpSysMajorVer", f.opsys_major_ver);
        ad.insert_value("OpSysLongName", f.opsys_long_name.as_str());
        // load: a busy slot's job accounts for up to its CPUs of the
        // machine's load; the rest is the owner's, spread evenly
        let running = |s: &Slot| {
            s.status.state == State::Claimed
                && matches!(s.status.activity, Activity::Busy | Activity::Retiring)
        };
        let busy_cpus: i64 = self
            .slots
            .iter()
            .filter(|s| running(s))
            .map(|s| s.cpus)
            .sum();
        let condor_total = f.load_avg.min(busy_cpus as f64);
        let owner_share = (f.load_avg - condor_total).max(0.0) / self.slots.len().max(1) as f64;
        let condor = if running(s) && busy_cpus > 0 {
            condor_total * s.cpus as f64 / busy_cpus as f64
        } else {
            0.0
        };
        ad.insert_value("CondorLoadAvg", condor);
        ad.insert_value("LoadAvg", condor + owner_share);
        ad.insert_value("TotalLoadAvg", f.load_avg);
        ad.insert_value("TotalCondorLoadAvg", condor_total);
        ad.insert_value("KeyboardIdle", f.keyboard_idle);
        ad.insert_value("ConsoleIdle", f.console_idle);
        if let Some(m) = f.mips {
            ad.insert_value("Mips", m);
        }
        if let Some(k) = f.kflops {
            ad.insert_value("KFlops", k);
        }
        ad.insert_value("FileSystemDomain", f.filesystem_domain.as_str());
        ad.insert_value("UidDomain", f.uid_domain.as_str());
        ad.insert_value("HasFileTransfer", true);
        if !f.transfer_plugin_methods.is_empty() {
            ad.insert_value(
                "HasFileTransferPluginMethods",
                f.transfer_plugin_methods.join(",").as_str(),
            );
        }
        // The starter sends a self-checkpointing job's checkpoints
        // (condor_submit requires it of `checkpoint_exit_code` jobs).
        ad.insert_value("HasSelfCheckpointTransfers", true);
        if !f.checkpoint_backends.is_empty() {
            ad.insert_value("HasCheckpointBackend", true);
            ad.insert_value(
                "CheckpointBackends",
                f.checkpoint_backends.join(",").as_str(),
            );
            ad.insert_value("CheckpointPlatform", f.checkpoint_platform.as_str());
        }
        // HTCondor's form, with Skua's own version number: condor_submit's
        // default Requirements read the second word (`split(...)[1]`) and
        // compare it with HTCondor releases.
        ad.insert_value("CondorVersion", f.condor_version.as_str());
        ad.insert_value("CondorPlatform", "$CondorPlatform: X86_64-Linux $");
        ad.insert_value("StartdIpAddr", self.address.as_str());
        ad.insert_value("MyAddress", self.address.as_str());
        ad.insert_value("State", s.status.state.as_str());
        ad.insert_value("Activity", s.status.activity.as_str());
        ad.insert_value("EnteredCurrentState", s.status.entered_state);
        ad.insert_value("EnteredCurrentActivity", s.status.entered_activity);
        ad.insert_value("StateTimer", now - s.status.entered_state);
        ad.insert_value("ActivityTimer", now - s.status.entered_activity);
        ad.insert_value("MyCurrentTime", now);
        ad.insert_value("DaemonStartTime", f.start_time);
        ad.insert_value("Draining", self.draining());
        let job = s.claim.as_ref().and_then(|c| c.job.as_ref());
        let vanilla = job.is_some_and(|j| {
            evaluator(now)
                .eval_attr("JobUniverse", &j.job_ad, None)
                .as_int()
                == Some(5)
        });
        if let Some(p) = c.policies.get(&s.id) {
            for (attr, _, _) in &p.exprs {
                if let Some(e) = p.get(attr, vanilla) {
                    ad.insert(*attr, e.clone());
                }
            }
        } else {
            ad.insert("Start", c.start.clone());
            ad.insert("Rank", c.rank.clone());
            ad.insert("IsOwner", c.is_owner.clone());
        }
        // HTCondor's slot Requirements: START, except while the slot cannot
        // take a job (Owner, Preempting, Drained)
        let req = match s.status.state {
            State::Owner | State::Preempting | State::Drained => "false",
            _ => "START",
        };
        if let Ok(req) = classad::parse_expr(req) {
            ad.insert("Requirements", req);
        }
        for (name, e) in &c.extra_attrs {
            ad.insert(name.as_str(), e.clone());
        }
        for (name, (v, t)) in &s.latches {
            ad.insert_value(&format!("{name}Value"), v.clone());
            ad.insert_value(&format!("{name}Time"), *t);
        }
        for (name, e) in self.cron.iter().chain(self.overrides.iter()) {
            ad.insert(name.as_str(), e.clone());
        }
        if let Some(j) = job {
            let st = &s.status;
            ad.insert_value("TotalJobRunTime", st.job_started.map_or(0, |t| now - t));
            ad.insert_value("TotalJobSuspendTime", st.job_suspend_secs(now));
            ad.insert_value("JobRunTimeNotSuspended", st.job_run_secs(now));
            ad.insert_value("NumSuspensions", st.suspensions);
            for name in &c.job_attrs {
                if let Some(e) = j.job_ad.lookup(name) {
                    ad.insert(name.as_str(), e.clone());
                }
            }
        }
        if let Some(t) = s.claim.as_ref().and_then(|c| c.claimed_at) {
            ad.insert_value("TotalClaimRunTime", now - t);
        }
        let mut current_rank = 0.0;
        if let Some(cl) = &s.claim {
            if cl.claimed_at.is_some() {
                ad.insert_value("RemoteUser", cl.submitter.as_str());
                ad.insert_value("RemoteOwner", cl.submitter.as_str());
                let host = cl
                    .schedd_addr
                    .trim_start_matches('<')
                    .split([':', '>'])
                    .next()
                    .unwrap_or("");
                ad.insert_value("ClientMachine", host);
                if let Some(job_ad) = &cl.job_ad {
                    current_rank = match classad::rank(&mut evaluator(now), &ad, job_ad) {
                        Value::Int(i) => i as f64,
                        Value::Real(r) => r,
                        _ => 0.0,
                    };
                }
            }
            if let Some(j) = &cl.job {
                ad.insert_value("JobId", j.job_id.as_str());
                ad.insert_value("JobStart", j.started);
                let mut ev = evaluator(now);
                if let Some(g) = ev.eval_attr("GlobalJobId", &j.job_ad, None).as_string() {
                    ad.insert_value("GlobalJobId", g);
                }
            }
        }
        ad.insert_value("CurrentRank", current_rank);
        ad
    }
}
