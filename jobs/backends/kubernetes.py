"""Kubernetes with the Kubeflow training operator: one resource pool per namespace.

A job becomes a PyTorchJob, TFJob or MPIJob, a custom job a JobSet (jobs.kubernetes.manifests),
and its secret envs a Secret created just before it. Both are named from the console job's id, so creating is
idempotent: a create that got no answer, or a worker that died mid-create, is simply tried
again, and the API server's 409 AlreadyExists on an object labelled with this job's id means
"already created" (one labelled otherwise is someone else's: the submit fails, nothing of
theirs is touched).

Following a job (`sync`): the custom resource's status.conditions give the console status
(Created -> Queued, Running/Restarting -> Running, Succeeded, Failed, Failed for exceeding
activeDeadlineSeconds -> Timed out, Suspended (Kueue holding it) -> Queued; a JobSet's, see
status_from_jobset); its pods, found by the console's job-id label (the pod template carries
it) and told apart by the operator's or the JobSet's labels, the JobReplica rows; the Events of the resource and of its
pods the JobEvent rows ("K8s:<reason>"). All of it is read by the job's row (external_id,
framework, pool), not its spec, so a job whose stored spec no longer reads is followed all the
same (job_spec_or_noted says so once).

Stopping deletes the custom resource (propagationPolicy=Background: the garbage collector
deletes its pods) and the Secret; the job stays Stopping while the resource and its pods are
being deleted, whatever conditions the operator writes meanwhile (a master killed by the stop
reads Failed), and is Stopped once the API server no longer has them, or STOP_PODS_WAIT after
the stop with pods still terminating, naming them. Deleting, rather than runPolicy.suspend, because a console
Stopped job never runs again, and suspend is not honoured by every operator version.

Inventory: the configured namespaces, queues and volumes, and for each configured card type
the idle count over schedulable nodes carrying the card's node labels: allocatable minus the
requests of pods not yet ended, bounded in each namespace by its ResourceQuotas (hard - used
of `requests.<resource>`). One background refresh reads them (one list of nodes, one of pods,
one of each namespace's resourcequotas) at most once per KUBERNETES_CACHE_SECONDS however
often the wizard polls; pages are served the last figures. A console that may not list a
namespace's resourcequotas shows the cluster's figures there, and says so.

Usage: while a job runs, each sync also samples what its running pods use from the Metrics
API (metrics-server: one list of PodMetrics per namespace, for all the jobs in it, at most
once per KUBERNETES_METRICS_SECONDS), CPU and memory summed over a pod's containers, into a
file per replica under the console's var dir (`usage_file`), written as the local runner's
shim writes a replica's (jobs.shim.UsageLog), so the job page and the API's job metrics read
them alike (jobs.monitoring). A PodMetrics is written once: only one newer than the file's
last sample is. No /tmp figure: the Metrics API has none. A cluster without metrics-server
(404) or a console RBAC does not let read it (403) is said once in the log; its jobs show
no usage. One that does not answer ends the job's sync, as any read of it does (`_sync_remote`).

Kueue's ClusterQueue quotas do not bound the idle count: a pool's queues may feed different
ClusterQueues, a ClusterQueue may borrow beyond its nominal quota from its cohort, and Kueue
holds a job it cannot admit yet (Queued) instead of refusing it. A ResourceQuota is a hard
limit the API server enforces on every pod, so a standalone job over it would never start.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from jobs import spec as spec_module
from jobs.alerts import alert_destination_refusals, job_alert, named_for_alert, site_address
from jobs.kubernetes import manifests as M
from jobs.kubernetes.client import (
    KubeClient,
    KubeError,
    KubeTimeout,
    KubeUnavailable,
    kube_time,
)
from jobs.kubernetes.config import Config, ConfigError, namespace_of, pool_id
from jobs.logs import (
    CONSOLE_BANNER,
    CONSOLE_MARK,
    DOWNLOAD_SPOOL_BYTES,
    MAX_TAIL_BYTES,
    spooled_lines,
    tail_lines,
    unmarked,
)
from jobs.models import (
    FINAL_STATUSES,
    EventType,
    Job,
    JobEvent,
    JobReplica,
    JobStatus,
    ReplicaStatus,
)
from jobs.runtime_env import (
    DEFAULT_TF_PORT,
    ReplicaRef,
    replica_environment,
    shown_group_task,
    with_group_task,
)
from jobs.services import job_event, job_spec_or_noted, recorded
from jobs.shim import UsageLog, read_usage
from jobs.texts import Term, joined, list_words, source_of

from .base import (
    AcceleratorStock,
    BackendError,
    NoLog,
    Pool,
    RequestPreview,
    Volume,
    download_deadline,
    got_no_answer,
)
from .remote import (
    STUCK_SUBMITTING,
    UNANSWERED_SYNCS_BEFORE_STATUS,
    BackgroundInventory,
    RemoteBackend,
    logged_error,
    recorded_error,
    scrub,
    unanswered_creates,
)

logger = logging.getLogger("jobs.kubernetes")

NAME = "kubernetes"
EVENT_PREFIX = "K8s:"
# A look the API server refused for what a create that got no clear answer may have made:
# said as the job waits for the next (the job list shows it: views.LISTED_REASONS), as the
# job is given up after an hour of them (Submit again sends the create, whose 409 by name
# adopts what the first made), and as a stopped job is given up, ended Stopped.
QUEUED_LOOK_REFUSED = gettext_noop(
    "Kubernetes refused the look for the job its creates may have made: %(error)s. The job "
    "stays queued and is looked for again at %(time)s."
)
LOOKS_REFUSED_GIVEN_UP = gettext_noop(
    "Kubernetes refused the looks for the job its creates may have made for an hour (the "
    "last: %(error)s), so the console stopped looking. The API server may have made it: look "
    "in namespace %(namespace)s for the %(kind)s named %(name)s. Submit again takes it as this "
    "job if it is there; to drop it instead, delete it there."
)
STOP_LOOKS_REFUSED_GIVEN_UP = gettext_noop(
    "Kubernetes refused the looks for the job its creates may have made for an hour (the "
    "last: %(error)s), so the console stopped looking and ended the job Stopped. The API "
    "server may have made it: look in namespace %(namespace)s for a resource of kind %(kind)s "
    "labelled %(label)s, and delete it there if it runs."
)
# A Queued job whose pods its operator cannot create: the API server refused them (over the
# namespace's ResourceQuota, Pod Security Admission), and the job object alone exists. The
# operators say so only in a Warning event, never in a condition, and try again (their work
# queues' rate-limited retries) until the cause goes, so the job sat Queued with no reason
# shown (fix98). The operator's own message is quoted as it is.
PODS_NOT_CREATED = gettext_noop(
    "Kubernetes cannot create the job's pods (%(object)s, %(reason)s): “%(message)s”. The job "
    "stays queued while Kubernetes tries again; stop it if the cause will not go away."
)
# What each says of a pod it could not create (checked in their sources):
# - training-operator (PyTorchJob, TFJob), pkg/controller.v1/control/pod_control.go
#   createPods: Warning FailedCreatePod on the job, "Error creating: <the API server's error>";
# - the Job controller (an MPIJob's launcher Job, a JobSet's or TrainJob's Jobs),
#   kubernetes pkg/controller/controller_utils.go: Warning FailedCreate on the Job, worded so;
# - mpi-operator v2, pkg/controller/mpi_job_controller.go: Warning MPIJobFailed on the MPIJob,
#   "worker pod created failed: ..." (getOrCreateWorker; the launcher Job is not made until
#   the workers are) or "launcher pod created failed: ..." (the launcher Job's create);
# - the JobSet controller (a custom job's JobSet, the one Trainer runs a TrainJob as), one
#   step earlier: a Job it could not create (over a `count/jobs.batch` ResourceQuota, refused
#   by a policy webhook) has no pods at all. kubernetes-sigs/jobset
#   pkg/controllers/jobset_controller.go createJobs: Warning JobCreationFailed on the JobSet,
#   its message the Jobs' errors joined one a line, each `job "<name>" creation failed with
#   error: <the API server's error>` (pkg/constants/constants.go: "The event uses the
#   error(s) as the message"); no condition, and its reconcile is tried again.
CREATE_REFUSED_REASONS = frozenset({"FailedCreatePod", "FailedCreate", "JobCreationFailed"})
MPI_CREATE_FAILED = ("worker pod created failed:", "launcher pod created failed:")
# Creates that got no clear answer (a timeout, a 5xx) before the job is Submit failed.
MAX_UNANSWERED_CREATES = 4
# The kubelet's words for the log of a container that has not started (its pod Pending,
# its image being pulled): `container "x" in pod "y" is waiting to start: ContainerCreating`.
WAITING_TO_START = "is waiting to start"
# The API server's words for the log of a pod the scheduler has not placed yet (no
# spec.nodeName, so no kubelet to ask): `pod x does not have a host assigned`, a 400.
NO_HOST_ASSIGNED = "does not have a host assigned"
UNANSWERED_EVENT = "SubmitTimedOut"
# Events are read for at most this many pods per sync (one request each).
MAX_EVENT_PODS = 32
SUBMIT_PAUSE = (5.0, 300.0)  # seconds: first pause after an unreachable API server, maximum
STOP_REQUESTED = gettext_noop("Stop requested.")
# How long a stopped job whose resource is gone stays Stopping while its pods terminate. Stop
# deletes the resource in the background (qa96): a Foreground delete waits for every pod,
# which the operators make with blockOwnerDeletion, and a pod stuck Terminating on a node
# that is not ready held the job Stopping for good. Past this the job is Stopped, naming the
# pods still terminating.
STOP_PODS_WAIT = timedelta(minutes=5)
PRIVILEGED_REFUSED = gettext_noop(
    "Privileged containers are not allowed in this pool: the operator allows them per "
    "namespace (KUBERNETES_PRIVILEGED_NAMESPACES). Turn privileged mode off, or choose a pool "
    "that allows it."
)
# The API server's words for a path it serves no resource at (a CRD not installed).
NO_SUCH_API = "could not find the requested resource"
# metrics-server's pod usage (PodMetricsList), and where the samples of it are kept.
POD_METRICS_PATH = "/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods"
USAGE_DIR = "kubernetes-usage"

# What still applies to a job whose stored spec no longer reads: what the cluster enforces from
# the manifest it was sent (activeDeadlineSeconds, a JobSet's maxRestarts,
# ttlSecondsAfterFinished); not the console's restarts, which create it again from the spec.
FOLLOWED_WITHOUT_SPEC = gettext_noop(
    "Its stored spec can no longer be read (fields: %(fields)s). It is followed until it ends "
    "without it: the time limit Kubernetes was sent still applies (and a custom job's "
    "restarts), the console's restarts and the spec's alerts do not."
)

# The statuses a sync moves a job to that alert, and the alert item each sends (a time-out is
# a failure, as on the local pool); a fault-tolerance restart alerts jobFT (_begin_restart).
ALERTED_MOVES = {
    JobStatus.RUNNING: "jobRunning",
    JobStatus.SUCCEEDED: "jobSucceed",
    JobStatus.FAILED: "jobFailed",
    JobStatus.TIMED_OUT: "jobFailed",
}


def alert_message(job: Job, item: str, reason: str) -> str:
    """An alert's text, worded as the local pool's (jobs.runner: the same msgids): a failure
    says why, after the job's name."""
    if item == "jobRunning":
        return recorded(gettext_noop("%(name)s is running."), name=job.task_name)
    if item == "jobSucceed":
        return recorded(gettext_noop("%(name)s succeeded."), name=job.task_name)
    return named_for_alert(job=job, message=reason)


# A fault-tolerance restart, worded as the local pool's (jobs.runner: one msgid each).
RESTARTING = gettext_noop("Restarting the whole job (%(n)s of %(limit)s): %(why)s")
RESTARTS_USED_UP = gettext_noop(
    "%(failure)s (fault-tolerance restarts used up: %(limit)s of %(limit)s)"
)
RESTART_PODS_LEFT = gettext_noop(
    "The job failed and was to be restarted, but after %(minutes)d minutes these pods of its "
    "last run are still terminating: %(pods)s. The new pods take their names, so the job was "
    "not created again. Their node may not be ready."
)
RESTART_RESOURCE_LEFT = gettext_noop(
    "The job failed and was to be restarted, but after %(minutes)d minutes the %(kind)s "
    "%(name)s of its last run is still there (its delete refused, or held by a finalizer), "
    "so the job was not created again."
)
RESTART_WITHOUT_SPEC = gettext_noop(
    "The job failed and was to be restarted, but its stored spec can no longer be read, so it "
    "could not be created again."
)
RESTART_REFUSED = gettext_noop(
    "The job failed and was to be restarted, but Kubernetes refused to create it again: %(error)s"
)

PHASES = {
    "pending": ReplicaStatus.PENDING,
    "running": ReplicaStatus.RUNNING,
    "succeeded": ReplicaStatus.SUCCEEDED,
    "failed": ReplicaStatus.FAILED,
}


def _shown(what: str, exc: KubeError, secrets: list[str]) -> BackendError:
    """A Kubernetes failure as the person who asked is told it (`what`: a gettext_noop-marked
    message, said in the language active now), and in English for the log (qa112)."""
    with translation.override("en"):
        logged = _(what) % {"error": logged_error(exc)}
    return BackendError(
        scrub(_(what) % {"error": exc}, secrets), code=exc.reason, logged=scrub(logged, secrets)
    )


def _sync_error(exc: KubeError, secrets: list[str]) -> BackendError:
    """A read of a job's sync that failed, as the worker is told it (secrets masked)."""
    return BackendError(
        scrub(str(exc), secrets), code=exc.reason, logged=scrub(logged_error(exc), secrets)
    )


