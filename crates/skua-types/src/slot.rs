//! The startd's slot states and activities, as HTCondor spells them in a
//! slot ad's `State` and `Activity`.

use std::fmt;

/// HTCondor's slot states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SlotState {
    Owner,
    Unclaimed,
    Matched,
    Claimed,
    Preempting,
    Backfill,
    Drained,
}

impl SlotState {
    pub const ALL: [SlotState; 7] = [
        SlotState::Owner,
        SlotState::Unclaimed,
        SlotState::Matched,
        SlotState::Claimed,
        SlotState::Preempting,
        SlotState::Backfill,
        SlotState::Drained,
    ];

    /// The `State` attribute value.
    pub fn as_str(self) -> &'static str {
        match self {
            SlotState::Owner => "Owner",
            SlotState::Unclaimed => "Unclaimed",
            SlotState::Matched => "Matched",
            SlotState::Claimed => "Claimed",
            SlotState::Preempting => "Preempting",
            SlotState::Backfill => "Backfill",
            SlotState::Drained => "Drained",
        }
    }

    /// The state a `State` value names (any case), if any.
    pub fn from_name(name: &str) -> Option<SlotState> {
        SlotState::ALL
            .into_iter()
            .find(|s| s.as_str().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for SlotState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// HTCondor's slot activities.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Activity {
    Idle,
    Benchmarking,
    Busy,
    Suspended,
    Retiring,
    Vacating,
    Killing,
}

impl Activity {
    pub const ALL: [Activity; 7] = [
        Activity::Idle,
        Activity::Benchmarking,
        Activity::Busy,
        Activity::Suspended,
        Activity::Retiring,
        Activity::Vacating,
        Activity::Killing,
    ];

    /// The `Activity` attribute value.
    pub fn as_str(self) -> &'static str {
        match self {
            Activity::Idle => "Idle",
            Activity::Benchmarking => "Benchmarking",
            Activity::Busy => "Busy",
            Activity::Suspended => "Suspended",
            Activity::Retiring => "Retiring",
            Activity::Vacating => "Vacating",
            Activity::Killing => "Killing",
        }
    }

    /// The activity an `Activity` value names (any case), if any.
    pub fn from_name(name: &str) -> Option<Activity> {
        Activity::ALL
            .into_iter()
            .find(|a| a.as_str().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for Activity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_through_their_htcondor_names() {
        let names: Vec<&str> = SlotState::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(
            names,
            [
                "Owner",
                "Unclaimed",
                "Matched",
                "Claimed",
                "Preempting",
                "Backfill",
                "Drained"
            ]
        );
        for s in SlotState::ALL {
            assert_eq!(SlotState::from_name(s.as_str()), Some(s));
            assert_eq!(SlotState::from_name(&s.as_str().to_uppercase()), Some(s));
        }
        assert_eq!(
            SlotState::from_name("unclaimed"),
            Some(SlotState::Unclaimed)
        );
        assert_eq!(SlotState::from_name(""), None);
        assert_eq!(SlotState::from_name("Drain"), None);
        assert_eq!(SlotState::Claimed.to_string(), "Claimed");
    }

    #[test]
    fn activities_round_trip_through_their_htcondor_names() {
        let names: Vec<&str> = Activity::ALL.iter().map(|a| a.as_str()).collect();
        assert_eq!(
            names,
            [
                "Idle",
                "Benchmarking",
                "Busy",
                "Suspended",
                "Retiring",
                "Vacating",
                "Killing"
            ]
        );
        for a in Activity::ALL {
            assert_eq!(Activity::from_name(a.as_str()), Some(a));
        }
        assert_eq!(Activity::from_name("busy"), Some(Activity::Busy));
        assert_eq!(Activity::from_name("Running"), None);
        assert_eq!(Activity::Retiring.to_string(), "Retiring");
    }
}
