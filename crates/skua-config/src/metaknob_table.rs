//! Bodies of the `use CATEGORY : TEMPLATE` metaknobs.
//!
//! Each body is configuration text, expanded in place at the `use` line after its
//! arguments (`$(1)`, `$(2:default)`, `$(2+)`, `$(1?)`, `$(0#)` ...) are substituted. The set and
//! the knob values reproduce what HTCondor 25.14.1 defines for each template (comments dropped).
//! Generated data; do not edit by hand.

/// `(category, template name, body)`; both names are matched case-insensitively.
pub(crate) static METAKNOBS: &[(&str, &str, &str)] = &[
    (
        r#"ROLE"#,
        r#"CentralManager"#,
        r#"DAEMON_LIST=$(DAEMON_LIST) COLLECTOR NEGOTIATOR
"#,
    ),
    (
        r#"ROLE"#,
        r#"Execute"#,
        r#"DAEMON_LIST=$(DAEMON_LIST) STARTD
"#,
    ),
    (
        r#"ROLE"#,
        r#"get_htcondor_central_manager"#,
        r#"use security:get_htcondor_idtokens
use role:CentralManager
"#,
    ),
    (
        r#"ROLE"#,
        r#"get_htcondor_execute"#,
        r#"use security:get_htcondor_idtokens
use role:execute
"#,
    ),
    (
        r#"ROLE"#,
        r#"get_htcondor_submit"#,
        r#"use security:get_htcondor_idtokens
use role:submit
"#,
    ),
    (
        r#"ROLE"#,
        r#"Personal"#,
        r#"CONDOR_HOST=127.0.0.1
COLLECTOR_HOST=$(CONDOR_HOST):0
DAEMON_LIST=MASTER COLLECTOR NEGOTIATOR STARTD SCHEDD
RunBenchmarks=0
"#,
    ),
    (
        r#"ROLE"#,
        r#"Submit"#,
        r#"DAEMON_LIST=$(DAEMON_LIST) SCHEDD
"#,
    ),
    (
        r#"POLICY"#,
        r#"ALWAYS_RUN_JOBS"#,
        r#"WANT_SUSPEND=False
WANT_VACATE=True
SUSPEND=False
CONTINUE=True
PREEMPT=False
START=True
KILL=False
PREEMPTION_REQUIREMENTS=False
NEGOTIATOR_CONSIDER_PREEMPTION=False
MaxJobRetirementTime=2147483647
CLAIM_WORKLIFE=1200
"#,
    ),
    (
        r#"POLICY"#,
        r#"DESKTOP"#,
        r#"if ! defined PolicyExprFragments
use FEATURE : POLICY_EXPR_FRAGMENTS
endif
STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
CpuBusyTimer=IfThenElse(CpuBusyValue is 1, time() - CpuBusyTime, 0)
WANT_SUSPEND=($(SmallJob) || $(KeyboardNotBusy) || $(IsVanilla) ) && ( $(SUSPEND))
WANT_VACATE=$(ActivationTimer) > 600 || $(IsVanilla)
SUSPEND=($(KeyboardBusy) || ( ($(CpuBusyTimer) > 120) && $(ActivationTimer) > 90))
CONTINUE=($(CPUIdle) && ($(ActivityTimer) > 10) && (KeyboardIdle > $(ContinueIdleTime)))
PREEMPT=(((Activity == "Suspended") && ($(ActivityTimer) > $(MaxSuspendTime))) || (SUSPEND && (WANT_SUSPEND == False)))
START=((KeyboardIdle > $(StartIdleTime)) && ( $(CPUIdle) || (State != "Unclaimed" && State != "Owner")) )
KILL=False
MaxJobRetirementTime=0
CLAIM_WORKLIFE=
SLOTS_CONNECTED_TO_KEYBOARD=1000000
SLOTS_CONNECTED_TO_CONSOLE=1000000
IS_OWNER=(START =?= False)
"#,
    ),
    (
        r#"POLICY"#,
        r#"DESKTOP_HOURS"#,
        r#"use FEATURE : POLICY_HOURS_TO_START($(1+))
NonCondorLoadAvg=(LoadAvg - CondorLoadAvg)
CpuBusy=($(NonCondorLoadAvg) >= $(HighLoad))
STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
CpuBusyTimer=(CpuBusyValue * (time() - CpuBusyTime))
PREEMPT = $(NoJobsHours)
START = $(RunJobsHours)
WANT_SUSPEND=False
WANT_VACATE=True
SUSPEND=False
CONTINUE=True
KILL=False
MaxJobRetirementTime=0
CLAIM_WORKLIFE=
SLOTS_CONNECTED_TO_KEYBOARD=1000000
SLOTS_CONNECTED_TO_CONSOLE=1000000
IS_OWNER=(START =?= False)
"#,
    ),
    (
        r#"POLICY"#,
        r#"DESKTOP_IDLE"#,
        r#"if $(1?)
use FEATURE : POLICY_HOURS_TO_START($(1+))
endif
NonCondorLoadAvg=(LoadAvg - CondorLoadAvg)
CpuBusy=($(NonCondorLoadAvg) >= $(HighLoad))
CpuIdle=($(NonCondorLoadAvg) <= $(BackgroundLoad))
STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
CpuBusyTimer=(CpuBusyValue * (time() - CpuBusyTime))
PreemptKeyboardIdleTime=60
PreemptCpuBusyTime=120
PREEMPT=(KeyboardIdle < $(PreemptKeyboardIdleTime)) || ($(CpuBusyTimer) > $(PreemptCpuBusyTime))
if defined NoJobsHours
PREEMPT = ($(PREEMPT)) && ($(NoJobsHours))
endif
START=(KeyboardIdle > $(StartIdleTime)) && $(CPUIdle)
if defined RunJobsHours
START = ($(START)) || ($(RunJobsHours))
endif
WANT_SUSPEND=False
WANT_VACATE=True
SUSPEND=False
CONTINUE=True
KILL=False
MaxJobRetirementTime=0
CLAIM_WORKLIFE=
SLOTS_CONNECTED_TO_KEYBOARD=1000000
SLOTS_CONNECTED_TO_CONSOLE=1000000
IS_OWNER=(START =?= False)
"#,
    ),
    (
        r#"POLICY"#,
        r#"HOLD_IF_CPUS_EXCEEDED"#,
        r#"use POLICY : STARTD_PUBLISH_CpusUsage
CPU_EXCEEDED = (CpusUsage > Cpus + 0.8)
HOLD_REASON_CPU_EXCEEDED = CPU usage exceeded request_cpus
use POLICY : WANT_HOLD_IF( CPU_EXCEEDED, $(HOLD_SUBCODE_CPU_EXCEEDED:101), $(HOLD_REASON_CPU_EXCEEDED) )
"#,
    ),
    (
        r#"POLICY"#,
        r#"HOLD_IF_DISK_EXCEEDED"#,
        r#"DISK_EXCEEDED = (JobUniverse != 13 && DiskUsage =!= UNDEFINED && DiskUsage > Disk)
HOLD_REASON_DISK_EXCEEDED = disk usage exceeded allocated disk
use POLICY : WANT_HOLD_IF( DISK_EXCEEDED, $(HOLD_SUBCODE_DISK_EXCEEDED:104), $(HOLD_REASON_DISK_EXCEEDED) )
"#,
    ),
    (
        r#"POLICY"#,
        r#"HOLD_IF_MEMORY_EXCEEDED"#,
        r#"MEMORY_EXCEEDED = (JobUniverse != 13 && MemoryUsage =!= UNDEFINED && MemoryUsage > Memory)
HOLD_REASON_MEMORY_EXCEEDED = memory usage exceeded request_memory
use POLICY : WANT_HOLD_IF( MEMORY_EXCEEDED, $(HOLD_SUBCODE_MEMORY_EXCEEDED:102), $(HOLD_REASON_MEMORY_EXCEEDED) )
"#,
    ),
    (
        r#"POLICY"#,
        r#"HOLD_IF_RUNTIME_EXCEEDS"#,
        r#"MAX_JOB_RUNTIME = $(1:24*3600)
HOLD_REASON_RUNTIME_EXCEEDS = runtime exceeded maximum ($(MAX_JOB_RUNTIME) seconds)
HOLD_RUNTIME_EXCEEDS = (JobState == "Running") && ((time() - JobCurrentStartDate) > $(MAX_JOB_RUNTIME))
use policy : WANT_HOLD_IF( HOLD_RUNTIME_EXCEEDS, $(HOLD_SUBCODE_RUNTIME_EXCEEDS:103), $(HOLD_REASON_RUNTIME_EXCEEDS) )
"#,
    ),
    (
        r#"POLICY"#,
        r#"LIMIT_JOB_RUNTIMES"#,
        r#"MAX_JOB_RUNTIME=$(1:24*3600)
MaxJobRetirementTime=$(MAX_JOB_RUNTIME)+120
PREEMPT=(Activity == "Busy") && ((time() - EnteredCurrentActivity) > $(MAX_JOB_RUNTIME))
"#,
    ),
    (
        r#"POLICY"#,
        r#"OnlyRegisteredCheckpointDestinations"#,
        r#"TOOL_CLASSAD_USER_MAP_NAMES = $(TOOL_CLASSAD_USER_MAP_NAMES) checkpoint_destination_map
SCHEDD_CLASSAD_USER_MAP_NAMES = $(SCHEDD_CLASSAD_USER_MAP_NAMES) checkpoint_destination_map
CLASSAD_USER_MAPFILE_checkpoint_destination_map = $(CHECKPOINT_DESTINATION_MAPFILE)
CLASSAD_USER_MAP_PREFIX_checkpoint_destination_map = TRUE
JOB_TRANSFORM_NAMES = $(JOB_TRANSFORM_NAMES) ValidateCheckpointDestination
JOB_TRANSFORM_ValidateCheckpointDestination @=end
EVALSET CheckpointDestinationValid = ifthenelse(undefined =?= userMap("checkpoint_destination_map", CheckpointDestination), undefined, True)
@end
IMMUTABLE_JOB_ATTRS = $(IMMUTABLE_JOB_ATTRS) CheckpointDestinationValid
SUBMIT_REQUIREMENT_NAMES = $(SUBMIT_REQUIREMENT_NAMES) RejectInvalidCheckpointDestination
SUBMIT_REQUIREMENT_RejectInvalidCheckpointDestination = CheckpointDestination =?= undefined || CheckpointDestinationValid =?= True
SUBMIT_REQUIREMENT_RejectInvalidCheckpointDestination_REASON = "You specified a checkpoint_destination this AP does not know how to clean up.  You may need to add a trailing / to the URL."
"#,
    ),
    (
        r#"POLICY"#,
        r#"PREEMPT_IF"#,
        r#"if !$(1?)
error : use POLICY : PREEMPT_IF requires an argument. It should be the name of a config variable that has the trigger expression.
endif
if defined PREEMPT
PREEMPT = $($(1)) || $(PREEMPT)
else
PREEMPT = $($(1))
endif
MAXJOBRETIREMENTTIME = ifthenelse($($(1)),-1,$(MAXJOBRETIREMENTTIME:0))
if defined WANT_SUSPEND
WANT_SUSPEND = $($(1)) =!= true && $(WANT_SUSPEND)
else
WANT_SUSPEND = $($(1)) =!= true
endif
"#,
    ),
    (
        r#"POLICY"#,
        r#"PREEMPT_IF_CPUS_EXCEEDED"#,
        r#"use POLICY : STARTD_PUBLISH_CpusUsage
CPU_EXCEEDED = (CpusUsage > Cpus + 0.8)
use POLICY : PREEMPT_IF(CPU_EXCEEDED)
"#,
    ),
    (
        r#"POLICY"#,
        r#"PREEMPT_IF_DISK_EXCEEDED"#,
        r#"DISK_EXCEEDED = (JobUniverse != 13 && DiskUsage =!= UNDEFINED && DiskUsage > Disk)
use POLICY : PREEMPT_IF(DISK_EXCEEDED)
"#,
    ),
    (
        r#"POLICY"#,
        r#"PREEMPT_IF_MEMORY_EXCEEDED"#,
        r#"MEMORY_EXCEEDED = (JobUniverse != 13 && MemoryUsage =!= UNDEFINED && MemoryUsage > Memory)
use POLICY : PREEMPT_IF(MEMORY_EXCEEDED)
"#,
    ),
    (
        r#"POLICY"#,
        r#"PREEMPT_IF_RUNTIME_EXCEEDS"#,
        r#"MAX_JOB_RUNTIME = $(1:24*3600)
PREEMPT_RUNTIME_EXCEEDS = (JobState == "Running") && ((time() - JobCurrentStartDate) > $(MAX_JOB_RUNTIME))
use policy : PREEMPT_IF( PREEMPT_RUNTIME_EXCEEDS )
"#,
    ),
    (
        r#"POLICY"#,
        r#"STARTD_PUBLISH_CpusUsage"#,
        r#"CpusUsage = ifthenelse(TotalLoadAvg > 0.0 && Activity!="Idle", CondorLoadAvg/TotalLoadAvg*MIN({TotalLoadAvg, $(DETECTED_CORES)}), 0)
STARTD_ATTRS = $(STARTD_ATTRS) CpusUsage
"#,
    ),
    (
        r#"POLICY"#,
        r#"UWCS_DESKTOP"#,
        r#"use FEATURE : UWCS_DESKTOP_POLICY_VALUES
WANT_SUSPEND=$(UWCS_WANT_SUSPEND)
WANT_VACATE=$(UWCS_WANT_VACATE)
SUSPEND=$(UWCS_SUSPEND)
CONTINUE=$(UWCS_CONTINUE)
PREEMPT=$(UWCS_PREEMPT)
START=$(UWCS_START)
KILL=$(UWCS_KILL)
PERIODIC_CHECKPOINT=$(UWCS_PERIODIC_CHECKPOINT)
PREEMPTION_REQUIREMENTS=$(UWCS_PREEMPTION_REQUIREMENTS)
PREEMPTION_RANK=$(UWCS_PREEMPTION_RANK)
NEGOTIATOR_PRE_JOB_RANK=$(UWCS_NEGOTIATOR_PRE_JOB_RANK)
NEGOTIATOR_POST_JOB_RANK=$(UWCS_NEGOTIATOR_POST_JOB_RANK)
MaxJobRetirementTime=$(UWCS_MaxJobRetirementTime)
CLAIM_WORKLIFE=$(UWCS_CLAIM_WORKLIFE)
SLOTS_CONNECTED_TO_KEYBOARD=1024*1024
IS_OWNER=(START =?= False)
"#,
    ),
    (
        r#"POLICY"#,
        r#"WANT_HOLD_IF"#,
        r#"use POLICY : PREEMPT_IF($(1))
if ! $(3?)
error : use POLICY : WANT_HOLD_IF requires 3 arguments: policy_variable, subcode, reason_text
endif
if defined WANT_HOLD
WANT_HOLD = (JobUniverse != 1 && $($(1))) || $(WANT_HOLD)
else
WANT_HOLD = (JobUniverse != 1 && $($(1)))
endif
WANT_HOLD_SUBCODE = ifThenElse($($(1)), $(2) , $(WANT_HOLD_SUBCODE:UNDEFINED))
WANT_HOLD_REASON = ifThenElse($($(1)), "$(3+)", $(WANT_HOLD_REASON:UNDEFINED))
"#,
    ),
    (
        r#"FEATURE"#,
        r#"ADSTASH"#,
        r#"ADSTASH_SCHEDD_HISTORY=True
DAEMON_LIST=$(DAEMON_LIST) ADSTASH
"#,
    ),
    (
        r#"FEATURE"#,
        r#"AssignAccountingGroup"#,
        r#"if ! $(1?)
error : use FEATURE : AssignAccountingGroup requires a map_file argument
endif
use FEATURE : ScheddUsermapFile(AssignAccountingGroup, $(1))
JOB_TRANSFORM_NAMES = $(JOB_TRANSFORM_NAMES) AssignAccountingGroup
JOB_TRANSFORM_AssignAccountingGroup @=end
COPY Owner = AcctGroupUser
COPY AcctGroup = RequestedAcctGroup
EVALSET AcctGroup = usermap("AssignAccountingGroup",AcctGroupUser,AcctGroup)
EVALSET AccountingGroup = join(".",AcctGroup,AcctGroupUser)
@end
IMMUTABLE_JOB_ATTRS = $(IMMUTABLE_JOB_ATTRS) AcctGroup AcctGroupUser AccountingGroup
if $(2:True)
SUBMIT_REQUIREMENT_NAMES = $(SUBMIT_REQUIREMENT_NAMES) CheckRequestedGroup
SUBMIT_REQUIREMENT_CheckRequestedGroup = RequestedAcctGroup is undefined || RequestedAcctGroup == AcctGroup
SUBMIT_REQUIREMENT_CheckRequestedGroup_REASON = strcat("Permission denied setting accounting_group to ", RequestedAcctGroup)
endif
SUBMIT_REQUIREMENT_NAMES = $(SUBMIT_REQUIREMENT_NAMES) AssignAccountingGroup
SUBMIT_REQUIREMENT_AssignAccountingGroup = AcctGroup isnt undefined && AccountingGroup isnt undefined
SUBMIT_REQUIREMENT_AssignAccountingGroup_REASON = strcat("Submit requirement AssignAccountingGroup not met - Could not map '", Owner, "' to an accounting group ", RequestedAcctGroup)
"#,
    ),
    (
        r#"FEATURE"#,
        r#"AssignProjectName"#,
        r#"if ! $(1?)
error : use FEATURE : AssignProjectName requires a map_name argument
endif
use FEATURE : SetJobAttrFromUsermap(ProjectName, Owner, $(1+))
"#,
    ),
    (
        r#"FEATURE"#,
        r#"ChildCollector"#,
        r#"COLLECTOR$(1)=$(COLLECTOR)
if $(2?)
COLLECTOR$(1)_ARGS= -p $(2)
else
COLLECTOR$(1)_ARGS= -sock collector$(1)
endif
COLLECTOR$(1).COLLECTOR_NAME=Collector$(1)
COLLECTOR$(1).CONDOR_VIEW_HOST=$(TOP_COLLECTOR_HOST)
COLLECTOR$(1).CCB_RECONNECT_FILE=$(SPOOL)/Collector$(1).ccb_reconnect
DAEMON_LIST=$(DAEMON_LIST) COLLECTOR$(1)
TOP_COLLECTOR_HOST=$(COLLECTOR_HOST)
"#,
    ),
    (
        r#"FEATURE"#,
        r#"CommonCloudAttributesAWS"#,
        r#"use FEATURE : StartdCronOneShot(cloud, $(LIBEXEC)/common-cloud-attributes-aws.py, $(0))
STARTD_CRON_cloud_PREFIX = Cloud
"#,
    ),
    (
        r#"FEATURE"#,
        r#"CommonCloudAttributesGoogle"#,
        r#"use FEATURE : StartdCronOneShot(cloud, $(LIBEXEC)/common-cloud-attributes-google.py, $(0))
STARTD_CRON_cloud_PREFIX = Cloud
"#,
    ),
    (
        r#"FEATURE"#,
        r#"ContinuousCronHook"#,
        r#"if ! $(3?)
error : use FEATURE : ContinuousCronHook requires at least 3 arguments: STARTD_CRON | SCHEDD_CRON, tag, hook_exe [,hook_args]
endif
$(1)_JOBLIST=$($(1)_JOBLIST) $(2)
$(1)_$(2)_MODE=WaitForExit
$(1)_$(2)_PERIOD=0
$(1)_$(2)_EXECUTABLE=$(3)
if $(4?)
$(1)_$(2)_ARGS=$(4)
endif
"#,
    ),
    (
        r#"FEATURE"#,
        r#"DefaultCheckpointDestination"#,
        r#"if ! defined DEFAULT_CHECKPOINT_DESTINATION
if defined DEFAULT_CHECKPOINT_DESTINATION_PREFIX
DEFAULT_CHECKPOINT_DESTINATION = "$(DEFAULT_CHECKPOINT_DESTINATION_PREFIX)/$(MY.Owner)"
else
warning: You must set DEFAULT_CHECKPOINT_DESTINATION_PREFIX or DEFAULT_CHECKPOINT_DESTINATION to use feature:DefaultCheckpointDestination.
endif
endif
if defined DEFAULT_CHECKPOINT_DESTINATION
EXTENDED_SUBMIT_COMMANDS @=end
checkpoint_storage = "'default' or 'spool' or a checkpoint_destination"
$(EXTENDED_SUBMIT_COMMANDS)
@end
JOB_TRANSFORM_CheckpointStorage @=end
REQUIREMENTS (MY.CheckpointDestination =?= undefined) && (MY.SuccessCheckpointExitCode =!= undefined)
ShouldSetCheckpointDestination = TRUE
SetCheckpointDestination = $(DEFAULT_CHECKPOINT_DESTINATION)
if defined MY.checkpoint_storage
EVALMACRO IsSpool (checkpoint_storage == "spool")
EVALMACRO IsDefault (checkpoint_storage == "default")
if $(IsSpool)
ShouldSetCheckpointDestination = FALSE
elif ! $(IsDefault)
SetCheckpointDestination = checkpoint_storage
endif
endif
if $(ShouldSetCheckpointDestination)
EVALSET CheckpointDestination $(SetCheckpointDestination)
endif
@end
JOB_TRANSFORM_NAMES = CheckpointStorage $(JOB_TRANSFORM_NAMES)
endif
"#,
    ),
    (
        r#"FEATURE"#,
        r#"GANGLIA"#,
        r#"DAEMON_LIST=$(DAEMON_LIST) GANGLIAD
"#,
    ),
    (
        r#"FEATURE"#,
        r#"GPUs"#,
        r#"MACHINE_RESOURCE_INVENTORY_GPUs=$(LIBEXEC)/condor_gpu_discovery $(1) -properties $(GPU_DISCOVERY_EXTRA)
ENVIRONMENT_FOR_AssignedGPUs=GPU_DEVICE_ORDINAL=/(CUDA|OCL)//  CUDA_VISIBLE_DEVICES=/CUDA//
ENVIRONMENT_VALUE_FOR_UnAssignedGPUs=10000
use feature : GPUsMonitor
"#,
    ),
    (
        r#"FEATURE"#,
        r#"GPUsMonitor"#,
        r#"use feature : Monitor( GPUs, WaitForExit, 300, $(GPU_MONITOR), SUM:GPUs, PEAK:GPUsMemory )
STARTD_CRON_GPUs_MONITOR_CONDITION = TotalGPUs > 0 && OpSys =!= "WINDOWS"
STARTD_JOB_ATTRS = $(STARTD_JOB_ATTRS) GPUsUsage GPUsMemoryUsage
"#,
    ),
    (
        r#"FEATURE"#,
        r#"HPC_ANNEX"#,
        r#"HPC_ANNEX_ENABLED = true
ispersonal = "127.0.0.1:0"=="$(COLLECTOR_HOST)"
if $INT(ispersonal)
COLLECTOR_HOST = $(FULL_HOSTNAME):$(COLLECTOR_PORT)
endif
ispersonal = "$(FULL_HOSTNAME):0"=="$(COLLECTOR_HOST)"
if $INT(ispersonal)
COLLECTOR_HOST = $(FULL_HOSTNAME):$(COLLECTOR_PORT)
endif
AP_COLLECTOR = $(COLLECTOR)
AP_COLLECTOR.COLLECTOR_LOG = $(LOG)/AP_Collector.log
AP_COLLECTOR.CCB_RECONNECT_FILE = $(SPOOL)/AP_Collector.ccb_reconnect
DAEMON_LIST = $(DAEMON_LIST) AP_COLLECTOR
AP_COLLECTOR_ARGS = -f -local-name AP_COLLECTOR -sock ap_collector
ANNEX_COLLECTOR = $(TCP_FORWARDING_HOST:$(FULL_HOSTNAME)):$(SHARED_PORT_PORT)?sock=ap_collector
AP_COLLECTOR.ALLOW_ADVERTISE_STARTD = $(ALLOW_ADVERTISE_STARTD) $(ALLOW_WRITE)
AP_COLLECTOR.ALLOW_ADVERTISE_MASTER = $(ALLOW_ADVERTISE_MASTER) $(ALLOW_WRITE)
if defined COLLECTOR_HOST
SCHEDD.COLLECTOR_HOST = $(COLLECTOR_HOST) $(ANNEX_COLLECTOR)
else
SCHEDD.COLLECTOR_HOST = $(ANNEX_COLLECTOR)
endif
ANNEX_TOKEN_KEY_NAME = $(SEC_TOKEN_AP_SIGNING_KEY_NAME)
ANNEX_TOKEN_DOMAIN = $(UID_DOMAIN)
JOB_TRANSFORM_NAMES = $(JOB_TRANSFORM_NAMES) AssignAnnex
JOB_TRANSFORM_AssignAnnex @=end
REQUIREMENTS TargetAnnexName =!= undefined
my_identity = "$(MY.Owner)@$(ANNEX_TOKEN_DOMAIN)"
addl_reqs = ifThenElse(TARGET.AuthenticatedIdentity is undefined, true, $(my_identity) == TARGET.AuthenticatedIdentity) && (MY.TargetAnnexName == TARGET.AnnexName)
if defined MY.JobMachineAttrs
SET JobMachineAttrs "$(MY.JobMachineAttrs),AnnexName"
else
SET JobMachineAttrs "AnnexName"
endif
if defined MY.Requirements
SET Requirements $(addl_reqs) && ($(MY.Requirements))
else
SET Requirements $(addl_reqs)
endif
@end
if $(ANNEX_JOBS_EXCLUSIVELY:FALSE)
JOB_TRANSFORM_NAMES = $(JOB_TRANSFORM_NAMES) AnnexJobsExclusively
JOB_TRANSFORM_AnnexJobsExclusively @=end
REQUIREMENTS TargetAnnexName =?= undefined
addl_reqs = ifThenElse(TARGET.AuthenticatedIdentity is undefined, true, regexp("^condor(_pool)?@.*$", TARGET.AuthenticatedIdentity))
if defined MY.Requirements
SET Requirements $(addl_reqs) && ($(MY.Requirements))
else
SET Requirements $(addl_reqs)
endif
@end
endif
"#,
    ),
    (
        r#"FEATURE"#,
        r#"JobsHaveInstanceIDs"#,
        r#"SYSTEM_JOB_MACHINE_ATTRS = $(SYSTEM_JOB_MACHINE_ATTRS) CloudInstanceID
"#,
    ),
    (
        r#"FEATURE"#,
        r#"KRB"#,
        r#"SEC_CREDENTIAL_DIRECTORY_KRB=/var/lib/condor/krb_credentials
DAEMON_LIST=$(DAEMON_LIST) CREDMON_KRB
SEC_CREDENTIAL_PRODUCER=$(LIBEXEC)/cred_producer_krb
SEC_CREDENTIAL_MONITOR_KRB_LOG=$(LOG)/CredMonKrbLog
AUTO_INCLUDE_CREDD_IN_DAEMON_LIST=True
USE_KEYRING_SESSIONS=True
"#,
    ),
    (
        r#"FEATURE"#,
        r#"LIBRARIAN"#,
        r#"DAEMON_LIST=$(DAEMON_LIST) LIBRARIAN
USING_LIBRARIAN=True
if $(1?)
LIBRARIAN_MAX_DATABASE_SIZE=$(1)
endif
if $(2?)
LIBRARIAN_DATABASE=$(2)
endif
"#,
    ),
    (
        r#"FEATURE"#,
        r#"METRICD"#,
        r#"DAEMON_LIST=$(DAEMON_LIST) METRICD
metricd_port_is_shared_port = $(PROMETHEUS_HTTP_PORT:0) == $(SHARED_PORT_PORT:0)
if $INT(metricd_port_is_shared_port)
METRICD_ARGS=-sock metricd
SHARED_PORT_HTTP_FORWARDING_ID=metricd
endif
"#,
    ),
    (
        r#"FEATURE"#,
        r#"Monitor"#,
        r#"if ! $(5?)
error: use feature : monitor requires five or more arguments
endif
STARTD_CRON_JOBLIST = $(STARTD_CRON_JOBLIST) $(1)_MONITOR
STARTD_CRON_$(1)_MONITOR_MODE = $(2)
STARTD_CRON_$(1)_MONITOR_PERIOD = $(3)
STARTD_CRON_$(1)_MONITOR_EXECUTABLE = $(4)
STARTD_CRON_$(1)_MONITOR_METRICS = $(5+)
"#,
    ),
    (
        r#"FEATURE"#,
        r#"OAUTH"#,
        r#"SEC_CREDENTIAL_DIRECTORY_OAUTH=/var/lib/condor/oauth_credentials
CREDMON_OAUTH_LOG=$(LOG)/CredMonOAuthLog
DAEMON_LIST=$(DAEMON_LIST) CREDMON_OAUTH
AUTO_INCLUDE_CREDD_IN_DAEMON_LIST=True
TRUST_CREDENTIAL_DIRECTORY=True
"#,
    ),
    (
        r#"FEATURE"#,
        r#"OneShotCronHook"#,
        r#"if ! $(3?)
error : use FEATURE : OneShotCronHook requires at least 3 arguments: STARTD_CRON | SCHEDD_CRON, tag, hook_exe [,hook_args]
endif
$(1)_JOBLIST=$($(1)_JOBLIST) $(2)
$(1)_$(2)_MODE=OneShot
$(1)_$(2)_KILL=true
$(1)_$(2)_RECONFIG_RERUN=true
$(1)_$(2)_EXECUTABLE=$(3)
if $(4?)
$(1)_$(2)_ARGS=$(4)
endif
"#,
    ),
    (
        r#"FEATURE"#,
        r#"PartitionableSlot"#,
        r#"NUM_SLOTS_TYPE_$(1:1)=1
SLOT_TYPE_$(1:1)_PARTITIONABLE=true
SLOT_TYPE_$(1:1)=$(2+:100%)
"#,
    ),
    (
        r#"FEATURE"#,
        r#"PelicanCache"#,
        r#"PELICANCACHE=/usr/bin/pelican
DAEMON_LIST=$(DAEMON_LIST) PELICANCACHE
PELICANCACHE_LOG=$(LOG)/PelicanCacheLog
PELICANCACHE_SIZE=$(1:256GB)
PELICANCACHE_RUNLOCATION=$(2:$(LOCAL_DIR)/localcache)
PELICANCACHE_FEDERATION=$(3:osg-htc.org)
PELICANCACHE_HIGHWATERMARKPERCENTAGE=95
PELICANCACHE_LOWWATERMARKPERCENTAGE=85
PELICANCACHE_ARGS=serve -d --module localcache -L $(PELICANCACHE_LOG) -f $(PELICANCACHE_FEDERATION)
PELICANCACHE_ENVIRONMENT @=end
PELICAN_SERVER_ENABLEUI=false
PELICAN_LOCALCACHE_SIZE=$(PELICANCACHE_SIZE)
PELICAN_LOCALCACHE_RUNLOCATION=$(PELICANCACHE_RUNLOCATION)
PELICAN_LOCALCACHE_HIGHWATERMARKPERCENTAGE=$(PELICANCACHE_HIGHWATERMARKPERCENTAGE)
PELICAN_LOCALCACHE_LOWWATERMARKPERCENTAGE=$(PELICANCACHE_LOWWATERMARKPERCENTAGE)
@end
STARTD_ENVIRONMENT=;NEAREST_CACHE=unix:/$(PELICANCACHE_RUNLOCATION)/cache.sock;$(STARTD_ENVIRONMENT)
"#,
    ),
    (
        r#"FEATURE"#,
        r#"PelicanRetryPolicy"#,
        r#"PelicanRetry_MaxRetries = 4
PelicanRetry_MinimumDelay = 300
PelicanRetry_RandomDelay = 300
pelican_error_subcode_retriable = 2816
pelican_error_subcode_stopped = 1280
PelicanRetryCondition = ((VacateReasonCode == 12 || VacateReasonCode == 13) && ((VacateReasonSubCode == $(pelican_error_subcode_retriable)) || (VacateReasonSubCode == $(pelican_error_subcode_stopped)))) ?: false
JOB_TRANSFORM_NAMES = $(JOB_TRANSFORM_NAMES) PelicanRetry
JOB_TRANSFORM_PelicanRetry @=jt
REQUIREMENTS (stringListIMember("pelican",WantTransferPluginMethods) || stringListIMember("osdf",WantTransferPluginMethods) || stringListIMember("stash",WantTransferPluginMethods)) && isUndefined(PelicanRetryEnabled)
EVALMACRO retry_delay = $(PelicanRetry_MinimumDelay) + random($(PelicanRetry_RandomDelay))
SET PelicanRetryEnabled true
SET PelicanRetryDelay $(retry_delay)
@jt
SYSTEM_ON_VACATE_COOL_DOWN = ((PelicanRetryEnabled?:false) && $(PelicanRetryCondition) && ((NumJobCoolDowns?:0) < $(PelicanRetry_MaxRetries)) ? PelicanRetryDelay : ($(SYSTEM_ON_VACATE_COOL_DOWN:0)))
"#,
    ),
    (
        r#"FEATURE"#,
        r#"PeriodicCronHook"#,
        r#"if ! $(4?)
error : use FEATURE : PeriodicCronHook requires at least 4 arguments: STARTD_CRON | SCHEDD_CRON, tag, period, hook_exe [,hook_args]
endif
$(1)_JOBLIST=$($(1)_JOBLIST) $(2)
$(1)_$(2)_MODE=Periodic
$(1)_$(2)_PERIOD=$(3)
$(1)_$(2)_EXECUTABLE=$(4)
if $(5?)
$(1)_$(2)_ARGS=$(5)
endif
"#,
    ),
    (
        r#"FEATURE"#,
        r#"POLICY_EXPR_FRAGMENTS"#,
        r#"PolicyExprFragments=1
KeyboardBusy=(KeyboardIdle < $(MINUTE))
ConsoleBusy=(ConsoleIdle  < $(MINUTE))
KeyboardNotBusy=($(KeyboardBusy) == False)
JustCPU=($(CPUBusy) && ($(KeyboardBusy) == False))
MachineBusy=($(CPUBusy) || $(KeyboardBusy))
NonCondorLoadAvg=(LoadAvg - CondorLoadAvg)
CpuIdle=($(NonCondorLoadAvg) <= $(BackgroundLoad))
CpuBusy=($(NonCondorLoadAvg) >= $(HighLoad))
ActivationTimer=ifThenElse(JobStart =!= UNDEFINED, (time() - JobStart), 0)
LastCkpt=(time() - LastPeriodicCheckpoint)
"#,
    ),
    (
        r#"FEATURE"#,
        r#"POLICY_HOURS_TO_START"#,
        r#"WorkdayBeginHour=$(1:8)
WorkdayEndHour=$(2:12+5)
WorkdayBeginMinuteStartJobs=($(WorkdayBeginHour))*60 - 29.5
WorkdayBeginMinuteStopJobs=($(WorkdayBeginHour))*60 - 9.5
WorkdayEndMinute=($(WorkdayEndHour))*60 + 0.5
RunJobsHours=ClockMin < $INT(WorkdayBeginMinuteStartJobs) || ClockMin > $INT(WorkdayEndMinute)
NoJobsHours=ClockMin > $INT(WorkdayBeginMinuteStopJobs) && ClockMin < $INT(WorkdayEndMinute)
if $(3?)
WorkweekFirstDay=$(3:1)
WorkweekLastDay=$(4:5)
IsWeekend=ClockDay < $INT(WorkweekFirstDay) || ClockDay > $INT(WorkWeekLastDay)
IsWorkday=ClockDay >= $INT(WorkweekFirstDay) && ClockDay <= $INT(WorkWeekLastDay)
RunJobsHours=$(IsWeekend) || $(RunJobsHours)
NoJobsHours=$(IsWorkday) && $(NoJobsHours)
endif
RunJobsHours=($(RunJobsHours))
NoJobsHours=($(NoJobsHours))
"#,
    ),
    (
        r#"FEATURE"#,
        r#"REMOTE_CONFIG"#,
        r#"ENABLE_PERSISTENT_CONFIG=True
PERSISTENT_CONFIG_DIR=$(SPOOL)
use FEATURE : REMOTE_RUNTIME_CONFIG($(0))
"#,
    ),
    (
        r#"FEATURE"#,
        r#"REMOTE_RUNTIME_CONFIG"#,
        r#"ENABLE_RUNTIME_CONFIG=True
ALLOW_CONFIG=$(ALLOW_ADMINISTRATOR)
if $(0#)
SETTABLE_ATTRS_CONFIG=$(SETTABLE_ATTRS_CONFIG) $(0)
endif
"#,
    ),
    (
        r#"FEATURE"#,
        r#"ScheddCronContinuous"#,
        r#"use FEATURE : ContinuousCronHook(SCHEDD_CRON, $(0))
"#,
    ),
    (
        r#"FEATURE"#,
        r#"ScheddCronOneShot"#,
        r#"use FEATURE : OneShotCronHook(SCHEDD_CRON, $(0))
"#,
    ),
    (
        r#"FEATURE"#,
        r#"ScheddCronPeriodic"#,
        r#"use FEATURE : PeriodicCronHook(SCHEDD_CRON, $(0))
"#,
    ),
    (
        r#"FEATURE"#,
        r#"ScheddUsermapFile"#,
        r#"if ! $(2?)
error : use FEATURE : ScheddUsermapFile requires 2 arguments: map_name, map_file
endif
SCHEDD_CLASSAD_USER_MAP_NAMES = $(SCHEDD_CLASSAD_USER_MAP_NAMES) $(1)
CLASSAD_USER_MAPFILE_$(1) = $(2)
"#,
    ),
    (
        r#"FEATURE"#,
        r#"SetJobAttrFromUsermap"#,
        r#"if ! $(3?)
error : use FEATURE : SetJobAttrFromUsermap requires at least 3 arguments: dest_attr, src_attr, map_name [,map_file]
endif
if $(4?)
use FEATURE : ScheddUsermapFile($(3), $(4))
endif
JOB_TRANSFORM_NAMES += Set$(1)
JOB_TRANSFORM_Set$(1) = EVALSET $(1) usermap("$(3)",$(2),$(1))
SUBMIT_REQUIREMENT_NAMES += Require$(1)
SUBMIT_REQUIREMENT_Require$(1) = $(1) isnt undefined
SUBMIT_REQUIREMENT_Require$(1)_REASON = strcat("Submit requirement Require$(1) not met - Could not map '", $(2)?:"undefined", "' to a $(1)")
"#,
    ),
    (
        r#"FEATURE"#,
        r#"StartdCronContinuous"#,
        r#"use FEATURE : ContinuousCronHook(STARTD_CRON, $(0))
"#,
    ),
    (
        r#"FEATURE"#,
        r#"StartdCronOneShot"#,
        r#"use FEATURE : OneShotCronHook(STARTD_CRON, $(0))
"#,
    ),
    (
        r#"FEATURE"#,
        r#"StartdCronPeriodic"#,
        r#"use FEATURE : PeriodicCronHook(STARTD_CRON, $(0))
"#,
    ),
    (
        r#"FEATURE"#,
        r#"StaticSlots"#,
        r#"NUM_SLOTS_TYPE_$(1:1)=$(2:$(NUM_CPUS))
SLOT_TYPE_$(1:1)_PARTITIONABLE=false
SLOT_TYPE_$(1:1)=$(3+:1/$(NUM_SLOTS_TYPE_$(1:1)))
SLOT_TYPE_$(1:1)=$(3+)
"#,
    ),
    (
        r#"FEATURE"#,
        r#"TESTINGMODE_POLICY_VALUES"#,
        r#"TESTINGMODE_WANT_SUSPEND=False
TESTINGMODE_WANT_VACATE=True
TESTINGMODE_START=True
TESTINGMODE_SUSPEND=False
TESTINGMODE_CONTINUE=True
TESTINGMODE_PREEMPT=False
TESTINGMODE_KILL=False
TESTINGMODE_PERIODIC_CHECKPOINT=False
TESTINGMODE_PREEMPTION_REQUIREMENTS=False
TESTINGMODE_PREEMPTION_RANK=0
TESTINGMODE_CLAIM_WORKLIFE=1200
"#,
    ),
    (
        r#"FEATURE"#,
        r#"UWCS_DESKTOP_POLICY_VALUES"#,
        r#"if ! defined PolicyExprFragments
use FEATURE : POLICY_EXPR_FRAGMENTS
endif
STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
CpuBusyTimer=IfThenElse(CpuBusyValue is 1, time() - CpuBusyTime, 0)
UWCS_WANT_SUSPEND=( $(SmallJob) || $(KeyboardNotBusy) || $(IsVanilla) ) && ( $(SUSPEND) )
UWCS_WANT_VACATE=( $(ActivationTimer) > 10 * $(MINUTE) || $(IsVanilla) )
UWCS_START=( (KeyboardIdle > $(StartIdleTime)) && ( $(CPUIdle) || (State != "Unclaimed" && State != "Owner")) )
UWCS_SUSPEND=( $(KeyboardBusy) || ( ($(CpuBusyTimer) > 2 * $(MINUTE)) && $(ActivationTimer) > 90 ) )
UWCS_CONTINUE=( $(CPUIdle) && ($(ActivityTimer) > 10) && (KeyboardIdle > $(ContinueIdleTime)) )
UWCS_PREEMPT=( ((Activity == "Suspended") && ($(ActivityTimer) > $(MaxSuspendTime))) || (SUSPEND && (WANT_SUSPEND == False)) )
UWCS_MaxJobRetirementTime=0
UWCS_KILL=false
UWCS_PERIODIC_CHECKPOINT=$(LastCkpt) > (3 * $(HOUR) + $RANDOM_INTEGER(-30,30,1) * $(MINUTE) )
UWCS_NEGOTIATOR_PRE_JOB_RANK=(10000000 * My.Rank) + (1000000 * (RemoteOwner =?= UNDEFINED)) - (100000 * Cpus) - Memory
UWCS_NEGOTIATOR_POST_JOB_RANK=(RemoteOwner =?= UNDEFINED) * (ifthenElse(isUndefined(KFlops), 1000, Kflops) - SlotID - 1.0e10*(Offline=?=True))
UWCS_PREEMPTION_REQUIREMENTS=((SubmitterGroup =?= RemoteGroup) && ($(StateTimer) > (1 * $(HOUR))) && (RemoteUserPrio > TARGET.SubmitterUserPrio * 1.2)) || (MY.NiceUser == True)
UWCS_PREEMPTION_RANK=(RemoteUserPrio * 1000000) - ifThenElse(isUndefined(TotalJobRuntime), 0, TotalJobRuntime)
"#,
    ),
    (
        r#"SECURITY"#,
        r#"FIPS"#,
        r#"FIPS = True
use security:strong
SEC_DEFAULT_CRYPTO_METHODS = AES,3DES
"#,
    ),
    (
        r#"SECURITY"#,
        r#"get_htcondor_idtokens"#,
        r#"use security:recommended
SEC_READ_AUTHENTICATION_METHODS = $(SEC_DEFAULT_AUTHENTICATION_METHODS),ANONYMOUS
SEC_CLIENT_AUTHENTICATION_METHODS = $(SEC_DEFAULT_AUTHENTICATION_METHODS),ANONYMOUS
TRUST_DOMAIN = $(CONDOR_HOST)
"#,
    ),
    (
        r#"SECURITY"#,
        r#"HOST_BASED"#,
        r#"ALLOW_ADMINISTRATOR=$(CONDOR_HOST)
ALLOW_READ=*
ALLOW_WRITE=$(FULL_HOSTNAME) $(IPV4_ADDRESS) $(IPV6_ADDRESS)
ALLOW_DAEMON=$(FULL_HOSTNAME) $(IPV4_ADDRESS) $(IPV6_ADDRESS)
ALLOW_NEGOTIATOR=$(CONDOR_HOST)
ALLOW_NEGOTIATOR_SCHEDD=$(ALLOW_NEGOTIATOR) $(FLOCK_NEGOTIATOR_HOSTS)
ALLOW_WRITE_COLLECTOR=$(ALLOW_WRITE) $(FLOCK_FROM)
ALLOW_WRITE_STARTD=$(ALLOW_WRITE) $(FLOCK_FROM)
ALLOW_READ_COLLECTOR=$(ALLOW_READ) $(FLOCK_FROM)
ALLOW_READ_STARTD=$(ALLOW_READ) $(FLOCK_FROM)
LEGACY_ALLOW_SEMANTICS = TRUE
"#,
    ),
    (
        r#"SECURITY"#,
        r#"recommended"#,
        r#"use security:recommended_v24_0($(1+))
"#,
    ),
    (
        r#"SECURITY"#,
        r#"recommended_v24_0"#,
        r#"SECURITY_MODEL = 24.0
use security:strong
SEC_READ_AUTHENTICATION = OPTIONAL
SEC_CLIENT_AUTHENTICATION = OPTIONAL
ALLOW_ADMINISTRATOR = $(1:condor)@* condor@password $(2:root@*) $(3+)
ALLOW_DAEMON = $(1:condor)@*  condor@password
ALLOW_NEGOTIATOR = $(1:condor)@* condor@password
ALLOW_WRITE = *
ALLOW_READ = *
"#,
    ),
    (
        r#"SECURITY"#,
        r#"recommended_v9_0"#,
        r#"SECURITY_MODEL = 9.0
use security:strong
SEC_READ_AUTHENTICATION = OPTIONAL
SEC_READ_ENCRYPTION = OPTIONAL
SEC_READ_INTEGRITY = OPTIONAL
ALLOW_ADMINISTRATOR = $(1:condor)@* condor_pool@* $(2:root@*) $(3+)
ALLOW_DAEMON = $(1:condor)@*  condor_pool@*
ALLOW_NEGOTIATOR = $(1:condor)@* condor_pool@*
ALLOW_WRITE = *
ALLOW_READ = *
"#,
    ),
    (
        r#"SECURITY"#,
        r#"STRONG"#,
        r#"SEC_DEFAULT_ENCRYPTION=required
SEC_DEFAULT_INTEGRITY=required
SEC_DEFAULT_AUTHENTICATION=required
"#,
    ),
    (
        r#"SECURITY"#,
        r#"USER_BASED"#,
        r#"if $(CondorIsAdmin)
authuser=condor
else
authuser=$(USERNAME)
endif
use security:recommended($(authuser))
if ! $(CondorIsAdmin)
ALLOW_WRITE = $(authuser)@$(UID_DOMAIN)
endif
"#,
    ),
    (
        r#"SECURITY"#,
        r#"WITH_AUTHENTICATION"#,
        r#"SEC_DEFAULT_AUTHENTICATION=required
SEC_DEFAULT_INTEGRITY=required
"#,
    ),
    (
        r#"EXPERIMENTAL"#,
        r#"CollectorNode"#,
        r#"COLLECTOR$(1)=$(COLLECTOR)
if $(2?)
COLLECTOR$(1)_ARGS=-f -local-name COLLECTOR$(1) -p $(2)
else
COLLECTOR$(1)_ARGS=-f -local-name COLLECTOR$(1) -sock collector$(1)
endif
COLLECTOR$(1).COLLECTOR_LOG=$(LOG)/Collector$(1)Log
COLLECTOR$(1).CCB_RECONNECT_FILE=$(SPOOL)/Collector$(1).ccb_reconnect
DAEMON_LIST=$(DAEMON_LIST) COLLECTOR$(1)
"#,
    ),
    (
        r#"EXPERIMENTAL"#,
        r#"HAD"#,
        r#"DAEMON_LIST = $(DAEMON_LIST) HAD REPLICATION
HAD_USE_REPLICATION = TRUE
MASTER_HAD_BACKOFF_CONSTANT = 360
"#,
    ),
    (
        r#"EXPERIMENTAL"#,
        r#"HADFixedPort"#,
        r#"HAD_ARGS = -p $(3)
REPLICATION_ARGS = -p $(4)
use EXPERIMENTAL : HADReplication( $(1), $(2), $(3), $(4) )
"#,
    ),
    (
        r#"EXPERIMENTAL"#,
        r#"HADReplication"#,
        r#"HAD_LIST = $(HAD_LIST) $(2):$(3)
REPLICATION_LIST = $(REPLICATION_LIST) $(2):$(4)
HAD_CONTROLLEE = $(1)
MASTER_$(1)_CONTROLLER = HAD
"#,
    ),
    (
        r#"EXPERIMENTAL"#,
        r#"HADSharedPort"#,
        r#"use EXPERIMENTAL : HADReplication( $(1), $(2), $(SHARED_PORT_PORT), $(SHARED_PORT_PORT) )
"#,
    ),
    (
        r#"UPGRADE"#,
        r#"DISCARD"#,
        r#"LeaseManager
LeaseManger_ADDRESS_FILE
LeaseManager_LOG
LeaseManager_DEBUG
MAX_LeaseManager_LOG
LeaseManager.GETADS_INTERVAL
LeaseManager.PRUNE_INTERVAL
LeaseManager.DEBUG_ADS
LeaseManager.CLASSAD_LOG
STORK
STORK_ADDRESS_FILE
STORK_LOG_BASE
STORK_LOG
STORK_DEBUG
MAX_STORK_LOG
STORK_PORT
STORK_ARGS
DEFRAG_STATE_FILE
"#,
    ),
    (
        r#"UPGRADE"#,
        r#"DISCARD_VMWARE"#,
        r#"
"#,
    ),
    (
        r#"UPGRADE"#,
        r#"DISCARDIF"#,
        r#"RESERVED_DISK=5
ALL_DEBUG=
MAX_COLLECTOR_LOG=1000000
MAX_KBDD_LOG=1000000
MAX_MASTER_LOG=1000000
MAX_NEGOTIATOR_LOG=1000000
MAX_NEGOTIATOR_MATCH_LOG=1000000
MAX_SCHEDD_LOG=1000000
MAX_SHADOW_LOG=1000000
MAX_SHARED_PORT_LOG=1000000
MAX_STARTD_LOG=1000000
MAX_STARTER_LOG=1000000
MAX_JOB_ROUTER_LOG=1000000
MAX_REPLICATION_LOG=1000000
MAX_ROOSTER_LOG=1000000
MAX_HAD_LOG=1000000
MAX_TRANSFERER_LOG=1000000
MAX_GRIDMANAGER_LOG=1000000
MAX_C_GAHP_LOG=1000000
MAX_VM_GAHP_LOG=1000000
MAX_CREDD_LOG=4000000
VALID_SPOOL_FILES=job_queue.log, job_queue.log.tmp, history, Accountant.log, Accountantnew.log, local_univ_execute, .pgpass, .schedd_address, .schedd_classad
VALID_SPOOL_FILES=job_queue.log, job_queue.log.tmp, history, Accountant.log, Accountantnew.log, local_univ_execute, .pgpass, .schedd_address, .schedd_classad, OfflineLog
"#,
    ),
    (
        r#"UPGRADE"#,
        r#"DISCARDIFX"#,
        r#"QUEUE_SUPER_USERS=root, condor
"#,
    ),
    (
        r#"UPGRADE"#,
        r#"DISCARDX"#,
        r#"
"#,
    ),
];