def _unreachable_from_a_cluster(host: str) -> bool:
    """Whether a SITE_URL host names this machine only, wherever it is opened: localhost, a
    loopback address (127.0.0.0/8, ::1, ::ffff:127.0.0.1) or an unspecified one (0.0.0.0,
    ::). review56: only "127." and "::1" were told, so http://[::ffff:127.0.0.1]/ and
    http://0.0.0.0/ were put on every object as the job's page."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False  # a host name: the cluster may resolve it
    mapped = getattr(address, "ipv4_mapped", None)
    return any(a.is_loopback or a.is_unspecified for a in (address, mapped) if a is not None)


def _refused(exc: KubeError) -> bool:
    """The API server answered no (a 4xx other than 429 Too Many Requests, and 401: the
    console's token refused, KubeUnavailable, whatever was asked)."""
    return 400 <= exc.status < 500 and exc.status not in (401, 429)


def _not_found(exc: KubeError) -> bool:
    return exc.status == 404


# etcd takes an object of at most 1.5 MiB (its --max-request-bytes default), and every role's
# pod template in the job's resource carries the command and the plain variables (a secret
# one is a reference to the job's Secret): the spec's 1 MiB of both (jobs.spec) is one role's,
# and a job of several roles could be refused at its create ("request is too large"). 1 MiB
# of them across the roles leaves the rest of the resource room.
MAX_POD_TEMPLATES_BYTES = 1024 * 1024


def pod_templates_bytes(spec: spec_module.JobSpec) -> int:
    """What the job's command and plain variables take in its resource's pod templates, one
    per role, in UTF-8 bytes (JSON adds a little: quotes, names, escapes)."""
    one = len(spec.command.encode(errors="surrogatepass")) + sum(
        len(f"{env.name}{env.value}".encode(errors="surrogatepass"))
        for env in spec.envs
        if not env.secret
    )
    return one * len(spec.roles)


def _true_conditions(resource: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A resource's status (a dict, whatever the server sent) and its conditions whose status
    is "True", by type."""
    status = resource.get("status") if isinstance(resource.get("status"), dict) else {}
    conditions = status.get("conditions") if isinstance(status.get("conditions"), list) else []
    true = {
        c.get("type"): c for c in conditions if isinstance(c, dict) and c.get("status") == "True"
    }
    return status, true


# What training-operator's and the Job controller's messages say of a job failed for being
# active longer than its activeDeadlineSeconds (the operators write it in English alone).
PAST_DEADLINE = "active longer than specified deadline"


def status_from_conditions(resource: dict[str, Any]) -> tuple[str, str, str]:
    """(console status, condition type, its message) of a training-operator resource."""
    _, true = _true_conditions(resource)

    def said(kind: str) -> str:
        return str(true[kind].get("message") or "")

    if "Succeeded" in true:
        return JobStatus.SUCCEEDED, "Succeeded", said("Succeeded")
    if "Failed" in true:
        reason = str(true["Failed"].get("reason") or "")
        # mpi-operator copies its launcher Job's reason, DeadlineExceeded; training-operator
        # (pkg/controller.v1/common/job.go, ReconcileJobs) fails a PyTorchJob/TFJob past
        # activeDeadlineSeconds with <Kind>Failed, as any failure, saying it only in its
        # message (qa96: shown Failed until then).
        if "DeadlineExceeded" in reason or PAST_DEADLINE in said("Failed"):
            return JobStatus.TIMED_OUT, "Failed", said("Failed")
        return JobStatus.FAILED, "Failed", said("Failed")
    if "Suspended" in true:
        return JobStatus.QUEUED, "Suspended", said("Suspended")
    for kind in ("Restarting", "Running"):
        if kind in true:
            return JobStatus.RUNNING, kind, said(kind)
    return JobStatus.QUEUED, "Created" if "Created" in true else "", ""


def status_from_jobset(
    resource: dict[str, Any], pods: list[dict[str, Any]] | None = None
) -> tuple[str, str, str]:
    """(console status, condition, its message) of a JobSet. Its conditions are Completed,
    Failed and Suspended only: it is Running once an instance has started (one of `pods`,
    its current attempt's, Running or ended; a Job of it ready, succeeded or failed; or a
    restart, as a training-operator job's Restarting), else Queued (Kueue not admitting it
    yet, pods pending). Not on replicatedJobsStatus' `active`: a Job counts its Pending pods
    as active, so pods that cannot be scheduled or whose image cannot be pulled would read
    Running (until qa55 they did).
    Failed by the FailJobSet rule the console sends for DeadlineExceeded Jobs (or, on JobSet
    versions with spec.activeDeadlineSeconds, reason DeadlineExceeded) is Timed out."""
    status, true = _true_conditions(resource)

    def said(kind: str) -> str:
        return str(true[kind].get("message") or "")

    if "Completed" in true:
        return JobStatus.SUCCEEDED, "Completed", said("Completed")
    if "Failed" in true:
        reason = str(true["Failed"].get("reason") or "")
        if reason in ("FailJobSetFailurePolicyAction", "DeadlineExceeded"):
            return JobStatus.TIMED_OUT, "Failed", said("Failed")
        return JobStatus.FAILED, "Failed", said("Failed")
    if "Suspended" in true:
        return JobStatus.QUEUED, "Suspended", said("Suspended")
    if _a_node_started(pods, status.get("replicatedJobsStatus")):
        return JobStatus.RUNNING, "Running", ""
    if _count(status.get("restarts")):
        return JobStatus.RUNNING, "Running", ""
    return JobStatus.QUEUED, "", ""


def status_from_trainjob(
    resource: dict[str, Any], pods: list[dict[str, Any]] | None = None
) -> tuple[str, str, str]:
    """(console status, condition, its message) of a Kubeflow Trainer TrainJob. Its
    conditions (trainjob_types.go) are Created (older releases), Suspended (Kueue holding
    it: Queued), Complete and Failed (reason DeadlineExceeded past activeDeadlineSeconds:
    Timed out); it has no Running one, so, as a JobSet, it is Running once a node has
    started (one of `pods` Running or ended, or a Job of status.jobsStatus ready, succeeded
    or failed), else Queued."""
    status, true = _true_conditions(resource)

    def said(kind: str) -> str:
        return str(true[kind].get("message") or "")

    if "Complete" in true:
        return JobStatus.SUCCEEDED, "Complete", said("Complete")
    if "Failed" in true:
        if str(true["Failed"].get("reason") or "") == "DeadlineExceeded":
            return JobStatus.TIMED_OUT, "Failed", said("Failed")
        return JobStatus.FAILED, "Failed", said("Failed")
    if "Suspended" in true:
        return JobStatus.QUEUED, "Suspended", said("Suspended")
    if _a_node_started(pods, status.get("jobsStatus")):
        return JobStatus.RUNNING, "Running", ""
    return JobStatus.QUEUED, "Created" if "Created" in true else "", ""


def _a_node_started(pods: list[dict[str, Any]] | None, jobs_status: Any) -> bool:
    """Whether a JobSet (a custom job's, or the one a TrainJob runs as) has started: one of
    its `pods` Running or ended, or a Job of its status list (a JobSet's replicatedJobsStatus,
    a TrainJob's jobsStatus) with a pod ready, succeeded or failed."""
    started = {"running", "succeeded", "failed"}
    if any(
        str((pod.get("status") or {}).get("phase") or "").lower() in started for pod in pods or []
    ):
        return True
    return any(
        isinstance(one, dict) and any(_count(one.get(k)) for k in ("ready", "succeeded", "failed"))
        for one in (jobs_status if isinstance(jobs_status, list) else [])
    )


def _event_time(event: dict[str, Any]) -> datetime | None:
    return (
        kube_time(event.get("lastTimestamp"))
        or kube_time(event.get("eventTime"))
        or kube_time(event.get("firstTimestamp"))
    )


def pods_not_created(
    events: list[tuple[str, str, dict[str, Any]]], *, since: datetime | None = None
) -> dict[str, str] | None:
    """The newest of `events` ((kind, name, event) of the job's objects) in which its
    operator, its JobSet or a Job of it, says it could not create a pod or a Job that
    makes them (CREATE_REFUSED_REASONS, MPI_CREATE_FAILED): {object, reason, message}, or None.
    `since`: a restart's resource's creation; the refusals of its failed run, which had the
    same name, stay among the events for an hour and are not its own."""
    refusals = [
        (kind, name, event)
        for kind, name, event in events
        if (
            event.get("reason") in CREATE_REFUSED_REASONS
            or (
                event.get("reason") == "MPIJobFailed"
                and str(event.get("message") or "").startswith(MPI_CREATE_FAILED)
            )
        )
        and (since is None or (_event_time(event) or since) >= since)
    ]
    if not refusals:
        return None
    oldest = datetime.min.replace(tzinfo=UTC)
    kind, name, event = max(refusals, key=lambda found: _event_time(found[2]) or oldest)
    return {
        "object": f"{kind} {name}",
        "reason": str(event.get("reason")),
        "message": str(event.get("message") or "").strip(),
    }


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _attempt_of(pod: dict[str, Any]) -> int:
    """The JobSet restart a pod is of (its restart-attempt label; 0 without one)."""
    value = str(((pod.get("metadata") or {}).get("labels") or {}).get(M.RESTART_ATTEMPT_LABEL, ""))
    return int(value) if value.isdigit() else 0


def current_attempt_pods(pods: list[dict[str, Any]], attempt: int) -> list[dict[str, Any]]:
    """A JobSet's pods of its restart `attempt`: a restarted JobSet's earlier pods may still
    be going (a pod without the label is kept)."""
    return [
        p
        for p in pods
        if M.RESTART_ATTEMPT_LABEL not in ((p.get("metadata") or {}).get("labels") or {})
        or _attempt_of(p) == attempt
    ]


def _roles(spec: spec_module.JobSpec | None, resource: dict[str, Any]) -> set[str]:
    """The roles a custom job's pods may be of: the spec's, or, once it no longer reads, the
    names of the JobSet's replicatedJobs as the cluster has them (the console named them)."""
    if spec is not None:
        return {role.name for role in spec.roles}
    body = resource.get("spec") if isinstance(resource.get("spec"), dict) else {}
    replicated = body.get("replicatedJobs")
    return {
        str(one["name"])
        for one in (replicated if isinstance(replicated, list) else [])
        if isinstance(one, dict) and one.get("name")
    }


def tolerates(toleration: dict[str, str], taint: dict[str, Any]) -> bool:
    """Kubernetes' rule: the effect matches (none: every effect), and the key with Exists,
    or key and value with Equal (an Exists without a key tolerates every taint)."""
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration["key"] == taint.get("key")
    return toleration.get("key") == taint.get("key") and toleration.get("value", "") == taint.get(
        "value", ""
    )


def schedulable(node: dict[str, Any], tolerations: tuple[dict[str, str], ...]) -> bool:
    """Whether the console's pods can be scheduled on the node: not cordoned, Ready (when it
    says), and every NoSchedule or NoExecute taint tolerated (KUBERNETES_TOLERATIONS). A
    PreferNoSchedule taint only steers pods elsewhere."""
    spec = node.get("spec") if isinstance(node.get("spec"), dict) else {}
    if spec.get("unschedulable"):
        return False
    status = node.get("status") if isinstance(node.get("status"), dict) else {}
    for condition in status.get("conditions") or []:
        ready = isinstance(condition, dict) and condition.get("type") == "Ready"
        if ready and condition.get("status") != "True":
            return False
    for taint in spec.get("taints") or []:
        if not isinstance(taint, dict) or taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return False
    return True


def extended_resource_toleration(accelerator: Any) -> dict[str, str]:
    """What Kubernetes' ExtendedResourceToleration admission adds to a pod that asks for an
    extended resource: a NoSchedule taint keyed by the resource's name is tolerated. GKE turns
    it on and taints every GPU node `nvidia.com/gpu=present:NoSchedule`, so the jobs' pods land
    there (review35: those nodes' cards counted neither idle nor in the total, and every
    standalone job was refused for want of idle cards)."""
    return {"key": accelerator.resource, "operator": "Exists", "effect": "NoSchedule"}


def jobset_job_names(resource: dict[str, Any]) -> list[str]:
    """The Jobs a JobSet makes, as the JobSet controller names them: <jobset>-<replicatedJob>-<i>
    for each of a replicatedJob's replicas (the console sends 1 of each)."""
    name = str((resource.get("metadata") or {}).get("name") or "")
    body = resource.get("spec") if isinstance(resource.get("spec"), dict) else {}
    replicated = body.get("replicatedJobs")
    return [
        f"{name}-{one['name']}-{i}"
        for one in (replicated if isinstance(replicated, list) else [])
        if isinstance(one, dict) and one.get("name")
        for i in range(min(_count(one.get("replicas", 1)), MAX_EVENT_PODS))
    ]


# A quantity's suffixes (the API server writes a quota of 1000 cards as "1k").
QUANTITY_SUFFIXES: dict[str, Decimal] = {
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
    "n": Decimal("1e-9"),  # the Metrics API's CPU: "12345678n" cores
    "u": Decimal("1e-6"),
    "m": Decimal("0.001"),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
}


def _amount(value: Any) -> Decimal | None:
    """A quantity ("250m", "12345n", "1Gi", "64"), exactly; None for what is no quantity."""
    text = str(value).strip()
    factor = Decimal(1)
    for suffix in sorted(QUANTITY_SUFFIXES, key=len, reverse=True):
        if text.endswith(suffix):
            text, factor = text[: -len(suffix)], QUANTITY_SUFFIXES[suffix]
            break
    try:
        amount = Decimal(text) * factor
    except (ArithmeticError, ValueError):
        return None
    return amount if amount.is_finite() else None


def _quantity(value: Any) -> int:
    """A quantity in whole units, rounded down (extended resources are counted in whole
    units); 0 for what is no quantity."""
    amount = _amount(value)
    return max(int(amount), 0) if amount is not None else 0


GO_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?)(h|ms|m|s|us|µs|ns)")
GO_DURATION_UNITS = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def _duration(text: Any) -> float | None:
    """A Go duration as the Metrics API writes a window ("30s", "15.012s", "1m0s") in
    seconds; None for anything else."""
    if not isinstance(text, str) or not text:
        return None
    parts = GO_DURATION_PART.findall(text)
    if "".join(number + unit for number, unit in parts) != text:
        return None
    return sum(float(number) * GO_DURATION_UNITS[unit] for number, unit in parts)


def usage_file(public_id: str, label: str) -> Path:
    """The samples of a Kubernetes job's replica (`<role>-<index>`), as jobs.shim.UsageLog
    writes a local replica's; they go when the job is deleted."""
    return Path(settings.VAR_DIR) / USAGE_DIR / public_id / f"{label}.usage"


# Where the logs of a restarted job's failed runs are kept (kept_log_file), beside its usage.
KEPT_LOGS_DIR = "kubernetes-logs"
KEPT_LOGS_NOT_KEPT = gettext_noop(
    "The logs of the failed run of %(replicas)s could not be kept (%(error)s): the job is "
    "restarted all the same, and the job page shows those replicas' logs from this run on."
)
KEPT_LOGS_UNLISTED = gettext_noop(
    "The logs of the failed run could not be kept: Kubernetes did not list its pods "
    "(%(error)s). The job is restarted all the same, and the job page shows its logs from "
    "this run on."
)


KEPT_LOGS_TIME_UP = gettext_noop(
    "not read: the logs of a restart's failed run are kept for %(seconds)s s at most, and the "
    "time ran out"
)


def kept_log_file(public_id: str, label: str) -> Path:
    """The logs of a Kubernetes job's replica (`<role>-<index>`) in its runs a whole-job
    restart deleted, kept before the delete (_keep_failed_logs) as a local replica's log keeps
    its earlier attempts: each run after a stamped "[console] <replica> attempt <n> starting"
    line (jobs.logs.CONSOLE_BANNER); they go when the job is deleted, as its usage samples."""
    return Path(settings.VAR_DIR) / KEPT_LOGS_DIR / public_id / f"{label}.log"


# What a restart's keep did, beside the kept logs (kept_replicas): a replica's label as its
# log is kept, and KEEP_DONE once the keep went through them all.
KEEP_DONE = "*"


def keep_record_file(public_id: str, restart: int) -> Path:
    return Path(settings.VAR_DIR) / KEPT_LOGS_DIR / public_id / f"restart-{restart}.kept"


def kept_replicas(public_id: str, restart: int) -> set[str]:
    """The replicas whose log of the run `restart` ended is kept (with KEEP_DONE when its keep
    ended): recorded once per restart, so a worker killed midway leaves the next to keep the
    rest (review55 L3), and a log read shows no run twice (M3)."""
    try:
        text = keep_record_file(public_id, restart).read_text(encoding="utf-8")
    except OSError:
        return set()
    return set(text.split())


def append_kept(path: Path, lines: list[str]) -> None:
    """Appends to a kept log (or a keep's record) in a folder that must be there already
    (FileNotFoundError once a Delete removed it), readable by the console's group only, as
    the local runner's logs (jobs.shim)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
    with os.fdopen(fd, "a", encoding="utf-8") as file:
        file.write("".join(f"{line}\n" for line in lines))


def pod_attempt(pod: dict[str, Any]) -> int:
    """The run a job's pod is of: its restart label's (M.restarted puts it on the pods of a
    restart's resource) plus one; the first run is attempt 1."""
    return M.restart_of(pod) + 1


def pod_run_kept(job: Job, replica: str, pod: dict[str, Any]) -> bool:
    """Whether the pod is of a run a restart ended and whose log of the replica is kept: the
    failed run's pod while it terminates, or left for good when the restart could not be made
    (review55 M3: its log was shown twice, kept and again as the current run's)."""
    attempt = pod_attempt(pod)
    return attempt <= job.restarts and replica in kept_replicas(job.public_id, attempt)


def pod_banner(replica: str, pod: dict[str, Any]) -> str:
    """The banner of the run the pod is of, stamped when the pod started (review55 L1: the
    time of each read before)."""
    started = kube_time((pod.get("status") or {}).get("startTime"))
    return attempt_banner(replica, pod_attempt(pod), started)


def attempt_banner(label: str, attempt: int, started: datetime | None) -> str:
    """A run's first line in a replica's log, as the local runner writes it: stamped (UTC)
    and marked as the console's own, in the console's language."""
    moment = (started or timezone.now()).astimezone(UTC)
    text = recorded(CONSOLE_BANNER, replica=label, attempt=attempt)
    return f"{moment:%Y-%m-%dT%H:%M:%S.%f}Z {CONSOLE_MARK}{text}"


def earlier_runs_then(
    path: Path, current: tuple[str, Iterator[str], BinaryIO] | None
) -> Iterator[str]:
    """A download's lines: those kept of a replica's earlier runs (`path`), then, if given,
    the current run's banner and lines (spooled_lines of its log, closed with this)."""
    try:
        with path.open(encoding="utf-8", errors="replace", newline="") as file:
            for line in file:
                yield unmarked(line)
        if current is not None:
            banner, lines, _log = current
            yield unmarked(banner) + "\n"
            yield from lines
    finally:
        if current is not None:
            current[2].close()  # (its lines may not have begun: the log closed all the same)


def usage_sample(pod_metrics: dict[str, Any], *, window: float) -> dict[str, Any] | None:
    """A PodMetrics as one sample (UsageLog's record): its time, the window its CPU rate was
    measured over (`window` when it gives none), the CPU cores and memory bytes of its
    containers together; no /tmp. None when it has no time or no usage."""
    when = kube_time(pod_metrics.get("timestamp"))
    containers = pod_metrics.get("containers")
    if when is None or not isinstance(containers, list) or not containers:
        return None
    cpu = Decimal(0)
    memory = Decimal(0)
    for container in containers:
        usage = (container.get("usage") if isinstance(container, dict) else None) or {}
        if not isinstance(usage, dict):
            return None
        cores, used = _amount(usage.get("cpu", "0")), _amount(usage.get("memory", "0"))
        if cores is None or used is None:
            return None
        cpu += max(cores, Decimal(0))
        memory += max(used, Decimal(0))
    return {
        "t": round(when.timestamp(), 1),
        "s": round(_duration(pod_metrics.get("window")) or window, 3),
        "cpu": round(float(cpu), 3),
        "mem": int(memory),
        "tmp": 0,
    }


@dataclass(frozen=True)
class Quota:
    """How a namespace's ResourceQuotas bound its cards: per resource they limit, the least
    hard limit (the most the namespace can ever hold) and the least room left (hard - used).

    Only quotas without scopes count: a scoped one (a priority class, terminating pods...)
    applies to some pods only, and the idle count is the pool's, not one job's."""

    hard: dict[str, int] = field(default_factory=dict)
    left: dict[str, int] = field(default_factory=dict)
    # The console may not list the namespace's ResourceQuotas (403): the cluster's figures
    # are shown, and the pool says so.
    forbidden: bool = False
    as_of: datetime | None = None  # the last successful read
    error: KubeError | None = None  # the last read failed: the figures are the ones before it

    @classmethod
    def of(cls, quotas: list[dict[str, Any]], resources: set[str], *, as_of: datetime) -> Quota:
        hard: dict[str, int] = {}
        left: dict[str, int] = {}
        for quota in quotas:
            spec = quota.get("spec") or {}
            if spec.get("scopes") or spec.get("scopeSelector"):
                continue
            status = quota.get("status") or {}
            limits, used = status.get("hard") or {}, status.get("used") or {}
            for resource in resources:
                # An extended resource is limited only as requests.<name> (never overcommitted).
                key = f"requests.{resource}"
                if key not in limits:
                    continue
                limit = _quantity(limits[key])
                room = max(limit - _quantity(used.get(key, 0)), 0)
                hard[resource] = min(hard.get(resource, limit), limit)
                left[resource] = min(left.get(resource, room), room)
        return cls(hard=hard, left=left, as_of=as_of)

    def bound(self, stock: AcceleratorStock, resource: str) -> AcceleratorStock:
        if resource not in self.hard:
            return AcceleratorStock(stock.type, stock.total, stock.idle)
        return AcceleratorStock(
            stock.type, min(stock.total, self.hard[resource]), min(stock.idle, self.left[resource])
        )


POD_SECURITY_LABEL = "pod-security.kubernetes.io/enforce"
POD_SECURITY_REFUSES = gettext_noop(
    "The namespace %(namespace)s of this pool enforces the Pod Security level “%(level)s”, "
    "which refuses %(what)s: the job's pods would never start. Choose a pool whose namespace "
    "allows it, or ask the operator to label the namespace "
    "pod-security.kubernetes.io/enforce=privileged."
)
POD_SECURITY_RESTRICTED = gettext_noop(
    "The namespace %(namespace)s of this pool enforces the Pod Security level “restricted”, "
    "which refuses every pod the console makes (they do not run as a non-root user with a "
    "seccomp profile and all capabilities dropped): the job's pods would never start. Choose "
    "another pool."
)


def pod_security_level(client: KubeClient, namespace: str) -> str:
    """The namespace's Pod Security Admission enforce level (its label; "privileged" when
    unlabelled, the admission's default), "" when it cannot be read (RBAC without `get
    namespaces`, no answer: the job is sent, as before qa96)."""
    try:
        found = client.get(f"/api/v1/namespaces/{namespace}")
    except KubeError as exc:
        # Unknown is not refused: an API server that does not answer answers the create no
        # better, which then says so as before.
        logger.info("Pod Security level of namespace %s not read: %s", namespace, exc)
        return ""
    labels = (found.get("metadata") or {}).get("labels") or {}
    return str(labels.get(POD_SECURITY_LABEL) or "privileged")


def pod_security_refusals(spec: spec_module.JobSpec, level: str) -> dict[str, str]:
    """What the namespace's Pod Security Admission level refuses of the job's pods: the
    spec's field -> the thing refused (a gettext_noop message; "" for every pod). Baseline
    refuses privileged containers, the host network and hostPath volumes; restricted every
    pod the console makes (qa96: the job was created, and its pods, refused at admission,
    left it Queued until its timeout)."""
    if level == "restricted":
        return {"resourcePoolId": ""}
    if level != "baseline":
        return {}
    found: dict[str, str] = {}
    if spec.privileged:
        found["jobSpec.privileged"] = gettext_noop("privileged containers")
    if spec.host_network:
        found["jobSpec.hostNetwork"] = gettext_noop("the host network")
    for i, ds in enumerate(spec.datasources):
        if ds.type == M.HOST_PATH_TYPE:
            found[f"datasources[{i}].name"] = gettext_noop("hostPath volumes")
    return found


def pod_security_refused(namespace: str, level: str, what: str) -> str:
    """The refusal of pod_security_refusals' `what` (recorded: said in each reader's
    language)."""
    if not what:
        return recorded(POD_SECURITY_RESTRICTED, namespace=namespace)
    return recorded(POD_SECURITY_REFUSES, namespace=namespace, level=level, what=Term(what))


@dataclass(frozen=True)
class Figures:
    """One read of an API server's inventory: the cluster's cards per card type (over its
    nodes and pods) and each configured namespace's quotas."""

    stock: tuple[AcceleratorStock, ...] = ()
    resources: dict[str, str] = field(default_factory=dict)  # card type -> resource, as read
    quotas: dict[str, Quota] = field(default_factory=dict)  # namespace -> its quotas
    # namespace -> its Pod Security Admission enforce level ("" when it could not be read)
    pod_security: dict[str, str] = field(default_factory=dict)
    # (nodes with the configured cards, those of them with any card in use), as `stock`
    nodes: tuple[int, int] = (0, 0)
    as_of: datetime | None = None  # the last successful read of nodes and pods
    error: Exception | None = None  # the last read failed: the figures are the ones before it


class Inventory(BackgroundInventory):
    """The figures of one API server, cached and refreshed in the background by one thread at
    a time, as the AIHC inventory is (`BackgroundInventory`): read at most once per
    KUBERNETES_CACHE_SECONDS however often the wizard polls."""

    thread_name = "kubernetes-inventory"

    def __init__(self) -> None:
        super().__init__()
        self.figures = Figures()
        self.config: Config | None = None
        self.client: KubeClient | None = None
        self._forbidden_said: set[str] = set()  # namespaces whose 403 the log has told

    def get(self, config: Config, client: KubeClient) -> Figures:
        with self._lock:
            # Changed settings, and a client with a rotated token, apply at the next refresh.
            self.config, self.client = config, client
        self._await_figures(config)
        return self.figures

    def _read_and_keep(self) -> None:
        with self._lock:
            config, client = self.config, self.client
        assert config is not None and client is not None
        last = self.figures
        try:
            stock, nodes = self._read_cluster(config, client)
            quotas = {ns: self._read_quota(config, client, ns) for ns in config.namespaces}
            levels = {ns: pod_security_level(client, ns) for ns in config.namespaces}
        except KubeError as exc:
            logger.warning("Kubernetes inventory read failed: %s", logged_error(exc))
            self.figures = replace(last, error=exc)
        except Exception as exc:  # never let a refresh thread die silently
            logger.exception("Kubernetes inventory read failed")
            self.figures = replace(last, error=exc)
        else:
            self.figures = Figures(
                stock=tuple(stock),
                resources={card: a.resource for card, a in config.cluster.accelerators.items()},
                quotas=quotas,
                pod_security=levels,
                nodes=nodes,
                as_of=timezone.now(),
            )

    def _read_quota(self, config: Config, client: KubeClient, namespace: str) -> Quota:
        try:
            found = client.list(f"/api/v1/namespaces/{namespace}/resourcequotas")
        except KubeError as exc:
            if exc.status != 403:
                logger.warning(
                    "Kubernetes ResourceQuotas of %s not read: %s", namespace, logged_error(exc)
                )
                return replace(self.figures.quotas.get(namespace) or Quota(), error=exc)
            # RBAC grants no list of resourcequotas: the pool shows the cluster's figures and
            # says so; the log says it once, not at every refresh.
            if namespace not in self._forbidden_said:
                self._forbidden_said.add(namespace)
                logger.warning(
                    "Kubernetes: the console may not list resourcequotas in %s (%s); its pool "
                    "shows the cluster's idle cards, not counting the namespace's quotas",
                    namespace,
                    logged_error(exc),
                )
            return Quota(forbidden=True, as_of=timezone.now())
        self._forbidden_said.discard(namespace)
        resources = {a.resource for a in config.cluster.accelerators.values()}
        return Quota.of(found, resources, as_of=timezone.now())

    @staticmethod
    def _read_cluster(
        config: Config, client: KubeClient
    ) -> tuple[list[AcceleratorStock], tuple[int, int]]:
        """The cards per card type, and (nodes, busy nodes): the schedulable nodes with
        any of the cards, and those with any of their cards requested (qa103: the API's
        nodeCount was 0 of 0 on a cluster of card nodes)."""
        nodes = client.list("/api/v1/nodes")
        pods = client.list(
            "/api/v1/pods", field_selector="status.phase!=Succeeded,status.phase!=Failed"
        )
        used_by_node: dict[str, dict[str, int]] = {}
        for pod in pods:
            spec = pod.get("spec") or {}
            node = spec.get("nodeName")
            if not node:
                continue
            used = used_by_node.setdefault(node, {})
            for container in spec.get("containers") or []:
                requests = (container.get("resources") or {}).get("requests") or {}
                for resource, amount in requests.items():
                    used[resource] = used.get(resource, 0) + _quantity(amount)
        stock = []
        card_nodes: set[str] = set()
        busy_nodes: set[str] = set()
        for card, accelerator in sorted(config.cluster.accelerators.items()):
            total = idle = 0
            tolerations = (*config.cluster.tolerations, extended_resource_toleration(accelerator))
            for node in nodes:
                labels = (node.get("metadata") or {}).get("labels") or {}
                if not schedulable(node, tolerations):
                    continue
                if any(labels.get(k) != v for k, v in accelerator.node_selector):
                    continue
                allocatable = (node.get("status") or {}).get("allocatable") or {}
                have = _quantity(allocatable.get(accelerator.resource, 0))
                if not have:
                    continue
                name = (node.get("metadata") or {}).get("name", "")
                in_use = used_by_node.get(name, {}).get(accelerator.resource, 0)
                total += have
                idle += max(have - in_use, 0)
                card_nodes.add(name)
                if in_use:
                    busy_nodes.add(name)
            stock.append(AcceleratorStock(type=card, total=total, idle=idle))
        return stock, (len(card_nodes), len(busy_nodes))


def _mpi_operator_environment(spec: spec_module.JobSpec, ref: ReplicaRef) -> dict[str, str]:
    """What the MPI operator v2 (OpenMPI, its default mpiImplementation) adds to an MPIJob's
    launcher (mpi-operator's mpi_job_controller.go): its slots, FQDN host names and ssh's
    retries, and, when it runs no ranks, no GPU for NVIDIA's runtime. The review listed none
    of them (qa68), though a DeepSpeed or Horovod start reads its GPUs per node from
    OMPI_MCA_orte_set_default_slots."""
    if ref.role != "master":
        return {}
    env = {
        "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
        "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10",
        "OMPI_MCA_orte_set_default_slots": str(M.mpi_slots_per_worker(spec)),
    }
    if not M.mpi_launcher_runs_ranks(spec):
        env |= {"NVIDIA_VISIBLE_DEVICES": "", "NVIDIA_DRIVER_CAPABILITIES": ""}
    return env


def _note_uid(job: Job, resource: dict[str, Any]) -> None:
    """Keeps the uid the API server gave the job's resource (Job.k8s_uid), when it changed."""
    uid = str((resource.get("metadata") or {}).get("uid") or "")
    if uid and uid != job.k8s_uid:
        Job.objects.filter(pk=job.pk).update(k8s_uid=uid)
        job.k8s_uid = uid


def _secret_made(name: str, spec: spec_module.JobSpec | None) -> str:
    """The name of the Secret a create of resource `name` made for its secret env values;
    "" when its spec has none (a spec that no longer reads: whatever it made)."""
    if name and (spec is None or any(e.secret for e in spec.envs)):
        return M.secret_name(name)
    return ""


class KubernetesBackend(RemoteBackend[Config, KubeClient]):
    name = NAME
    platform = "Kubernetes"
    unanswered_events = (UNANSWERED_EVENT,)
    logger = logger

    def __init__(self) -> None:
        super().__init__()
        self._clients: dict[tuple[Any, ...], KubeClient] = {}
        # Per API server (Config.key()): its figures.
        self._inventories: dict[tuple[Any, ...], Inventory] = {}
        # Per API server and namespace: (monotonic time of the last read, its PodMetrics by
        # pod name); and those whose Metrics API the log has said is missing or forbidden.
        self._pod_metrics: dict[tuple[Any, ...], tuple[float, dict[str, dict[str, Any]]]] = {}
        self._metrics_said: set[tuple[Any, ...]] = set()
        # Per running replica (job id, label): its samples' file, and the time of its last
        # sample (a PodMetrics is written once).
        self._usage_logs: dict[tuple[str, str], tuple[UsageLog, float]] = {}

    def __repr__(self) -> str:
        return "KubernetesBackend()"

    # -- configuration -------------------------------------------------------------

    def _config(self) -> Config:
        try:
            return Config.from_settings(settings)
        except ConfigError as exc:
            raise BackendError(str(exc), code="Misconfigured") from None

    def settings_problem(self) -> str | None:
        # From the settings' presence alone, no file read (review64: Config.from_settings read
        # the token file and built an SSL context, 10-170 ms, on every staff page that asks,
        # and a momentary read failure counted as "not configured": StopJob answered 409, Mark
        # as lost was offered). A token file that cannot be read is an outage, said by the
        # call that needs it (503), not a platform taken away; and these texts, unlike
        # ConfigError's (the operator's log), are the reader's language.
        if not settings.KUBERNETES_API_URL:
            return _("The Kubernetes API server is not configured (KUBERNETES_API_URL).")
        if not settings.KUBERNETES_TOKEN and not settings.KUBERNETES_TOKEN_FILE:
            return _(
                "Kubernetes credentials are not configured (KUBERNETES_TOKEN or "
                "KUBERNETES_TOKEN_FILE)."
            )
        return None

    def _setup(
        self, *, for_page: bool = False, for_action: bool = False, for_download: bool = False
    ) -> tuple[Config, KubeClient]:
        """Settings are read on each call; `for_page`: one try, a short read timeout (a
        page's log tail waits on it); `for_action`: a person's Stop or Delete, for_page's
        client with each call also given up once KUBERNETES_CONNECT_TIMEOUT +
        KUBERNETES_PAGE_READ_TIMEOUT have passed, however its answer comes (a log tail is
        not: it may read a long answer); `for_download`: a whole-log download's client, its
        tries and KUBERNETES_DOWNLOAD_READ_TIMEOUT within LOG_DOWNLOAD_TOTAL_SECONDS, to be
        closed."""
        config = self._config()
        try:
            token = config.bearer_token()
        except ConfigError as exc:
            raise BackendError(str(exc), code="Misconfigured") from None
        if for_download:
            # A client of its own, for this download alone: its deadline is the download's.
            return config, KubeClient(
                server=config.server,
                token=token,
                ca_file=config.ca_file,
                connect_timeout=config.connect_timeout,
                read_timeout=config.download_read_timeout,
                deadline=download_deadline(),
            )
        for_page = for_page or for_action
        key = (*config.key(), for_page, for_action)
        with self._lock:
            client = self._clients.get(key)
            if client is not None and client.token != token:
                # The token file was rotated: the same client sends the new token from its
                # next call on. Not closed and made again: a call of another thread (the
                # worker's sync, the inventory's refresh) may be waiting on it, and its
                # answer, its tries and the rest of that sync were lost to the closed
                # client ("Cannot send a request, as the client has been closed"; review 48).
                client.token = token
            if client is None:
                client = KubeClient(
                    server=config.server,
                    token=token,
                    ca_file=config.ca_file,
                    connect_timeout=config.connect_timeout,
                    read_timeout=config.page_read_timeout if for_page else config.read_timeout,
                    retries=0 if for_page else 2,
                    call_seconds=config.connect_timeout + config.page_read_timeout
                    if for_action
                    else None,
                )
                self._clients[key] = client
        return config, client

    # -- inventory -----------------------------------------------------------------

    def pools(self) -> list[Pool]:
        try:
            # Read in the background, off the page's path: the worker's client (retries, the
            # longer read timeout).
            config, client = self._setup()
        except BackendError as exc:
            return self._unusable(exc)
        with self._lock:
            inventory = self._inventories.setdefault(config.key(), Inventory())
        figures = inventory.get(config, client)
        volumes = [
            Volume(type=kind, name=claim, label=claim)
            for claim, kind in config.cluster.claims.items()
        ] + [
            Volume(type=M.HOST_PATH_TYPE, name=name, label=root)
            for name, root in config.cluster.host_paths.items()
        ]
        types = [t for t in (*M.CLAIM_TYPES, M.HOST_PATH_TYPE) if any(v.type == t for v in volumes)]
        return [
            self._pool(config, figures, namespace, volumes, types)
            for namespace in config.namespaces
        ]

    def pool_names(self) -> dict[str, str]:
        # From the settings alone: no API server asked.
        try:
            config = self._config()
        except BackendError:
            return {}
        return {pool_id(ns): self._pool_name(config, ns) for ns in config.namespaces}

    @staticmethod
    def _pool_name(config: Config, namespace: str) -> str:
        return f"{config.cluster_name} · {namespace}"

    @staticmethod
    def _pool(
        config: Config,
        figures: Figures,
        namespace: str,
        volumes: list[Volume],
        types: list[str],
    ) -> Pool:
        """A namespace's pool: the cluster's cards bounded by the namespace's quotas
        (min(cluster idle, hard - used) per resource), with when and how they were read."""
        stock = list(figures.stock) or [
            AcceleratorStock(type=card, total=0, idle=0) for card in config.cluster.accelerators
        ]
        quota = figures.quotas.get(namespace)
        errors: list[str] = []
        if figures.error is not None:
            errors.append(
                _("Kubernetes nodes could not be read: %(error)s") % {"error": figures.error}
                if isinstance(figures.error, KubeError)
                else _("Kubernetes nodes could not be read.")
            )
        if quota is not None and quota.error is not None:
            errors.append(
                _("The ResourceQuotas of %(namespace)s could not be read: %(error)s")
                % {"namespace": namespace, "error": quota.error}
            )
        note = ""
        if quota is not None and quota.forbidden:
            note = _(
                "Idle cards are the cluster's: the console may not list the ResourceQuotas of "
                "%(namespace)s, so its quota is not counted."
            ) % {"namespace": namespace}
        # The older of the two reads; none until the namespace's quotas were read once.
        as_of = None
        if quota is not None and quota.as_of is not None and figures.as_of is not None:
            as_of = min(figures.as_of, quota.as_of)
        age = (timezone.now() - as_of).total_seconds() if as_of is not None else None
        return Pool(
            id=pool_id(namespace),
            name=KubernetesBackend._pool_name(config, namespace),
            backend=NAME,
            queues=list(config.queues),
            accelerators=[
                quota.bound(s, figures.resources.get(s.type, ""))
                if quota is not None
                else AcceleratorStock(s.type, s.total, s.idle)
                for s in stock
            ],
            volumes=list(volumes),
            storage_types=list(types),
            privileged=namespace in config.cluster.privileged_namespaces,
            training_api=config.cluster.training_api,
            as_of=as_of,
            stale=bool(errors) or age is None or age > config.cache_seconds,
            error=" ".join(errors),
            note=note,
            nodes=figures.nodes,
        )

    # -- what the cluster cannot run -------------------------------------------------

    def check_spec(self, spec: spec_module.JobSpec) -> dict[str, list[str]]:
        errors: dict[str, list[str]] = {}

        def err(path: str, message: str) -> None:
            errors.setdefault(path, []).append(message)

        try:
            config = self._config()
        except BackendError:
            return errors  # submit fails with the configuration error
        cluster = config.cluster
        if namespace_of(spec.resource_pool_id) not in config.namespaces:
            err(
                "resourcePoolId",
                _("Kubernetes has no resource pool %(pool)s.") % {"pool": spec.resource_pool_id},
            )
        if spec.queue not in config.queues:
            err(
                "queue",
                _("This pool has no queue %(queue)s; it has %(queues)s.")
                % {"queue": spec.queue, "queues": list_words(config.queues)},
            )
        for i, role in enumerate(spec.roles):
            # TensorFlow's own rule (tensorflow/python/distribute/multi_worker_util.py: "There
            # must be at most one 'evaluator' job"), which TF_CONFIG's cluster would break:
            # the training operator v1.9 lists every evaluator there and its webhook does
            # not count them.
            if (
                spec.framework == spec_module.TENSORFLOW
                and role.name == "evaluator"
                and (role.replicas > 1)
            ):
                err(f"roles[{i}].replicas", _("TensorFlow allows at most 1 evaluator."))
            if (
                role.accelerator_type
                and role.accelerators
                and role.accelerator_type not in cluster.accelerators
            ):
                err(
                    f"roles[{i}].acceleratorType",
                    _("The cluster offers no card type %(type)s; it offers %(types)s.")
                    % {
                        "type": role.accelerator_type,
                        "types": list_words(cluster.accelerators) or "—",
                    },
                )
        if spec.framework == spec_module.MPI:
            self._check_mpi_slots(spec, err)
        if cluster.training_api == M.TRAINER_API:
            self._check_trainer(spec, err)
        if (
            spec.framework == spec_module.TENSORFLOW
            and not any(
                role.replicas > 0 for role in spec.roles if role.name in ("chief", "worker")
            )
            # A job of ps alone has the spec's message already, saying the same (qa78).
            and not spec_module.tensorflow_has_only_ps(spec)
        ):
            # The training operator's TFJob succeeds on its chief's exit 0, or worker 0's
            # without a chief (UpdateJobStatus); with neither it never does, and such a job
            # (an evaluator alone) ran until its time limit (QA 58).
            err(
                "roles",
                _(
                    "On Kubernetes a TensorFlow job needs a chief or a worker: the training "
                    "operator ends a job when its chief (or worker 0) exits 0, so a job of an "
                    "evaluator and ps alone would run until its time limit."
                ),
            )
        if spec.image_config is not None:
            err(
                "jobSpec.imageConfig",
                _(
                    "Registry credentials cannot be sent to Kubernetes yet; the cluster pulls "
                    "images with its own pull secrets (KUBERNETES_IMAGE_PULL_SECRETS, or the "
                    "namespace's service account)."
                ),
            )
        if spec.privileged and namespace_of(spec.resource_pool_id) not in (
            cluster.privileged_namespaces
        ):
            err("jobSpec.privileged", _(PRIVILEGED_REFUSED))
        with self._lock:
            inventory = self._inventories.get(config.key())
        # The last inventory read's, never waiting for one: the worker reads it again before
        # it creates the job (_create).
        level = (
            inventory.figures.pod_security.get(namespace_of(spec.resource_pool_id), "")
            if inventory
            else ""
        )
        namespace = namespace_of(spec.resource_pool_id)
        for path, what in pod_security_refusals(spec, level).items():
            err(
                path,
                _(POD_SECURITY_REFUSES) % {"namespace": namespace, "level": level, "what": _(what)}
                if what
                else _(POD_SECURITY_RESTRICTED) % {"namespace": namespace},
            )
        if spec.enable_rdma:
            err("jobSpec.enableRDMA", _("RDMA is not supported on Kubernetes pools yet."))
        if spec.enable_bccl:
            err("enableBccl", _("BCCL is available on AIHC only."))
        if spec.cpu_exclusive:
            err("cpuExclusive", _("CPU exclusivity is not supported on Kubernetes pools yet."))
        if spec.log_persistence:
            err("logPersistence", _("Log persistence is not supported on Kubernetes pools yet."))
        ftc = spec.fault_tolerance_config
        if ftc is not None and ftc.enabled_hang_detection:
            err(
                "faultToleranceConfig.enabledHangDetection",
                _("Hang detection is not supported on Kubernetes pools yet."),
            )
        if ftc is not None and ftc.custom_fault_tolerance_pattern:
            err(
                "faultToleranceConfig.customFaultTolerancePattern",
                _("Restarting on log patterns is not supported on Kubernetes pools yet."),
            )
        for problem in self._alert_refusals(spec, trainer=cluster.training_api == M.TRAINER_API):
            err("alertConfig.alertItems", problem)
        # The console's worker sends these alerts, as a local job's: the destinations it would
        # refuse at send time are refused now with the local pool's words (review55 M1).
        for path, problem in alert_destination_refusals(spec.alert):
            err(path, problem)
        for i, ds in enumerate(spec.datasources):
            path = f"datasources[{i}]"
            if ds.type in M.CLAIM_TYPES:
                if cluster.claims.get(ds.name) != ds.type:
                    offered = [c for c, t in cluster.claims.items() if t == ds.type]
                    err(
                        f"{path}.name",
                        _("The cluster has no %(type)s volume “%(name)s”; it has %(names)s.")
                        % {"type": ds.type, "name": ds.name, "names": list_words(offered) or "—"},
                    )
            elif ds.type == M.HOST_PATH_TYPE:
                if ds.name not in cluster.host_paths:
                    err(
                        f"{path}.name",
                        _("The cluster has no node folder “%(name)s”; it has %(names)s.")
                        % {"name": ds.name, "names": list_words(cluster.host_paths) or "—"},
                    )
            else:
                err(
                    f"{path}.type",
                    _("Kubernetes pools cannot mount “%(type)s”; they mount %(types)s.")
                    % {"type": ds.type, "types": list_words((*M.CLAIM_TYPES, M.HOST_PATH_TYPE))},
                )
                continue
            if M.sub_path(ds.source_path) is None:
                err(f"{path}.sourcePath", _("The folder must stay inside the volume."))
        if (size := pod_templates_bytes(spec)) > MAX_POD_TEMPLATES_BYTES:
            err(
                "envs",
                _(
                    "On Kubernetes each of the job's %(roles)d roles carries the command and "
                    "the variables not marked secret in its pod template: %(size)s bytes in "
                    "all, and the cluster keeps an object of at most %(max)s (1 MiB here). "
                    "Shorten the longest values or the command, or mark large values secret: "
                    "the job's Secret holds those once."
                )
                % {
                    "roles": len(spec.roles),
                    "size": f"{size:,}",
                    "max": f"{MAX_POD_TEMPLATES_BYTES:,}",
                },
            )
        return errors

    @staticmethod
    def _alert_refusals(spec: spec_module.JobSpec, *, trainer: bool) -> list[str]:
        """The alert events a job here chose that never come: the console sends a Kubernetes
        job's alerts itself from what its sync reads (ALERTED_MOVES, and jobFT on each of its
        restarts), as the local pool's; it detects no hang here and watches no node (an
        alert that can never arrive is refused, as on the local pool: QA 59, qa72)."""
        items = spec.alert.items
        refusals = []
        if "jobHang" in items:
            refusals.append(
                _(
                    "“Job hangs” never comes from a Kubernetes pool: the console detects no "
                    "hang of a job there (hang detection is not supported on these pools "
                    "yet). Leave this event out."
                )
            )
        if "nodeFT" in items:
            refusals.append(
                _(
                    "“A node of the job fails” never comes from a Kubernetes pool: the console "
                    "does not watch the cluster's nodes. A job a node's failure ends alerts as "
                    "“Job fails”, or “Job restarted by fault tolerance” when it is restarted. "
                    "Leave this event out."
                )
            )
        if "jobFT" in items and not spec.fault_tolerance:
            if trainer or spec.framework != spec_module.PYTORCH:
                # Not sent to step 5: fault tolerance is refused there for this job.
                refusals.append(
                    _(
                        "On a Kubernetes pool the console alerts “Job restarted by fault "
                        "tolerance” when it restarts a job, and this job cannot have fault "
                        "tolerance here: this alert never comes. Leave this event out."
                    )
                )
            else:
                refusals.append(
                    _(
                        "On a Kubernetes pool the console alerts “Job restarted by fault "
                        "tolerance” when it restarts a job, and only a job with fault "
                        "tolerance on is restarted: without it this alert never comes. Turn "
                        "fault tolerance on in step 5 (Fault tolerance & diagnostics; PyTorch "
                        "only), or leave this event out."
                    )
                )
        return refusals

    @staticmethod
    def _check_trainer(spec: spec_module.JobSpec, err: Any) -> None:
        """What a cluster of Kubeflow Trainer v2 (KUBERNETES_TRAINING_API=trainer) cannot run:
        TensorFlow (no Trainer runtime, and no training operator v1 for a TFJob); and of a
        PyTorch job's TrainJob, what it has no field for (M.trainjob_manifest): a master
        unlike its workers (one resourcesPerNode for every node; card type and count already
        match, jobs.spec), restarts, a retention, host network, envs the torch plugin sets
        itself (its webhook refuses them), and an image or command item longer than its CRD
        allows."""
        if spec.framework == spec_module.TENSORFLOW:
            err(
                "jobFramework",
                _(
                    "This Kubernetes cluster runs training jobs with Kubeflow Trainer v2, which "
                    "has no TensorFlow runtime: choose PyTorch, MPI or Custom, or a pool of "
                    "another platform."
                ),
            )
            return
        if not M.is_trainjob(spec.framework, M.TRAINER_API):
            return
        names = [role.name for role in spec.roles]
        master = spec.roles[names.index("master")] if "master" in names else None
        worker = spec.roles[names.index("worker")] if "worker" in names else None
        if master is not None and worker is not None and worker.replicas > 0:
            for attr, field in (("cpu", "cpu"), ("memory_gb", "memory")):
                if getattr(master, attr) != getattr(worker, attr):
                    err(
                        f"roles[{names.index('worker')}].{field}",
                        _(
                            "On this pool a PyTorch job is a Kubeflow Trainer TrainJob, whose "
                            "nodes all get the same resources: give the workers the master's "
                            "CPU and memory."
                        ),
                    )
        trainer_has_no = _(
            "On this pool a PyTorch job is a Kubeflow Trainer TrainJob, which has no such "
            "setting: %(what)s"
        )
        if spec.fault_tolerance:
            err(
                "faultTolerance",
                trainer_has_no
                % {
                    "what": _(
                        "turn fault tolerance off (the cluster's training runtime sets restarts)."
                    )
                },
            )
        if spec.retention_period:
            err(
                "retentionPeriod",
                trainer_has_no % {"what": _("turn automatic deletion off.")},
            )
        if spec.host_network:
            err(
                "jobSpec.hostNetwork",
                trainer_has_no % {"what": _("turn host network off.")},
            )
        for i, env in enumerate(spec.envs):
            if env.name in M.TORCH_RESERVED_ENVS:
                err(
                    f"envs[{i}].name",
                    _("Kubeflow Trainer sets %(name)s itself for torchrun; choose another name.")
                    % {"name": env.name},
                )
        if len(spec.image) > M.TRAINER_IMAGE_MAX:
            err(
                "jobSpec.image",
                _(
                    "On this pool a PyTorch job is a Kubeflow Trainer TrainJob, whose image "
                    "address can be at most %(most)s characters; this one has %(length)s: "
                    "use a shorter address (a shorter registry name or tag, or a digest)."
                )
                % {"most": M.TRAINER_IMAGE_MAX, "length": len(spec.image)},
            )
        # The TrainJob CRD's trainer.command items are at most 65536 characters (a pod's
        # command has no such limit: the console's own is 256 KB), the line that sets the
        # node's role included (M.trainer_command).
        try:
            command = M.trainer_command(spec)
        except ValueError:  # an entrypoint with an unclosed quote: refused on its own field
            return
        if max(map(len, command)) > M.TRAINER_COMMAND_ITEM_MAX:
            err(
                "jobSpec.command",
                _(
                    "On this pool a PyTorch job is a Kubeflow Trainer TrainJob, whose command "
                    "can be at most %(most)s characters, the %(extra)s-character line the "
                    "console puts before it included: shorten it, or run a script from a "
                    "mounted folder."
                )
                % {
                    "most": f"{M.TRAINER_COMMAND_ITEM_MAX:,}",
                    "extra": len(command[-1]) - len(M.container_command(spec)[-1]),
                },
            )

    @staticmethod
    def _check_mpi_slots(spec: spec_module.JobSpec, err: Any) -> None:
        """The MPI operator v2 gives every host of its hostfile the same slots
        (`slotsPerWorker`, the workers' cards here), the launcher too when it runs ranks
        (`runLauncherAsWorker`, a master given cards). The local runner's hostfile gives the
        master its own cards (jobs.runtime_env.mpi_hostfile), so a master with cards and
        workers without would run a different number of ranks on the master here: refused.
        (Masters and workers both with cards already must match: jobs.spec.)"""
        names = [role.name for role in spec.roles]
        master = spec.roles[names.index("master")] if "master" in names else None
        worker = spec.roles[names.index("worker")] if "worker" in names else None
        if (
            master is not None
            and master.accelerator_type
            and master.accelerators
            and worker is not None
            and worker.replicas > 0
            and not (worker.accelerator_type and worker.accelerators)
        ):
            err(
                f"roles[{names.index('master')}].accelerators",
                _(
                    "On Kubernetes the MPI operator gives the master as many slots as each "
                    "worker (slotsPerWorker): give the workers the master's cards, or the "
                    "master none."
                ),
            )

    # -- what is sent ----------------------------------------------------------------

    def manifests(
        self,
        spec: spec_module.JobSpec,
        *,
        job_id: str,
        masked: bool = False,
        cluster: M.Cluster,
        owner: str = "",
    ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """(the Secret or None, the custom resource) exactly as submit sends them; `owner`,
        the job's owner's user name ("": no job yet, the wizard's preview)."""
        namespace = namespace_of(spec.resource_pool_id)
        name = M.object_name(spec, job_id)
        secret = M.secret_manifest(
            spec, name=name, namespace=namespace, job_id=job_id, masked=masked
        )
        job = M.job_manifest(spec, cluster, name=name, namespace=namespace, job_id=job_id)
        annotations = self._annotations(job_id, owner)
        if secret is not None:
            M.console_marked(secret, annotations)
        return secret, M.console_marked(job, annotations)

    @staticmethod
    def _annotations(job_id: str, owner: str) -> dict[str, str]:
        """Whose job an object is and its page, for the cluster's admin (qa103): the owner's
        user name, and the job page at SITE_URL unless that is a loopback address (the
        default, which no one at the cluster can open). None before the job exists (the
        wizard's preview: no owner)."""
        if not owner:
            return {}
        annotations = {M.USER_ANNOTATION: owner}
        if not _unreachable_from_a_cluster(urlsplit(settings.SITE_URL).hostname or ""):
            annotations[M.URL_ANNOTATION] = site_address(reverse("job-detail", args=[job_id]))
        return annotations

    def request_preview(
        self,
        spec: spec_module.JobSpec,
        *,
        job_id: str = "",
        training_api: str = "",
        owner: str = "",
    ) -> RequestPreview:
        """The custom resource's create (a custom job's JobSet), preceded by the Secret's when
        the job has secret envs (its values masked); before the job exists its id reads
        <job-id>. Misconfigured settings show the manifest without the cluster's card mapping
        and address (the review says what is wrong on submit). `training_api`: the kind a job
        was created as (Job.training_api), whatever KUBERNETES_TRAINING_API says now."""
        try:
            config = self._config()
        except BackendError:
            cluster, server = M.Cluster(), ""
        else:
            cluster, server = config.cluster, config.server
        if training_api:
            cluster = replace(cluster, training_api=training_api)
        secret, job = self.manifests(
            spec, job_id=job_id or M.PREVIEW_JOB_ID, masked=True, cluster=cluster, owner=owner
        )
        namespace = namespace_of(spec.resource_pool_id)
        headers = {"Content-Type": "application/json"}
        before = ()
        if secret is not None:
            before = (
                RequestPreview(
                    method="POST",
                    path=f"{M.secret_path(namespace)}?fieldValidation=Strict",
                    headers=headers,
                    body=secret,
                    endpoint=server,
                    auth="bearer",
                ),
            )
        return RequestPreview(
            method="POST",
            path=f"{M.resource_path(spec.framework, namespace, training_api=cluster.training_api)}"
            "?fieldValidation=Strict",
            headers=headers,
            body=job,
            endpoint=server,
            auth="bearer",
            before=before,
        )

    def environment_preview(
        self,
        spec: spec_module.JobSpec,
        ref: ReplicaRef,
        *,
        job_id: str,
        group_task: tuple[int, int] | None = None,
        training_api: str = "",
    ) -> dict[str, str]:
        """What a pod finds: the operator's variables (its service names, in the pool's
        namespace) plus the ones the manifest sets (AIHC_JOB_ID, AIHC_ROLE, AIHC_ROLE_INDEX
        and PYTHONUNBUFFERED too, as the local runner sets them). A custom job's pods get the
        same generic variables as its local replicas; no addresses (the local runner gives
        none either: peers are reached at their JobSet hostnames), and JOB_COMPLETION_INDEX,
        which the Job controller sets in each pod of a role's Indexed Job (until qa67 the
        review left it out, though README names it as a pod's index)."""
        namespace = namespace_of(spec.resource_pool_id)
        name = M.object_name(spec, job_id)
        if not training_api:  # not created yet: as it would be now
            try:
                training_api = self._config().cluster.training_api
            except BackendError:
                training_api = ""
        if M.is_trainjob(spec.framework, training_api):
            return self._trainer_environment(
                spec, ref, name=name, job_id=job_id, group_task=group_task
            )
        env = replica_environment(
            spec,
            ref,
            job_id=job_id,
            master_addr=f"{name}-master-0",
            tf_address=lambda role, i: f"{name}-{role}-{i}.{namespace}.svc:{DEFAULT_TF_PORT}",
            group_task=shown_group_task(spec, group_task),
            masked=True,
        )
        if spec.framework == spec_module.CUSTOM:
            env["JOB_COMPLETION_INDEX"] = str(ref.index)
        if spec.framework == spec_module.MPI:
            env.update(_mpi_operator_environment(spec, ref))
            if ref.role != "master":
                # The MPI operator points only its launcher at the hostfile (qa68).
                env.pop("OMPI_MCA_orte_default_hostfile", None)
        return env

    @staticmethod
    def _trainer_environment(
        spec: spec_module.JobSpec,
        ref: ReplicaRef,
        *,
        name: str,
        job_id: str,
        group_task: tuple[int, int] | None,
    ) -> dict[str, str]:
        """What a TrainJob's node finds: the manifest's env and role (trainer_command) and what
        the torch plugin sets for torchrun (torch.go): PET_NNODES, PET_NPROC_PER_NODE,
        PET_NODE_RANK (the node's completion index: 0 the master, i+1 worker i),
        PET_MASTER_ADDR (node 0's JobSet hostname) and PET_MASTER_PORT, and the Job
        controller's JOB_COMPLETION_INDEX; and MASTER_ADDR, MASTER_PORT, RANK (the node's
        rank) and WORLD_SIZE (the node count), which the role line sets from the PET_* ones
        for commands written for AIHC (torchrun sets them afresh in each process it starts)."""
        env = replica_environment(
            spec, ref, job_id=job_id, group_task=shown_group_task(spec, group_task), masked=True
        )
        node = 0 if ref.role == "master" else ref.index + 1
        nodes = str(M.trainer_nodes(spec))
        master_addr = f"{name}-{M.TRAINER_NODE}-0-0.{name}"
        master_port = str(M.TRAINER_MASTER_PORT)
        env.update(
            {
                "PET_NNODES": nodes,
                "PET_NPROC_PER_NODE": str(M.trainer_processes(spec)),
                "PET_NODE_RANK": str(node),
                "PET_MASTER_ADDR": master_addr,
                "PET_MASTER_PORT": master_port,
                "JOB_COMPLETION_INDEX": str(node),
                "MASTER_ADDR": master_addr,
                "MASTER_PORT": master_port,
                "RANK": str(node),
                "WORLD_SIZE": nodes,
            }
        )
        return env

    # -- submission ----------------------------------------------------------------

    def _submitting(self, job: Job) -> str:
        return recorded(
            gettext_noop("Submitting to Kubernetes namespace %(namespace)s."),
            namespace=namespace_of(job.resource_pool),
        )

    def _create(
        self,
        job: Job,
        *,
        spec: spec_module.JobSpec,
        secrets: list[str],
        config: Config,
        client: KubeClient,
    ) -> None:
        namespace = namespace_of(job.resource_pool)
        if spec.privileged and namespace not in config.cluster.privileged_namespaces:
            # Allowed when it was submitted (check_spec), not any more: an approval or a
            # queue's wait can outlast the operator's setting.
            self._fail(job, recorded(PRIVILEGED_REFUSED), secrets)
            return
        # The namespace's Pod Security level as it is now: its admission refuses the pods, not
        # the job, which would sit Queued until its timeout.
        level = pod_security_level(client, namespace)
        if refused := pod_security_refusals(spec, level):
            self._fail(
                job, pod_security_refused(namespace, level, next(iter(refused.values()))), secrets
            )
            return
        # The training API is the job's from its first create on: a create tried again, and
        # every later read, Stop and Delete, ask for the same kind whatever the setting says now.
        if not job.training_api:
            job.training_api = config.cluster.training_api
            Job.objects.filter(pk=job.pk).update(training_api=job.training_api)
        secret, manifest = self.manifests(
            spec,
            job_id=job.public_id,
            cluster=replace(config.cluster, training_api=job.training_api),
            owner=job.owner.get_username(),
        )
        unanswered = unanswered_creates(job, (UNANSWERED_EVENT,)).count()
        if unanswered >= MAX_UNANSWERED_CREATES:
            # The last create's look went unanswered: looked for again, never a fifth create.
            self._look_after_last_create(
                job,
                client,
                secret,
                manifest,
                unanswered=unanswered,
                secrets=secrets,
                config=config,
            )
            return
        try:
            resource, adopted = self._create_with_secret(client, namespace, job, secret, manifest)
        except KubeError as exc:
            self._create_failed(
                job, exc, secrets, config, client=client, secret=secret, manifest=manifest
            )
            return
        except BackendError as exc:  # a name taken by an object that is not this job's
            self._fail(job, exc.message, secrets)
            return
        self._resume_submits(config)
        _note_uid(job, resource)
        self._accepted(job, manifest["metadata"]["name"], adopted=adopted)

    def _create_with_secret(
        self,
        client: KubeClient,
        namespace: str,
        job: Job,
        secret: dict[str, Any] | None,
        manifest: dict[str, Any],
    ) -> tuple[dict[str, Any], bool]:
        """Creates the job's Secret (if it has one), then its resource, each adopted when an
        earlier create of this job made it (_create_owned), then makes the resource own the
        Secret (_own_secret) unless it is an earlier run's (a restart's failed resource, back
        before this create: deleted again at the next sync). A create the API server refuses
        removes the Secret made for it (no job will use it) and raises, as one that got no
        answer does (sent again: the Secret is adopted); BackendError: a name taken by an
        object that is not this job's. The first create and a restart's (_create_again)."""
        secret_made = False  # by this job: made now, or adopted (it carries the job's id)
        try:
            if secret is not None:
                self._create_owned(client, M.secret_path(namespace), secret, job)
                secret_made = True
            resource, adopted = self._create_owned(
                client,
                M.resource_path(job.framework, namespace, training_api=job.training_api),
                manifest,
                job,
            )
        except KubeError as exc:
            if secret_made and _refused(exc):
                self._delete_quietly(client, M.secret_path(namespace, secret["metadata"]["name"]))
            raise
        if secret is not None and M.restart_of(resource) >= job.restarts:
            self._own_secret(client, namespace, secret, resource)
        return resource, adopted

    @staticmethod
    def _create_owned(
        client: KubeClient, path: str, body: dict[str, Any], job: Job
    ) -> tuple[dict[str, Any], bool]:
        """Creates the object; (it, False), or (it, True) when an earlier create of this job
        made it already (409 AlreadyExists, labelled with this job's id)."""
        try:
            return client.create(path, body), False
        except KubeError as exc:
            if exc.status != 409:
                raise
        name = body["metadata"]["name"]
        existing = client.get(f"{path}/{name}")
        labels = (existing.get("metadata") or {}).get("labels") or {}
        if labels.get(M.CONSOLE_JOB_LABEL) != job.public_id:
            raise BackendError(
                recorded(
                    gettext_noop(
                        "A %(kind)s named %(name)s already exists in namespace %(namespace)s "
                        "and is not this job's; it was left alone."
                    ),
                    kind=body["kind"],
                    name=name,
                    namespace=body["metadata"]["namespace"],
                ),
                code="AlreadyExists",
            )
        return existing, True

    @staticmethod
    def _own_secret(
        client: KubeClient, namespace: str, secret: dict[str, Any], resource: dict[str, Any]
    ) -> None:
        """The Secret goes when its job's resource is deleted (by the console, by hand or by
        ttlSecondsAfterFinished): an owner reference to it. Best effort."""
        meta = resource.get("metadata") or {}
        if not meta.get("uid"):
            return
        owner = {
            "apiVersion": resource.get("apiVersion"),
            "kind": resource.get("kind"),
            "name": meta.get("name"),
            "uid": meta["uid"],
        }
        try:
            client.merge_patch(
                M.secret_path(namespace, secret["metadata"]["name"]),
                {"metadata": {"ownerReferences": [owner]}},
            )
        except KubeError as exc:
            logger.warning(
                "owner reference on Secret %s not set: %s", secret["metadata"]["name"], exc
            )

    def _create_failed(
        self,
        job: Job,
        exc: KubeError,
        secrets: list[str],
        config: Config,
        *,
        client: KubeClient,
        secret: dict[str, Any] | None,
        manifest: dict[str, Any],
    ) -> None:
        if isinstance(exc, KubeUnavailable) or exc.status == 429:
            self._defer(
                job,
                exc,
                secrets,
                config=config,
                pause=SUBMIT_PAUSE,
                message=gettext_noop(
                    "Kubernetes could not take the job now (%(error)s). It stays "
                    "queued and is sent again in %(seconds)d s."
                ),
                stopped=recorded(STOP_REQUESTED),
            )
            return
        if _refused(exc) and exc.status == 404 and NO_SUCH_API in exc.message:
            # The API server has no such resource: its CRD (JobSet's, the training
            # operator's) is not installed. Said so, rather than only "not found".
            message = recorded(
                gettext_noop(
                    "The cluster does not serve %(kind)s (%(api)s): install it there first "
                    "(%(error)s)."
                ),
                kind=manifest["kind"],
                api=manifest["apiVersion"],
                error=recorded_error(exc),
            )
            self._fail(job, message, secrets)
            return
        if _refused(exc):
            self._fail(job, recorded_error(exc), secrets)
            return
        # No answer, or a server error: it may have been created. Sending the same create
        # again is safe (the name is the job's), so back to Queued, a few times at most.
        if isinstance(exc, KubeTimeout) and exc.cause.endswith("Timeout"):
            # A server that takes requests and does not answer them in time (not a dropped
            # connection, which costs nothing): the other queued jobs' creates would each
            # wait as long, one after another in the worker's remote thread (qa55, then in
            # its only loop: no local job was stopped or started meanwhile). They pause.
            delay = self._pause_submits(config, SUBMIT_PAUSE)
            logger.warning(
                "Kubernetes did not answer the create of %s; submits pause for %ds",
                job.public_id,
                delay,
            )
        unanswered = unanswered_creates(job, (UNANSWERED_EVENT,)).count() + 1
        job_event(
            job=job,
            reason=UNANSWERED_EVENT,
            message=scrub(
                recorded(
                    gettext_noop(
                        "Kubernetes gave no clear answer to the create (%(error)s); it is sent "
                        "again, and adopted if it was made."
                    ),
                    error=recorded_error(exc),
                ),
                secrets,
            ),
            warning=True,
        )
        if unanswered >= MAX_UNANSWERED_CREATES:
            # Until left42 the job was Submit failed here, though the API server may have
            # made the object (a 504 after it did), which then ran unwatched: looked for first.
            self._look_after_last_create(
                job,
                client,
                secret,
                manifest,
                unanswered=unanswered,
                secrets=secrets,
                config=config,
            )
            return
        if job.status == JobStatus.STOPPING:
            return  # sync looks for what was made, and deletes it
        self._move(job, JobStatus.QUEUED, "SubmitRetry", "")

    def _look_after_last_create(
        self,
        job: Job,
        client: KubeClient,
        secret: dict[str, Any] | None,
        manifest: dict[str, Any],
        *,
        unanswered: int,
        secrets: list[str],
        config: Config,
    ) -> None:
        """After the last create that got no clear answer, the job's object is looked for by
        its name (the job's own, as AIHC's _settled_by_looking looks by the job's label):
        found and this job's, it is adopted; the look unanswered, the job stays Queued saying
        so and the next round looks again; Submit failed only once an answered look shows
        none. No create is sent after the last. A look that got no answer at all (or was
        throttled, or the console's token was refused) pauses submits, as a create that did not reach the API server does
        (_defer): until review 49 the job was looked for at every pass of the worker, a
        second apart, two events each, and each look's tries held up the passes. A look the
        API server refused (403, a 5xx) waits for the job's own next look (_look_refused):
        until left46 it was made again at every pass too."""
        meta = manifest["metadata"]
        path = M.resource_path(
            job.framework, meta["namespace"], meta["name"], training_api=job.training_api
        )
        try:
            found = client.get(path)
        except KubeError as exc:
            if _not_found(exc):
                self._fail(
                    job,
                    recorded(
                        gettext_noop(
                            "Kubernetes gave no clear answer to the job's create requests "
                            "(%(n)d so far) and has no %(kind)s named %(name)s."
                        ),
                        n=unanswered,
                        kind=manifest["kind"],
                        name=meta["name"],
                    ),
                    secrets,
                )
                return
            if job.status == JobStatus.STOPPING:
                return  # sync looks for what was made (_finish_stop_in_flight), and deletes it
            # A 401 (KubeUnavailable: the console's token refused) refuses every call, not
            # this look: as no answer, not counted toward giving the job up (review56).
            unavailable = isinstance(exc, KubeUnavailable)
            if not (got_no_answer(exc) or unavailable or exc.status == 429):
                self._look_refused(
                    job,
                    exc,
                    secrets,
                    message=QUEUED_LOOK_REFUSED,
                    given_up=LOOKS_REFUSED_GIVEN_UP,
                    namespace=meta["namespace"],
                    kind=manifest["kind"],
                    name=meta["name"],
                )
                return
            delay = self._pause_submits(config, SUBMIT_PAUSE)
            logger.warning(
                "Kubernetes did not answer the look for %s after its last create; submits "
                "pause for %ds",
                job.public_id,
                delay,
            )
            reason = recorded(
                gettext_noop(
                    "Kubernetes gave no clear answer to the job's create requests (%(n)d so "
                    "far) and could not be asked to look for it: %(error)s."
                )
                if unavailable
                else gettext_noop(
                    "Kubernetes gave no clear answer to the job's create requests (%(n)d so "
                    "far) and did not answer the look for it: %(error)s."
                ),
                n=unanswered,
                error=recorded_error(exc),
            )
            then = recorded(
                gettext_noop(
                    "The job stays queued and is looked for again; it is not created again."
                )
            )
            self._move(
                job,
                JobStatus.QUEUED,
                "SubmitRetry",
                scrub(joined(reason, then), secrets),
                warning=True,
            )
            return
        labels = (found.get("metadata") or {}).get("labels") or {}
        if labels.get(M.CONSOLE_JOB_LABEL) != job.public_id:
            self._fail(
                job,
                recorded(
                    gettext_noop(
                        "A %(kind)s named %(name)s already exists in namespace %(namespace)s "
                        "and is not this job's; it was left alone."
                    ),
                    kind=manifest["kind"],
                    name=meta["name"],
                    namespace=meta["namespace"],
                ),
                secrets,
            )
            return
        if secret is not None:
            self._own_secret(client, meta["namespace"], secret, found)
        self._accepted(job, meta["name"], adopted=True)

    def _accepted(self, job: Job, name: str, *, adopted: bool) -> None:
        message = recorded(
            gettext_noop("Kubernetes had created %(name)s already; adopted it.")
            if adopted
            else gettext_noop("Kubernetes accepted the job as %(name)s."),
            name=name,
        )
        self._created(job, name, message=message)

    # A job left Submitting (the worker died mid-create) goes back to Queued (the base's
    # _reconcile_stuck): the next create finds what the first made (409, this job's label)
    # and adopts it.

    # -- following a job ---------------------------------------------------------------

    @staticmethod
    def _move(
        job: Job,
        to: str,
        reason: str,
        message: str,
        *,
        warning: bool = False,
        event: bool = True,
        **fields: Any,
    ) -> bool:
        """RemoteBackend's move, and the job's alert for it (ALERTED_MOVES), queued in the
        same transaction as the local pool's (jobs.runner): the move is conditional on the
        status seen, so one worker makes it, and a worker killed before the commit leaves
        both to the next sync, after it neither (the console sends a Kubernetes job's alerts
        itself, as a local job's: the cluster sends none)."""
        item = ALERTED_MOVES.get(to)
        if item == "jobRunning" and job.started_at is not None:
            # Running again after a whole-job restart or a Kueue suspension (Running, Queued,
            # Running): the job started once and says so once, as a local job (its
            # running_alert_due); a restart has its jobFT alert (review55 M2).
            item = None
        if item is None:
            return RemoteBackend._move(
                job, to, reason, message, warning=warning, event=event, **fields
            )
        with transaction.atomic():
            moved = RemoteBackend._move(
                job, to, reason, message, warning=warning, event=event, **fields
            )
            if moved:
                job_alert(job=job, item=item, message=alert_message(job, item, message))
        return moved

    def _names(self, job: Job) -> tuple[str, str, spec_module.JobSpec]:
        spec = job.job_spec()
        return namespace_of(job.resource_pool), M.object_name(spec, job.public_id), spec

    def _sync_remote(self, job: Job) -> None:
        config, client = self._setup()
        # Followed by the job's row, not its spec: the resource is named external_id, its pods
        # carry the job's id label, and its status is the resource's. The spec is None once
        # it no longer reads (job_spec_or_noted): followed without it all the same.
        spec = job_spec_or_noted(job=job, followed=FOLLOWED_WITHOUT_SPEC)
        namespace, framework = namespace_of(job.resource_pool), job.framework
        secrets = job.secret_values()
        trainjob = M.is_trainjob(framework, job.training_api)
        path = M.resource_path(framework, namespace, job.external_id, training_api=job.training_api)
        try:
            resource = client.get(path)
        except KubeError as exc:
            if not _not_found(exc):
                raise _sync_error(exc, secrets) from None
            if job.restart_begun_at is not None and job.status == JobStatus.RUNNING:
                # The failed resource of a restart is gone (deleted by this worker, or by one
                # killed before it could create the next): created again now.
                self._create_again(job, spec, config, client, namespace)
                return
            self._gone(job, spec, client, namespace)
            return
        if job.restart_begun_at is not None and job.status == JobStatus.RUNNING:
            if M.restart_of(resource) < job.restarts:
                # The failed resource, still there: its delete sent again at STOP_RESEND's
                # pace until it is gone (a delete that got no answer), nothing else read;
                # for STOP_PODS_WAIT at most, as its pods are waited for (_create_again): a
                # delete refused each time, or a finalizer no one removes, would keep the
                # job Running, holding its quota, for good. Counted from what the cluster
                # says, not from when the restart began: after a worker or API server down
                # that long, the delete may never have left (review53).
                left = recorded(
                    RESTART_RESOURCE_LEFT,
                    minutes=STOP_PODS_WAIT.seconds // 60,
                    kind=M.kind_of(framework, job.training_api).kind,
                    name=job.external_id,
                )
                deleted_at = kube_time((resource.get("metadata") or {}).get("deletionTimestamp"))
                if deleted_at is not None:  # the delete was taken; a finalizer holds it
                    if timezone.now() - deleted_at >= STOP_PODS_WAIT:
                        self._restart_failed(job, left)
                    return
                if self._stop_due(job, since=job.restart_begun_at):
                    if not self._failed_logs_kept(job):
                        # The worker that began the restart died before it kept them.
                        self._keep_failed_logs(job, client)
                        self._delete_sent_now(job)
                    refusal = self._send_delete(client, namespace, job.external_id, job)
                    if (
                        refusal is not None
                        and _refused(refusal)
                        and timezone.now() - job.restart_begun_at >= STOP_PODS_WAIT
                    ):
                        self._restart_failed(job, left)
                return
            # Created again by a worker that died before it said so: its Secret is owned by
            # the new resource as _create_again would have (else ttlSecondsAfterFinished
            # deletes the resource and leaves the Secret's values), then followed from now on.
            secret = (
                M.secret_manifest(
                    spec, name=job.external_id, namespace=namespace, job_id=job.public_id
                )
                if spec is not None
                else None
            )
            if secret is not None:
                self._own_secret(client, namespace, secret, resource)
            self._restart_made(job)
        _note_uid(job, resource)  # a restart's resource, or one adopted, is read here first
        roles = _roles(spec, resource)
        # A pods or events read that gets no answer ends the sync there (raised, as the job
        # read's): the platform stopped answering, and the worker's round leaves its other
        # jobs for the next one (review 36: each of these reads cost its timeouts, and the
        # round went on to wait on the next job). Decided: the status the job read gave is
        # not applied first. A status that ends the job ends its following, so the pods'
        # exit codes and the events saying why it ended would never be read; the next round
        # reads them all together. The instances saved before an events read stay: they are
        # what the pods were. Unless it is the job's second such sync in a row
        # (`_unanswered_again`): the status is saved without them, then the sync raises.
        unanswered: BackendError | None = None
        unanswered_read = "pods"
        try:
            pods = self._pods(job, client, namespace, secrets)
        except BackendError as exc:
            if not self._unanswered_again(job):
                raise
            unanswered, pods = exc, []
        if trainjob:
            # Trainer's JobSet restarts as a custom job's does (its runtime's failurePolicy),
            # but a TrainJob's status has no count of it (trainjob_types.go): the current
            # attempt is the newest its pods carry (the JobSet makes the next attempt's Jobs
            # once the last one's are deleted).
            pods = current_attempt_pods(pods, max(map(_attempt_of, pods), default=0))
        elif framework == spec_module.CUSTOM:
            # A restarted JobSet's old pods may still be going: only the current attempt's.
            pods = current_attempt_pods(
                pods, _count((resource.get("status") or {}).get("restarts"))
            )
        events: list[tuple[str, str, dict[str, Any]]] | None = None
        if unanswered is None:  # (the instances stay as they were: no list to go by)
            self._sync_replicas(job, roles, pods)
            try:
                events = self._sync_events(job, client, namespace, resource, pods, secrets)
            except BackendError as exc:
                if not self._unanswered_again(job):
                    raise
                unanswered, unanswered_read = exc, "events"
            else:
                self._answered(job)
        if job.status == JobStatus.STOPPING:
            # Whatever the operator writes while the pods go (a killed master reads Failed),
            # the job is Stopping until the resource is gone.
            if not (resource.get("metadata") or {}).get("deletionTimestamp") and self._stop_due(
                job, since=job.updated_at
            ):
                self._send_delete(client, namespace, job.external_id, job)
            if unanswered is not None:
                raise unanswered
            return
        if trainjob:
            target, condition, said = status_from_trainjob(resource, pods)
        elif framework == spec_module.CUSTOM:
            target, condition, said = status_from_jobset(resource, pods)
        else:
            target, condition, said = status_from_conditions(resource)
            if (
                target == JobStatus.QUEUED
                and condition != "Suspended"
                and job.status == JobStatus.RUNNING
                and M.restart_of(resource)
                and not self._pods_refused(spec, pods, events, resource)
            ):
                # A restart's new resource whose pods are being made: the job stays Running
                # through its restart, as the local pool's does (Kueue holding it, Suspended,
                # is Queued; so is one whose pods the cluster refuses, saying why, as a new
                # job: training-operator starts no deadline then, and it ran on for ever).
                target = JobStatus.RUNNING
        if target != job.status:
            message = recorded(
                gettext_noop("Kubernetes reports %(condition)s: %(message)s")
                if said
                else gettext_noop("Kubernetes reports %(condition)s."),
                condition=condition or "Created",
                message=scrub(said, secrets),
            )
            if target == JobStatus.FAILED:
                if self._restart_due(job, spec, resource) and self._begin_restart(
                    job, spec, client, namespace, why=message
                ):
                    return
                if (
                    spec is not None
                    and M.console_restarts(resource)
                    and 0 < M.retries(spec) <= job.restarts
                ):
                    message = recorded(RESTARTS_USED_UP, failure=message, limit=M.retries(spec))
            self._walk(
                job,
                target,
                message,
                reason="TimedOut" if target == JobStatus.TIMED_OUT else "",
            )
        if target == JobStatus.QUEUED == job.status and events is not None:
            self._say_pods_not_created(job, spec, pods, events, secrets, resource)
        if unanswered is not None:
            logger.warning(
                "%s: status saved without its %s, which got no answer in %d syncs in a row",
                job.public_id,
                unanswered_read,
                UNANSWERED_SYNCS_BEFORE_STATUS,
            )
            raise unanswered
        if job.status == JobStatus.RUNNING:
            self._sample_usage(job, roles, config, client, namespace, pods)

    # -- fault-tolerance restarts (the console's: M.console_restarts) ---------------------

    @staticmethod
    def _restart_due(job: Job, spec: spec_module.JobSpec | None, resource: dict[str, Any]) -> bool:
        """Whether the console restarts a failed job: fault tolerance on, a training-operator
        job sent with backoffLimit 0, fewer restarts than its limit made, and time left of
        its limit, counted from its first start as on the local pool. Else it ends Failed
        (a JobSet restarts itself; with no time left the restart would time out at once)."""
        if (
            spec is None
            or not spec.fault_tolerance
            or job.framework not in M.KINDS
            or M.is_trainjob(job.framework, job.training_api)
            or not M.console_restarts(resource)
            or job.restarts >= M.retries(spec)
        ):
            return False
        now = timezone.now()
        return (job.started_at or now) + timedelta(minutes=spec.timeout_minutes) > now

    def _begin_restart(
        self,
        job: Job,
        spec: spec_module.JobSpec,
        client: KubeClient,
        namespace: str,
        *,
        why: str,
    ) -> bool:
        """Counts the restart (Job.restarts, as the local pool counts its attempts), says it
        (a Restarted event with the operator's reason, as the local pool's), and deletes the
        failed resource; the job stays Running, and the next syncs create it again once it
        is gone (_create_again). False, nothing done: a stop was sent meanwhile (it wins),
        or another worker began this restart."""
        now = timezone.now()
        with transaction.atomic():
            if job.status == JobStatus.QUEUED:  # it ran and failed between two syncs
                self._walk(job, JobStatus.RUNNING, "")
            begun = Job.objects.filter(
                pk=job.pk,
                status=JobStatus.RUNNING,
                restarts=job.restarts,
                restart_begun_at__isnull=True,
                stop_sent_at__isnull=True,
            ).update(restarts=F("restarts") + 1, restart_begun_at=now, updated_at=now)
            if not begun:
                return False
            job.refresh_from_db()
            restarting = recorded(RESTARTING, n=job.restarts, limit=M.retries(spec), why=why)
            job_event(job=job, reason="Restarted", message=restarting, warning=True)
            # Committed with the restart's count: once per restart, as the local pool's.
            job_alert(job=job, item="jobFT", message=restarting)
        self._keep_failed_logs(job, client)
        # The restart's bounds (its pods' 5 minutes, a delete refused) count from its delete,
        # not from before the keep, which may take a while (review55 M5).
        self._stops_sent[job.pk] = self._delete_sent_now(job)
        # Its error is not said: a resource still there is deleted again at the next syncs.
        self._send_delete(client, namespace, job.external_id, job)
        return True

    @staticmethod
    def _delete_sent_now(job: Job) -> datetime:
        """Stamps the restart begun (Job.restart_begun_at) with now, as its delete is sent."""
        now = timezone.now()
        Job.objects.filter(pk=job.pk, restart_begun_at__isnull=False).update(restart_begun_at=now)
        job.restart_begun_at = now
        return now

    def _keep_failed_logs(self, job: Job, client: KubeClient) -> None:
        """Keeps the logs of the failed run's pods (kept_log_file), which the restart's delete
        removes with them: of each, its last MAX_TAIL_BYTES, as a page's tail reads it, after
        its run's banner, secrets masked. A pod or log the API server does not give (gone, an
        error, no answer) is said in one warning event, and the restart goes on: a failed
        job's restart must not wait on its logs. Each replica kept, and the keep's end, is
        recorded (kept_replicas): a keep begun again skips those kept."""
        namespace = namespace_of(job.resource_pool)
        # The failed run's (the first run is attempt 1).
        record = keep_record_file(job.public_id, job.restarts)
        missing: list[str] = []
        error = ""
        # The job's folder is made once, while the job is there; a Delete meanwhile removes it
        # (delete), and what is left of the keep then writes nothing: opened, never made again,
        # the folder is not left behind for good (review55 M4).
        if not Job.objects.filter(pk=job.pk).exists():
            return
        try:
            record.parent.parent.mkdir(mode=0o750, parents=True, exist_ok=True)
            record.parent.mkdir(mode=0o750, exist_ok=True)
        except OSError as exc:
            error = exc.strerror or str(exc)
        try:
            pods = client.list(
                f"/api/v1/namespaces/{namespace}/pods",
                label_selector=f"{M.CONSOLE_JOB_LABEL}={job.public_id}",
            )
        except KubeError as exc:
            self._logs_not_kept(job, recorded(KEPT_LOGS_UNLISTED, error=recorded_error(exc)))
            with contextlib.suppress(OSError):  # said: not kept again by the next worker
                append_kept(record, [KEEP_DONE])
            return
        # The whole keep, its log reads included, is bounded as a whole-log download is: a
        # failed job's restart must not wait on its logs (review55 M5). The replicas whose
        # turn comes after are named in the LogsNotKept event.
        seconds = settings.LOG_DOWNLOAD_TOTAL_SECONDS
        deadline = time.monotonic() + seconds
        was = client.deadline
        if client.call_seconds is None:  # (a client has one or the other)
            client.deadline = deadline
        try:
            missing, error = self._keep_pods_logs(job, client, pods, record, deadline, error)
        except FileNotFoundError:
            return  # the job was deleted meanwhile: its folder went, and its logs with it
        finally:
            client.deadline = was
        if missing:
            said = recorded(KEPT_LOGS_NOT_KEPT, replicas=", ".join(sorted(missing)), error=error)
            self._logs_not_kept(job, said)
        with contextlib.suppress(OSError):  # (not recorded: the next keep tries again)
            append_kept(record, [KEEP_DONE])

    @staticmethod
    def _keep_pods_logs(
        job: Job,
        client: KubeClient,
        pods: list[dict[str, Any]],
        record: Path,
        deadline: float,
        error: str,
    ) -> tuple[list[str], str]:
        """Keeps each pod's log not kept yet; the replicas not kept, and the first error.
        Raises FileNotFoundError once the job's folder is gone (a Delete)."""
        namespace, secrets = namespace_of(job.resource_pool), job.secret_values()
        container = M.kind_of(job.framework, job.training_api).container
        attempt = job.restarts
        done = kept_replicas(job.public_id, attempt)
        missing: list[str] = []
        for pod in pods:
            place = M.pod_replica(job.framework, pod, training_api=job.training_api)
            name = str((pod.get("metadata") or {}).get("name") or "")
            if place is None or not name:
                continue
            label = f"{place[0]}-{place[1]}"
            if label in done:
                continue
            if error and not record.parent.is_dir():  # no folder to keep them in
                missing.append(label)
                continue
            if time.monotonic() >= deadline:
                missing.append(label)
                error = error or recorded(
                    KEPT_LOGS_TIME_UP, seconds=f"{settings.LOG_DOWNLOAD_TOTAL_SECONDS:g}"
                )
                continue
            kept = AnswerTail()
            try:
                client.pod_log(namespace, name, container=container, into=kept)
            except KubeError as exc:
                missing.append(label)
                error = error or recorded_error(exc)
                continue
            started = kube_time((pod.get("status") or {}).get("startTime"))
            lines = [attempt_banner(label, attempt, started)]
            lines += [unmarked(scrub(line, secrets)) for line in kept.lines()]
            try:
                append_kept(kept_log_file(job.public_id, label), lines)
                append_kept(record, [label])
            except FileNotFoundError:
                raise  # its folder removed by a Delete: the keep ends (the caller)
            except OSError as exc:
                missing.append(label)
                error = error or (exc.strerror or str(exc))
        return missing, error

    @staticmethod
    def _failed_logs_kept(job: Job) -> bool:
        """Whether the failed run's logs were kept already (its keep recorded its end) or said
        not to be (a LogsNotKept event since the restart began)."""
        if job.events.filter(reason="LogsNotKept", created_at__gte=job.restart_begun_at).exists():
            return True
        return KEEP_DONE in kept_replicas(job.public_id, job.restarts)

    @staticmethod
    def _logs_not_kept(job: Job, message: str) -> None:
        job_event(
            job=job,
            reason="LogsNotKept",
            message=scrub(message, job.secret_values()),
            warning=True,
        )

    def _create_again(
        self,
        job: Job,
        spec: spec_module.JobSpec | None,
        config: Config,
        client: KubeClient,
        namespace: str,
    ) -> None:
        """Creates the job's resource (and Secret) again for the restart begun, once the
        failed one's pods are gone too: they carry the names the operator gives the new
        ones. The create is the first's, idempotent by name (409 on this job's object:
        adopted), so a worker killed before or after it does no harm; the restart's label
        tells the new resource from the failed one. A stop sent meanwhile wins: nothing is
        created (the next sync ends the job Stopped, _gone), or what was is deleted."""
        begun = job.restart_begun_at or timezone.now()
        secrets = job.secret_values()
        left = sorted(
            name
            for pod in self._pods(job, client, namespace, secrets)
            if (name := str((pod.get("metadata") or {}).get("name") or ""))
        )
        if left:
            if timezone.now() - begun < STOP_PODS_WAIT:
                return  # its pods are terminating
            self._restart_failed(
                job,
                recorded(
                    RESTART_PODS_LEFT,
                    minutes=STOP_PODS_WAIT.seconds // 60,
                    pods=", ".join(left),
                ),
            )
            return
        if spec is None:
            self._restart_failed(job, recorded(RESTART_WITHOUT_SPEC))
            return
        if self._stopped_or_deleted(job):
            return
        spec = with_group_task(spec, job)
        secret, manifest = self.manifests(
            spec,
            job_id=job.public_id,
            cluster=replace(config.cluster, training_api=job.training_api),
            owner=job.owner.get_username(),
        )
        deadline = (job.started_at or begun) + timedelta(minutes=spec.timeout_minutes)
        manifest = M.restarted(
            manifest,
            restart=job.restarts,
            seconds_left=int((deadline - timezone.now()).total_seconds()),
        )
        try:
            resource, _adopted = self._create_with_secret(client, namespace, job, secret, manifest)
        except KubeError as exc:
            if not _refused(exc):  # sent again at the next sync, adopted if it was made
                raise _sync_error(exc, secrets) from None
            self._restart_failed(
                job, scrub(recorded(RESTART_REFUSED, error=recorded_error(exc)), secrets)
            )
            return
        except BackendError as exc:  # a name taken by an object that is not this job's
            self._restart_failed(job, scrub(exc.message, secrets))
            return
        if M.restart_of(resource) < job.restarts:
            return  # (the failed one, back before this create: deleted again at the next sync)
        self._restart_made(job)
        if self._stopped_or_deleted(job):  # stopped (or deleted) while the create was out
            self._send_delete(client, namespace, job.external_id, job)

    @staticmethod
    def _stopped_or_deleted(job: Job) -> bool:
        """A stop was sent (it wins over a restart), or the job was deleted meanwhile."""
        return not Job.objects.filter(pk=job.pk, stop_sent_at__isnull=True).exists()

    @staticmethod
    def _restart_made(job: Job) -> None:
        """The restart's resource exists: followed as the job's from now on, its instances
        waiting for their new pods."""
        Job.objects.filter(pk=job.pk).update(restart_begun_at=None)
        job.restart_begun_at = None
        JobReplica.objects.filter(job=job).update(
            status=ReplicaStatus.PENDING, exit_code=None, finished_at=None
        )

    def _restart_failed(self, job: Job, message: str) -> None:
        """The restart cannot be made: the job ends Failed, saying why; or, stopped meanwhile,
        Stopped (the next sync: _gone)."""
        Job.objects.filter(pk=job.pk).update(restart_begun_at=None)
        job.restart_begun_at = None
        if not self._stopped_or_deleted(job):
            self._walk(job, JobStatus.FAILED, message)

    @staticmethod
    def _pods_refused(
        spec: spec_module.JobSpec | None,
        pods: list[dict[str, Any]],
        events: list[tuple[str, str, dict[str, Any]]] | None,
        resource: dict[str, Any],
    ) -> dict[str, str] | None:
        """The newest refusal of the job's pods while some are missing (pods_not_created),
        a restart's own only; None when they are all made or the events were not read."""
        if events is None or len(pods) >= (sum(r.replicas for r in spec.roles) if spec else 1):
            return None
        created = kube_time((resource.get("metadata") or {}).get("creationTimestamp"))
        return pods_not_created(events, since=created if M.restart_of(resource) else None)

    def _say_pods_not_created(
        self,
        job: Job,
        spec: spec_module.JobSpec | None,
        pods: list[dict[str, Any]],
        events: list[tuple[str, str, dict[str, Any]]],
        secrets: list[str],
        resource: dict[str, Any],
    ) -> None:
        """A Queued job's reason says why its operator cannot create its pods while some
        are missing and the newest refusal of one is in its events, and says it no more
        once they are all made (the refusals stay in the events for an hour). Its status
        and its time in it stay as they are."""
        missing = len(pods) < (sum(r.replicas for r in spec.roles) if spec else 1)
        refusal = self._pods_refused(spec, pods, events, resource)
        ours = (job.status_reason_source or {}).get("key") == PODS_NOT_CREATED
        if refusal is not None:
            said = recorded(PODS_NOT_CREATED, **{k: scrub(v, secrets) for k, v in refusal.items()})
        elif ours and not missing:
            said = ""
        else:
            return
        if str(said) == job.status_reason and source_of(said) == job.status_reason_source:
            return
        Job.objects.filter(pk=job.pk, status=job.status).update(
            status_reason=str(said), status_reason_source=source_of(said)
        )
        job.status_reason, job.status_reason_source = str(said), source_of(said)

    def sync(self, job: Job) -> None:
        super().sync(job)
        if job.status != JobStatus.RUNNING:  # sampled no more
            for key in [k for k in self._usage_logs if k[0] == job.public_id]:
                del self._usage_logs[key]

    # -- usage -------------------------------------------------------------------------

    def _sample_usage(
        self,
        job: Job,
        roles: set[str],
        config: Config,
        client: KubeClient,
        namespace: str,
        pods: list[dict[str, Any]],
    ) -> None:
        """Appends a sample per running pod of the job whose PodMetrics is newer than its
        replica's last sample."""
        running: dict[str, str] = {}  # pod name -> replica label
        for pod in pods:
            which = M.pod_replica(job.framework, pod, roles=roles, training_api=job.training_api)
            name = str((pod.get("metadata") or {}).get("name") or "")
            phase = str((pod.get("status") or {}).get("phase") or "").lower()
            if which is not None and name and PHASES.get(phase) == ReplicaStatus.RUNNING:
                running[name] = f"{which[0]}-{which[1]}"
        if not running:
            return
        found = self._namespace_metrics(config, client, namespace)
        for name, label in running.items():
            sample = usage_sample(found.get(name) or {}, window=config.metrics_seconds)
            if sample is None:
                continue
            key = (job.public_id, label)
            if key not in self._usage_logs:
                path = usage_file(job.public_id, label)
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    logger.warning("usage of %s not kept: %s", job.public_id, exc)
                    return
                last = read_usage(path, last=1)
                self._usage_logs[key] = (UsageLog(path), last[-1]["t"] if last else 0.0)
            log, last_time = self._usage_logs[key]
            if sample["t"] <= last_time:
                continue  # metrics-server has not scraped the pod again since
            log.append(sample)
            self._usage_logs[key] = (log, sample["t"])

    def _namespace_metrics(
        self, config: Config, client: KubeClient, namespace: str
    ) -> dict[str, dict[str, Any]]:
        """The namespace's PodMetrics of console pods by pod name, read at most once per
        KUBERNETES_METRICS_SECONDS (a read that failed too): {} when they cannot be read;
        BackendError when the API server did not answer (the job's status is saved by then)."""
        key = (*config.key(), namespace)
        with self._lock:
            read_at, found = self._pod_metrics.get(key, (float("-inf"), {}))
        if time.monotonic() - read_at < config.metrics_seconds:
            return found
        found = {}
        try:
            items = client.list(
                POD_METRICS_PATH.format(namespace=namespace), label_selector=M.CONSOLE_JOB_LABEL
            )
        except KubeError as exc:
            if got_no_answer(exc):
                with self._lock:  # not asked again before its time either
                    self._pod_metrics[key] = (time.monotonic(), found)
                raise _sync_error(exc, []) from None
            if exc.status not in (403, 404):
                logger.info(
                    "Kubernetes pod metrics of %s not read: %s", namespace, logged_error(exc)
                )
            elif key not in self._metrics_said:
                self._metrics_said.add(key)
                logger.warning(
                    "Kubernetes: %s in %s (%s); its jobs show no resource usage",
                    "the console may not list pods.metrics.k8s.io"
                    if exc.status == 403
                    else "the Metrics API (metrics-server) is not served",
                    namespace,
                    logged_error(exc),
                )
        else:
            self._metrics_said.discard(key)
            for item in items:
                name = (item.get("metadata") or {}).get("name")
                if isinstance(name, str):
                    found[name] = item
        with self._lock:
            self._pod_metrics[key] = (time.monotonic(), found)
        return found

    def _gone(
        self, job: Job, spec: spec_module.JobSpec | None, client: KubeClient, namespace: str
    ) -> None:
        # Also a job the worker read as running whose stop the web sent meanwhile: gone for
        # the stop's doing, though Stopping may not be saved yet (stop_sent_at is, first).
        stopping = (
            job.status == JobStatus.STOPPING
            or Job.objects.filter(pk=job.pk, stop_sent_at__isnull=False).exists()
        )
        if stopping:
            message = recorded(gettext_noop("Kubernetes deleted %(name)s."), name=job.external_id)
            left = sorted(
                name
                for pod in self._pods(job, client, namespace, job.secret_values())
                if (name := str((pod.get("metadata") or {}).get("name") or ""))
            )
            if left:
                since = (
                    Job.objects.filter(pk=job.pk).values_list("stop_sent_at", flat=True).first()
                    or job.updated_at
                )
                if timezone.now() - since < STOP_PODS_WAIT:
                    return  # Stopping while its pods terminate
                message = recorded(
                    gettext_noop(
                        "Kubernetes deleted %(name)s; after %(minutes)d minutes these of its "
                        "pods are still terminating: %(pods)s. Their node may not be ready: "
                        "what they hold there is not free until they are gone."
                    ),
                    name=job.external_id,
                    minutes=STOP_PODS_WAIT.seconds // 60,
                    pods=", ".join(left),
                )
        elif spec is not None and spec.retention_period:
            message = recorded(
                gettext_noop(
                    "Kubernetes no longer has %(name)s. It was to be deleted %(period)s after it "
                    "ended: it probably ended and was deleted while the console was not "
                    "following it, so how it ended is unknown."
                ),
                name=job.external_id,
                period=spec.retention_period,
            )
        else:
            message = recorded(
                gettext_noop(
                    "Kubernetes no longer has %(name)s: it may have been deleted outside the "
                    "console (with kubectl, by a TTL, or with its namespace), so how it ended "
                    "is unknown."
                ),
                name=job.external_id,
            )
        self._walk(
            job,
            JobStatus.STOPPED if stopping else JobStatus.FAILED,
            message,
            reason="" if stopping else "Lost",
        )
        if job.status in FINAL_STATUSES:
            self._delete_quietly(client, M.secret_path(namespace, M.secret_name(job.external_id)))

    def _finish_stop_in_flight(self, job: Job) -> None:
        """Stopped while a create got no clear answer: the resource is looked for by the job's
        id label (not its spec-derived name, so a job whose spec no longer reads is found
        too); found, it is adopted and deleted; else the job is Stopped. A look the API server
        refuses (403, a 5xx) waits for the job's own next look, and after an hour of them the
        job is Stopped saying where to look (_look_refused; until left48 it was looked for at
        every sync, for ever)."""
        if timezone.now() - job.updated_at < STUCK_SUBMITTING or not self._look_due(job):
            return
        try:
            config, client = self._setup()
            # The job's row, not its spec: the pool's namespace and the framework's kind.
            found = client.list(
                M.resource_path(
                    job.framework,
                    namespace_of(job.resource_pool),
                    training_api=job.training_api,
                ),
                label_selector=f"{M.CONSOLE_JOB_LABEL}={job.public_id}",
            )
        except KubeError as exc:
            # A 401 (the console's token refused) is no refusal of this look: the job stays
            # Stopping, looked for again once the token is renewed (review56).
            if got_no_answer(exc) or isinstance(exc, KubeUnavailable):
                raise _sync_error(exc, job.secret_values()) from None
            if not _not_found(exc):
                if exc.status != 429:  # throttled: asked again at the next sync
                    self._look_refused(
                        job,
                        exc,
                        job.secret_values(),
                        stays=True,
                        message=gettext_noop(
                            "Kubernetes refused the look for the job its creates may have made, "
                            "to delete it: %(error)s. The job stays stopping and is looked for "
                            "again at %(time)s."
                        ),
                        given_up=STOP_LOOKS_REFUSED_GIVEN_UP,
                        namespace=namespace_of(job.resource_pool),
                        kind=M.kind_of(job.framework, job.training_api).kind,
                        label=f"{M.CONSOLE_JOB_LABEL}={job.public_id}",
                    )
                return
            found = []
        except BackendError:
            return
        # Decided: the console makes one resource a job; should a second ever carry the
        # label, the first is adopted and deleted, and the next sync finds the other.
        name = next((n for item in found if (n := (item.get("metadata") or {}).get("name"))), "")
        if not name:
            self._move(
                job,
                JobStatus.STOPPED,
                "Stopped",
                recorded(gettext_noop("Stopped before Kubernetes created the job.")),
            )
            return
        self._adopt(
            job,
            name,
            message=recorded(
                gettext_noop("Kubernetes had created %(name)s already; adopted it."), name=name
            ),
        )
        self.stop(job)

    @staticmethod
    def _pods(
        job: Job, client: KubeClient, namespace: str, secrets: list[str]
    ) -> list[dict[str, Any]]:
        """The job's pods; none when the API server refuses the list (its status still
        comes through); BackendError when it did not answer."""
        try:
            return client.list(
                f"/api/v1/namespaces/{namespace}/pods",
                label_selector=f"{M.CONSOLE_JOB_LABEL}={job.public_id}",
            )
        except KubeError as exc:
            if got_no_answer(exc):
                raise _sync_error(exc, secrets) from None
            logger.info("pods of %s unavailable: %s", job.public_id, logged_error(exc))
            return []

    def _sync_replicas(self, job: Job, roles: set[str], pods: list[dict[str, Any]]) -> None:
        now = timezone.now()
        for pod in pods:
            which = M.pod_replica(job.framework, pod, roles=roles, training_api=job.training_api)
            if which is None:
                continue
            role, index = which
            status = pod.get("status") or {}
            phase = PHASES.get(str(status.get("phase") or "").lower(), ReplicaStatus.UNKNOWN)
            containers = status.get("containerStatuses") or []
            restarts = sum(int(c.get("restartCount") or 0) for c in containers)
            exit_code = next(
                (
                    c["state"]["terminated"].get("exitCode")
                    for c in containers
                    if (c.get("state") or {}).get("terminated")
                ),
                None,
            )
            self._update_replica(
                job,
                role,
                index,
                status=phase,
                started=kube_time(status.get("startTime")) or now,
                now=now,
                # The whole job's restarts by the console, each a new pod, and the pod's own.
                restarts=job.restarts + restarts,
                node=str((pod.get("spec") or {}).get("nodeName") or "")[:128],
                exit_code=exit_code,
                pod_name=str((pod.get("metadata") or {}).get("name") or "")[:253],
            )

    def _sync_events(
        self,
        job: Job,
        client: KubeClient,
        namespace: str,
        resource: dict[str, Any],
        pods: list[dict[str, Any]],
        secrets: list[str],
    ) -> list[tuple[str, str, dict[str, Any]]] | None:
        """Events of the resource, of its batch Jobs (a JobSet's, an MPIJob's launcher) and
        of its pods, copied once each, at their own time. A Job is where a pod refused at
        admission (over a ResourceQuota, PodSecurity) is said, by the Job controller's
        FailedCreate: no pod exists to carry it (the training operator, which makes its pods
        itself, says it on its own resource). The events read, (kind, name, event) each; None
        when the API server refused a read of them."""
        kind = M.kind_of(job.framework, job.training_api)
        objects = [(resource.get("kind") or kind.kind, job.external_id)]
        if kind is M.TRAINJOB:
            # Trainer runs a TrainJob as a JobSet of its name, its nodes one Job of it.
            objects += [("JobSet", job.external_id), ("Job", f"{job.external_id}-node-0")]
        elif job.framework == spec_module.CUSTOM:
            objects += [("Job", name) for name in jobset_job_names(resource)]
        elif job.framework == spec_module.MPI:
            # The MPI operator v2 runs the launcher as a batch Job named <mpijob>-launcher.
            objects.append(("Job", f"{job.external_id}-launcher"))
        objects += [
            ("Pod", str((pod.get("metadata") or {}).get("name") or ""))
            for pod in pods[:MAX_EVENT_PODS]
        ]
        read: list[tuple[str, str, dict[str, Any]]] = []
        for kind, name in objects:
            if not name:
                continue
            try:
                found = client.list(
                    f"/api/v1/namespaces/{namespace}/events",
                    field_selector=f"involvedObject.kind={kind},involvedObject.name={name}",
                )
            except KubeError as exc:
                if got_no_answer(exc):
                    raise _sync_error(exc, secrets) from None
                logger.info("events of %s unavailable: %s", job.public_id, logged_error(exc))
                return None
            read.extend((kind, name, event) for event in found)
        raw = [(name if kind in ("Pod", "Job") else "", event) for kind, name, event in read]
        existing = set(
            JobEvent.objects.filter(job=job, reason__startswith=EVENT_PREFIX).values_list(
                "reason", "message", "created_at"
            )
        )
        sent = self._first_sent(job)
        new: list[tuple[JobEvent, datetime]] = []
        for pod, event in raw:
            reason = f"{EVENT_PREFIX}{event.get('reason') or 'Event'}"[:64]
            text = str(event.get("message") or "").strip()
            message = scrub(f"{pod}: {text}" if pod else text, secrets)
            # When it first happened: an event Kubernetes counts again (a pod backing off,
            # count and lastTimestamp going up) is copied once, not at every sync.
            when = (
                kube_time(event.get("eventTime"))
                or kube_time(event.get("firstTimestamp"))
                or kube_time(event.get("lastTimestamp"))
                or kube_time((event.get("metadata") or {}).get("creationTimestamp"))
                or timezone.now()
            )
            when = max(when, sent)
            if (reason, message, when) in existing:
                continue
            existing.add((reason, message, when))
            kind = EventType.WARNING if event.get("type") == "Warning" else EventType.NORMAL
            new.append((JobEvent(job=job, reason=reason, message=message, type=kind), when))
        self._save_events(new)
        return read

    # -- actions -------------------------------------------------------------------

    def _send_delete(
        self, client: KubeClient, namespace: str, name: str, job: Job
    ) -> KubeError | None:
        """Deletes the resource and its Secret; the error, if the resource's delete did not
        take (404 counts as done). A TrainJob too is deleted, not suspended: the console's
        Stopped job never runs again. In the background: the resource goes at once and the
        garbage collector deletes its pods, which the job waits for (_gone, STOP_PODS_WAIT)."""
        try:
            client.delete(
                M.resource_path(job.framework, namespace, name, training_api=job.training_api),
                propagation="Background",
            )
        except KubeError as exc:
            if not _not_found(exc):
                return exc
        self._delete_quietly(client, M.secret_path(namespace, M.secret_name(name)))
        return None

    @staticmethod
    def _delete_quietly(client: KubeClient, path: str) -> None:
        try:
            client.delete(path, propagation="Background")
        except KubeError as exc:
            if not _not_found(exc):
                logger.warning("Kubernetes delete of %s failed: %s", path, logged_error(exc))

    def stop(self, job: Job, *, message: str = "") -> None:
        """Deletes the job's resource (`message`: see Backend.stop). A clear refusal (403, 422...) raises BackendError and
        leaves the job as it was, with a StopFailed event; a delete that got no clear answer
        is taken all the same (Stopping; sync sends it again while the resource is there)."""
        if job.status in FINAL_STATUSES:
            return
        if not job.external_id:
            # Kept for the Stopped it ends with once what a create made is gone (_gone).
            self._keep_stop_reason(job, message)
            if job.status == JobStatus.SUBMITTING:
                # The create is in flight: what it makes is deleted when it lands.
                self._move(job, JobStatus.STOPPING, "Stopping", recorded(STOP_REQUESTED))
            elif self.create_unsettled(job):
                # What a create with no clear answer made is looked for by the job's label,
                # and deleted (_finish_stop_in_flight). From the status the database gives if
                # the worker took it to send meanwhile (Submitting: what that create makes is
                # deleted when it lands); until review 50 the stop was lost so.
                self._stopping(job, self._stop_looking(job))
            else:
                self._move(job, JobStatus.STOPPED, "Stopped", message or recorded(STOP_REQUESTED))
            return
        # One short try, as a Delete's: a person's Stop waits on it (review45: the worker's
        # read timeout, 30 s, each job of a Stop selected in turn); no answer is taken all the
        # same (Stopping), and the worker's sync sends it again while the resource is there.
        # An answer still trickling in when the try's time is up is no answer (review 46).
        config, client = self._setup(for_action=True)
        # The job's row, not its spec, which may no longer read: Stop must still work.
        namespace, secrets = namespace_of(job.resource_pool), job.secret_values()
        now = timezone.now()
        self._stops_sent[job.pk] = now
        # In the database before the delete leaves: the worker's sync may find the resource
        # gone before this request saves Stopping, and then ends the job Stopped (_gone),
        # with the stop's reason.
        self._keep_stop_reason(job, message)
        Job.objects.filter(pk=job.pk).update(stop_sent_at=now)
        error = self._send_delete(client, namespace, job.external_id, job)
        if error is not None and _refused(error):
            Job.objects.filter(pk=job.pk).update(stop_sent_at=None)
            self._forget_stop_reason(job, message)
            self._stop_refused(
                job,
                error,
                secrets,
                message=gettext_noop("Kubernetes did not stop the job: %(error)s"),
            )
            raise _shown(gettext_noop("Kubernetes did not stop the job: %(error)s"), error, secrets)
        if job.status == JobStatus.STOPPING:
            return
        if error is not None:
            message = scrub(
                recorded(
                    # Answered with its own failure (a 5xx, 429): said so, not as no answer.
                    gettext_noop(
                        "Stop requested; Kubernetes answered it with an error (%(error)s). "
                        "The console sends it again until the job is deleted."
                    )
                    if error.status
                    else gettext_noop(
                        "Stop requested; Kubernetes did not answer it yet (%(error)s). The "
                        "console sends it again until the job is deleted."
                    ),
                    error=recorded_error(error),
                ),
                secrets,
            )
            self._stopping(job, message, warning=True)
            return
        self._stopping(job, recorded(STOP_REQUESTED))

    def delete(self, job: Job) -> str:
        """Removes the job's resource and Secret (the Secret only when it is this job's), and
        the usage samples the console kept of it; the Secret left for the worker, if any."""
        secret_left = self._delete_remote(job)
        self.delete_kept_files(job)
        return secret_left

    def delete_here(self, job: Job) -> str:
        self.delete_kept_files(job)
        # Its Secret (the secret env values), if it may have been made there, is left for the
        # worker to remove once Kubernetes is configured again (remove_secrets_left), as one the
        # API server did not answer about: never forgotten (review68).
        if not (job.external_id or self.create_unsettled(job)):
            return ""
        namespace, name, spec = self._names_to_delete(job)
        secret = _secret_made(name, spec)
        return f"{namespace}/{secret}" if secret else ""

    def _names_to_delete(self, job: Job) -> tuple[str, str, spec_module.JobSpec | None]:
        """_names, or for a spec that no longer reads the job's row: what was created is still
        deleted (its resource is named external_id), with whatever Secret it made."""
        try:
            return self._names(job)
        except spec_module.SpecError:
            return namespace_of(job.resource_pool), job.external_id, None

    @staticmethod
    def delete_kept_files(job: Job) -> None:
        """The usage samples and kept logs of a job being deleted. A keep of its logs under
        way meanwhile (another process's) makes nothing again (_keep_failed_logs)."""
        shutil.rmtree(Path(settings.VAR_DIR) / USAGE_DIR / job.public_id, ignore_errors=True)
        shutil.rmtree(Path(settings.VAR_DIR) / KEPT_LOGS_DIR / job.public_id, ignore_errors=True)

    def _delete_remote(self, job: Job) -> str:
        """A person's Delete waits on it (the job page's, the API's): each request is one try
        of KUBERNETES_PAGE_READ_TIMEOUT, given up however its answer comes once
        KUBERNETES_CONNECT_TIMEOUT more have passed (review 46). A resource delete that gets
        no answer keeps the job (its message says so: a Delete again finishes it). A Secret the API server does not
        answer about, once the resource is deleted, is left to the worker: its
        "<namespace>/<name>", returned (until session 33 its look took the worker's three
        tries of KUBERNETES_READ_TIMEOUT in the request, 91.5 s, and then let it be)."""
        config, client = self._setup(for_action=True)
        namespace, name, spec = self._names_to_delete(job)
        secrets = job.secret_values()
        if job.external_id:
            try:
                client.delete(
                    M.resource_path(
                        job.framework, namespace, job.external_id, training_api=job.training_api
                    ),
                    propagation="Background",
                )
            except KubeError as exc:
                if _not_found(exc):
                    pass  # nothing left to delete there
                elif not _refused(exc):
                    # No answer, or the API server's own failure or throttling, not a refusal:
                    # the API's 503 to send again, as AIHC's (until left41 a 409, read as a
                    # refusal; until review 48 no answer said "did not delete the job").
                    unclear = _shown(
                        gettext_noop(
                            "Kubernetes gave the delete no clear answer: %(error)s. The job is "
                            "kept here: delete it again in a moment, which finishes it whether "
                            "Kubernetes deleted it meanwhile or not."
                        ),
                        exc,
                        secrets,
                    )
                    unclear.try_again = True
                    raise unclear from None
                else:
                    raise _shown(
                        gettext_noop("Kubernetes did not delete the job: %(error)s"), exc, secrets
                    ) from None
        if secret := _secret_made(name, spec):
            try:
                self._delete_own_secret(client, namespace, secret, job.public_id)
            except KubeError as exc:
                logger.warning(
                    "Kubernetes did not answer about Secret %s/%s of deleted job %s (%s); "
                    "the worker removes it",
                    namespace,
                    secret,
                    job.public_id,
                    logged_error(exc),
                )
                return f"{namespace}/{secret}"
        return ""

    def _delete_own_secret(
        self, client: KubeClient, namespace: str, secret: str, public_id: str
    ) -> None:
        """Deletes the Secret when it is the job's (its id label); raises the KubeError of a
        look or delete that got no answer (got_no_answer): not known to be gone."""
        path = M.secret_path(namespace, secret)
        try:
            existing = client.get(path)
        except KubeError as exc:
            if got_no_answer(exc):
                raise
            return  # none (404), or not the console's to read
        labels = (existing.get("metadata") or {}).get("labels") or {}
        if labels.get(M.CONSOLE_JOB_LABEL) != public_id:
            return
        try:
            client.delete(path, propagation="Background")
        except KubeError as exc:
            if got_no_answer(exc):
                raise
            if not _not_found(exc):
                logger.warning("Kubernetes delete of %s failed: %s", path, logged_error(exc))

    def remove_secret_left(self, *, public_id: str, secret_left: str) -> None:
        """Removes the Secret a deletion of job `public_id` left (DeletedJob.secret_left), as
        the worker does once a minute: with its client (tries and the longer read timeout).
        Raises BackendError while the API server does not answer."""
        namespace, _sep, secret = secret_left.partition("/")
        config, client = self._setup()
        try:
            self._delete_own_secret(client, namespace, secret, public_id)
        except KubeError as exc:
            raise _sync_error(exc, []) from None

    def logs(
        self,
        job: Job,
        replica: str,
        *,
        tail: int | None = None,
        since: datetime | None = None,
        say_gone: bool = False,
    ) -> list[str]:
        """A replica's log lines ("worker-1"), read from its pod."""
        if not job.external_id:
            return []
        # A tail is what the job page and its log panel wait on; the whole log (tail None)
        # is a download a person waits on, holding a web thread meanwhile.
        # The runs a restart deleted first (kept_log_file), as a local replica's log has its
        # earlier attempts; not for a read from a time on (the API's follow), which is newer.
        earlier = (
            tail_lines(kept_log_file(job.public_id, replica), tail if tail is not None else 10**9)
            if since is None
            else []
        )
        config, client = self._setup(for_page=tail is not None, for_download=tail is None)
        current: list[str] = []
        try:
            pod, lines = self._pod_log(job, replica, client, tail=tail, since=since)
        except NoLog as no_log:
            if earlier:  # the next run's pod not made yet, or gone: the earlier runs show
                lines = []
            elif say_gone and no_log.gone:
                raise
            else:
                return []  # the page's "No output yet."
        else:
            if earlier and pod_run_kept(job, replica, pod):
                lines = []  # the failed run's pod, still there: its log is the kept one
            elif lines:
                current = [pod_banner(replica, pod)]
        finally:
            if tail is None:
                client.close()
        if not earlier:
            return lines
        lines = earlier + current + lines
        if tail is None:
            return lines
        return lines[-tail:] if tail else []

    def check_log(self, job: Job, replica: str) -> None:
        """The replica's pod looked up as a download finds it, its log not read: NoLog when
        there is none, its container is waiting to start, or it is not scheduled yet (what
        the API server's 400 says of a log read)."""
        if not job.external_id:
            raise NoLog
        if kept_log_file(job.public_id, replica).is_file():
            return  # its earlier runs' log at least (download_lines)
        config, client = self._setup(for_download=True)
        try:
            pod = self._replica_pod(job, replica, client)
        except KubeError as exc:
            raise _shown(
                gettext_noop("Kubernetes did not return the logs: %(error)s"),
                exc,
                job.secret_values(),
            ) from None
        finally:
            client.close()
        container = M.kind_of(job.framework, job.training_api).container
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        status = next((c for c in statuses if c.get("name") == container), None)
        if (
            not (pod.get("spec") or {}).get("nodeName")
            or status is None
            or ((status.get("state") or {}).get("waiting") and not status.get("restartCount"))
        ):
            # Not scheduled, or not started (a container restarted and waiting again still has
            # its last log).
            raise NoLog

    def download_lines(self, job: Job, replica: str) -> Iterable[str]:
        """The replica's whole log written to a temporary file as it comes (in memory up to
        DOWNLOAD_SPOOL_BYTES, on disk beyond), then given from it a line at a time, each
        masked as logs() masks it: the download holds a line, not the log (review 42: a log
        held whole and copied three times took several GB of a web thread for 1 GB). NoLog
        when the replica has no pod, or its container is waiting to start."""
        if not job.external_id:
            raise NoLog
        earlier = kept_log_file(job.public_id, replica)
        log = tempfile.SpooledTemporaryFile(max_size=DOWNLOAD_SPOOL_BYTES)  # noqa: SIM115
        try:
            config, client = self._setup(for_download=True)
            try:
                pod, _none = self._pod_log(job, replica, client, tail=None, since=None, into=log)
            finally:
                client.close()
        except NoLog:
            log.close()
            if not earlier.is_file():
                raise
            return earlier_runs_then(earlier, None)  # the next run's pod not made, or gone
        except BaseException:
            log.close()
            raise
        current = spooled_lines(log, job.secret_values())
        if not earlier.is_file():
            return current
        if pod_run_kept(job, replica, pod):  # the failed run's pod: its log is the kept one
            log.close()
            return earlier_runs_then(earlier, None)
        return earlier_runs_then(earlier, (pod_banner(replica, pod), current, log))

    def _pod_log(
        self,
        job: Job,
        replica: str,
        client: KubeClient,
        *,
        tail: int | None,
        since: datetime | None,
        into: BinaryIO | None = None,
    ) -> tuple[dict[str, Any], list[str]]:
        """The replica's pod and its log lines. Raises NoLog when the replica has no pod, or
        its container is waiting to start. Without `into` (a tail, not a download), of the
        answer only its last MAX_TAIL_BYTES are kept (AnswerTail), and of its lines the last
        `tail`."""
        # The job's row, not its spec, which may no longer read: its logs still show.
        namespace, secrets = namespace_of(job.resource_pool), job.secret_values()
        kept = AnswerTail() if into is None else None
        try:
            pod = self._replica_pod(job, replica, client)
            lines = client.pod_log(
                namespace,
                (pod.get("metadata") or {}).get("name"),
                container=M.kind_of(job.framework, job.training_api).container,
                tail=tail,
                since=since,
                into=into or kept,
            )
        except KubeError as exc:
            if exc.status == 400 and (
                WAITING_TO_START in exc.message or NO_HOST_ASSIGNED in exc.message
            ):
                # The container has not run yet (being created, its image pulled, its pod not
                # scheduled): a replica waiting to start, with no lines yet, as a local one
                # (qa55: an error before; left38: an unscheduled pod's download was a 503).
                raise NoLog from None
            raise _shown(
                gettext_noop("Kubernetes did not return the logs: %(error)s"), exc, secrets
            ) from None
        if kept is not None:
            lines = kept.lines()
            if tail is not None:
                lines = lines[-tail:] if tail else []
        # Never read as the runner's own lines (jobs.logs.unmarked).
        return pod, [unmarked(scrub(line, secrets)) for line in lines]

    def _replica_pod(self, job: Job, replica: str, client: KubeClient) -> dict[str, Any]:
        """The replica's pod ("worker-1"), by the job's id label; NoLog when there is none:
        not made yet, or, the job stopping or ended, gone (a stopped job's resource is
        deleted, and its pods with it)."""
        role, _sep, index = replica.rpartition("-")
        pods = client.list(
            f"/api/v1/namespaces/{namespace_of(job.resource_pool)}/pods",
            label_selector=f"{M.CONSOLE_JOB_LABEL}={job.public_id}",
        )
        for pod in pods:
            if (pod.get("metadata") or {}).get("name") and M.pod_replica(
                job.framework, pod, training_api=job.training_api
            ) == (
                role,
                int(index) if index.isdigit() else -1,
            ):
                return pod
        raise NoLog.pod_missing(job)


class AnswerTail:
    """Where a log's tail is written as the API server sends it (send_by's `into`), keeping
    its last MAX_TAIL_BYTES. The kubelet counts lines by "\\n" alone: of a progress bar
    redrawn after "\\r" for hours, or a tool that never ends its line, the last line, which
    any tail includes, is the whole log, and the job page's tail (polled every 2 s), its
    search and the admin's log view held all of it (session 34 left it: 200 MB a poll)."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.dropped = False

    def seek(self, offset: int, whence: int = 0) -> int:
        return 0  # send_by empties it before each try: seek(0), truncate()

    def truncate(self, size: int | None = None) -> int:
        self.data.clear()
        self.dropped = False
        return 0

    def write(self, chunk: bytes) -> int:
        self.data += chunk
        if len(self.data) > 2 * MAX_TAIL_BYTES:  # cut now and then, not at every chunk
            self._keep_last()
        return len(chunk)

    def _keep_last(self) -> None:
        if len(self.data) > MAX_TAIL_BYTES:
            del self.data[: len(self.data) - MAX_TAIL_BYTES]
            self.dropped = True

    def lines(self) -> list[str]:
        """The lines kept, split as a log's lines are here (at "\\n", "\\r\\n" and a redraw's
        "\\r"); when the answer was longer, from the first line that starts in what was
        kept (a redraw is one: the page shows the last), as a local tail drops its cut one."""
        self._keep_last()
        text = self.data.decode("utf-8", errors="replace")
        if self.dropped:
            first_end = re.search(r"\r\n|\n|\r", text)
            text = text[first_end.end() :] if first_end else ""
        return text.splitlines()


def backend() -> KubernetesBackend:
    return KubernetesBackend()
