//! Collector store throughput: updates/second into a store of 10,000
//! simulated slots, and the latency of a constrained query over 10,000 ads.
//!
//! `cargo bench -p skua-collector --bench collector` (well under a minute).

use std::time::Duration;

use classad::{parse_expr, ClassAd, Expr};
use criterion::{
    black_box, criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput,
};
use skua_collector::{AdStore, AdType, TypeFilter};

const MACHINES: usize = 10_000;

/// A slot ad of realistic shape (about 45 attributes, a few of them
/// expressions), as a startd would send it.
fn slot_ad(i: usize) -> ClassAd {
    let host = format!("node{:05}.pool.example.org", i / 8);
    let name = format!("slot{}@{host}", i % 8 + 1);
    let mut ad = ClassAd::new();
    ad.insert_value("MyType", "Machine");
    ad.insert_value("TargetType", "Job");
    ad.insert_value("Name", name.as_str());
    ad.insert_value("Machine", host.as_str());
    ad.insert_value("OpSys", "LINUX");
    ad.insert_value("Arch", "X86_64");
    ad.insert_value("OpSysAndVer", "AlmaLinux9");
    ad.insert_value(
        "State",
        if i.is_multiple_of(3) {
            "Claimed"
        } else {
            "Unclaimed"
        },
    );
    ad.insert_value(
        "Activity",
        if i.is_multiple_of(3) { "Busy" } else { "Idle" },
    );
    ad.insert_value("Memory", 512 * (i as i64 % 8 + 1));
    ad.insert_value("Cpus", 1i64);
    ad.insert_value("Disk", 10_000_000i64);
    ad.insert_value("LoadAvg", 0.25 * (i % 4) as f64);
    ad.insert_value("CondorLoadAvg", 0.0);
    ad.insert_value("KeyboardIdle", 12_345i64);
    ad.insert_value("ConsoleIdle", 12_345i64);
    ad.insert_value("EnteredCurrentState", 1_700_000_000i64);
    ad.insert_value("EnteredCurrentActivity", 1_700_000_000i64);
    ad.insert_value("SlotID", (i % 8 + 1) as i64);
    ad.insert_value("SlotType", "Static");
    ad.insert_value("TotalCpus", 8i64);
    ad.insert_value("TotalMemory", 4096i64);
    ad.insert_value("TotalSlots", 8i64);
    ad.insert_value("Mips", 20_000i64);
    ad.insert_value("KFlops", 1_500_000i64);
    ad.insert_value("HasFileTransfer", true);
    ad.insert_value("CondorVersion", "$CondorVersion: 24.0.1 2024-10-31 $");
    ad.insert_value("MyAddress", "<10.0.0.1:9618?addrs=10.0.0.1-9618>");
    ad.insert_value("StartdIpAddr", "<10.0.0.1:9618?addrs=10.0.0.1-9618>");
    ad.insert_value("UidDomain", "pool.example.org");
    ad.insert_value("FileSystemDomain", "pool.example.org");
    ad.insert_value("DaemonStartTime", 1_699_000_000i64);
    ad.insert_value("UpdateSequenceNumber", 42i64);
    ad.insert_value("IsWakeAble", false);
    ad.insert_value("JobStarts", 17i64);
    ad.insert_value("RecentJobStarts", 2i64);
    ad.insert_value("TotalTimeClaimedBusy", 99_999i64);
    ad.insert_value("TotalTimeUnclaimedIdle", 55_555i64);
    ad.insert("Start", expr("true"));
    ad.insert(
        "Requirements",
        expr("START && (WithinResourceLimits =!= false)"),
    );
    ad.insert(
        "WithinResourceLimits",
        expr("MY.Cpus >= TARGET.RequestCpus && MY.Memory >= TARGET.RequestMemory"),
    );
    ad.insert("Rank", expr("0.0"));
    ad.insert("CurrentRank", expr("0.0"));
    ad.insert("IsOwner", expr("(START =?= false)"));
    ad
}

fn expr(s: &str) -> Expr {
    parse_expr(s).expect("bench expression parses")
}

fn filled_store(ads: &[(String, ClassAd)]) -> AdStore {
    let mut store = AdStore::default();
    let machine = AdType::machine();
    for (name, ad) in ads {
        store.update(&machine, name, ad.clone(), None, 1_700_000_100);
    }
    store
}

fn bench(c: &mut Criterion) {
    let ads: Vec<(String, ClassAd)> = (0..MACHINES)
        .map(|i| {
            let ad = slot_ad(i);
            let name = format!("slot{}@node{:05}.pool.example.org", i % 8 + 1, i / 8);
            (name, ad)
        })
        .collect();
    let machine = AdType::machine();

    let mut g = c.benchmark_group("collector");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));

    // Updates: every one of the 10,000 slots re-advertises into a full store
    // (the steady state of a pool). Each ad arrives as a fresh, unshared ad,
    // as one parsed from the wire does (its making is not timed).
    // Throughput is reported in updates/s.
    g.throughput(Throughput::Elements(MACHINES as u64));
    let mut store = filled_store(&ads);
    let mut now = 1_700_000_200;
    let fresh = || -> Vec<(String, ClassAd)> {
        ads.iter()
            .map(|(name, ad)| {
                let mut copy = ClassAd::new();
                copy.update(ad);
                (name.clone(), copy)
            })
            .collect()
    };
    g.bench_function(BenchmarkId::new("update", MACHINES), |b| {
        b.iter_batched(
            fresh,
            |batch| {
                now += 1;
                for (name, ad) in batch {
                    black_box(store.update(&machine, &name, ad, None, now));
                }
            },
            BatchSize::PerIteration,
        )
    });

    // Queries over 10,000 slot ads.
    g.throughput(Throughput::Elements(1));
    let store = filled_store(&ads);
    let only_machines = TypeFilter::Only(machine.clone());
    let constraint = expr(r#"Memory > 1024 && State == "Unclaimed""#);
    g.bench_function(BenchmarkId::new("query_constrained", MACHINES), |b| {
        b.iter(|| black_box(store.query(&only_machines, Some(&constraint), &[], now)))
    });
    let projection = vec![
        "Name".to_string(),
        "Memory".to_string(),
        "State".to_string(),
    ];
    g.bench_function(BenchmarkId::new("query_projected", MACHINES), |b| {
        b.iter(|| black_box(store.query(&only_machines, Some(&constraint), &projection, now)))
    });
    g.bench_function(BenchmarkId::new("query_all", MACHINES), |b| {
        b.iter(|| black_box(store.query(&TypeFilter::Any, None, &[], now)))
    });
    g.bench_function(BenchmarkId::new("expire_none", MACHINES), |b| {
        let mut store = filled_store(&ads);
        b.iter(|| black_box(store.expire(now)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
