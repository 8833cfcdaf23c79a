//! The routes the negotiator calls: the resource requests of a submitter
//! (its idle jobs grouped by autocluster) and the matches of a cycle, each
//! of which starts a claim task (`claim.rs`).

use classad::parse_ad;
use skua_net::{ApiError, Json, State};
use skua_proto::{Ack, Matches, ResourceRequest, ResourceRequests, ResourceRequestsReply};

use crate::claim::{self, ClaimQueue as _, Startd as _, StartdClient};
use crate::shared::{with_queue, Shared};

fn owner_of(submitter: &str) -> &str {
    submitter.split('@').next().unwrap_or(submitter)
}

/// `/schedd/resource_requests`: the submitter's idle jobs not held by a
/// claim, by autocluster.
pub(crate) async fn resource_requests(
    State(st): State<Shared>,
    Json(req): Json<ResourceRequests>,
) -> Result<Json<ResourceRequestsReply>, ApiError> {
    let owner = owner_of(&req.submitter).to_string();
    if owner == crate::dedicated::SUBMITTER_OWNER {
        return Ok(Json(ResourceRequestsReply {
            requests: crate::dedicated::resource_requests(&st),
        }));
    }
    let now = st.clock.now_secs();
    let groups = with_queue(&st, move |q| {
        Ok(q.schedd
            .resource_requests(&owner, &req.significant_attributes, &q.busy, now))
    })
    .await?;
    Ok(Json(ResourceRequestsReply {
        requests: groups
            .into_iter()
            .map(|(autocluster, ad, count)| ResourceRequest {
                autocluster,
                ad: ad.to_string(),
                count,
            })
            .collect(),
    }))
}

/// `/schedd/matches`: for each match, a job is picked and a claim task
/// started; a match with no job to run is released at once.
pub(crate) async fn matches(
    State(st): State<Shared>,
    Json(m): Json<Matches>,
) -> Result<Json<Ack>, ApiError> {
    let owner = owner_of(&m.submitter).to_string();
    for info in m.matches {
        let slot_ad = parse_ad(&info.slot_ad)
            .map_err(|e| ApiError::bad_request(format!("slot ad of {}: {e}", info.slot)))?;
        if owner == crate::dedicated::SUBMITTER_OWNER {
            crate::dedicated::matched(&st, info, slot_ad);
            continue;
        }
        let owner2 = owner.clone();
        let autocluster = info.autocluster;
        let slot_ad2 = slot_ad.clone();
        // Pick the job and mark it busy in one operation on the queue, so
        // that two claims never pick the same job.
        let now = st.clock.now_secs();
        let job = with_queue(&st, move |q| {
            let job = q
                .schedd
                .job_for_match(autocluster, &owner2, &slot_ad2, &q.busy, now);
            Ok(job.filter(|j| q.busy.insert(*j)))
        })
        .await?;
        let startd = match StartdClient::dial(&st.shadows, &info.startd_addr) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("cannot reach the startd of {}: {e}", info.slot);
                if let Some(job) = job {
                    st.done_with(job);
                }
                continue;
            }
        };
        let st = st.clone();
        let owner = owner.clone();
        match job {
            // Nothing to run: give the match back at once.
            None => {
                tokio::spawn(async move { startd.release(&info.claim_id).await });
            }
            Some(job) => {
                tokio::spawn(async move {
                    let shadows = st.shadows.clone();
                    claim::claim_task(&shadows, &st, &startd, &info, slot_ad, &owner, job).await
                });
            }
        }
    }
    Ok(Json(Ack {}))
}
