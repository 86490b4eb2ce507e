"""The v1 <-> v2 CreateJob body mapping.

v1 (`POST /api/v1/aijobs`) is the console's canonical body (`JobSpec.to_v1_body()`). v2
(`POST /?action=CreateJob`) differs in four places:

- `jobFramework` is called `jobType`;
- the start command is top-level `command` instead of `jobSpec.command`;
- `queue` is required (and repeated as the `queueID` query parameter);
- there is no `faultToleranceConfig`, only the `faultToleranceArgs` flag string. The flag
  names follow the console's fault-tolerance options (hang detection, its log timeout
  and start-up toleration, unconditional retries, custom log patterns); Baidu documents the flags but not this
  correspondence, so it is our decision.

A v2 TFJob's `jobSpec` is a map keyed Chief/Worker/PS/Evaluator, one JobSpec per role; the
v1 body has one replica group, so that map is built from the spec's roles.

The other way (`v1_from_v2`) is how the console's own v2 CreateJob (jobs.api_v2) reads a v2
body into the v1 body it stores; a flag of `faultToleranceArgs` the console does not run is
refused there, not dropped.
"""

from __future__ import annotations

import copy
import shlex
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from jobs import spec as spec_module
from jobs.texts import list_words

V2_TF_ROLE_KEYS = {"chief": "Chief", "worker": "Worker", "ps": "PS", "evaluator": "Evaluator"}

_FT_FLAGS = (
    ("enabledHangDetection", "--enable-hang-detection"),
    ("hangDetectionTimeoutMinutes", "--hang-detection-log-timeout-minutes"),
    ("hangDetectionStartupTolerationMinutes", "--hang-detection-startup-toleration-minutes"),
    ("faultToleranceLimit", "--max-num-of-unconditional-retry"),
)
_PATTERN_FLAG = "--custom-log-patterns"


def fault_tolerance_args(config: dict[str, Any]) -> str:
    parts = []
    for key, flag in _FT_FLAGS:
        value = config.get(key)
        if value is None or value is False:
            continue
        parts.append(f"{flag}={str(value).lower() if isinstance(value, bool) else value}")
    for pattern in config.get("customFaultTolerancePattern") or []:
        parts.append(f"{_PATTERN_FLAG}={shlex.quote(pattern)}")
    return " ".join(parts)


def fault_tolerance_config(args: str) -> dict[str, Any]:
    """The faultToleranceConfig for a flag string; ValueError (its message names the flag) for
    one that is not text, cannot be split, or has a flag or value the console cannot run."""
    if not isinstance(args, str):
        raise ValueError(_("must be a string of --flag=value options"))
    config: dict[str, Any] = {"enabledHangDetection": False}
    patterns = []
    by_flag = {flag: key for key, flag in _FT_FLAGS}
    try:
        tokens = shlex.split(args)
    except ValueError:  # shlex's own message is English only ("No closing quotation")
        raise ValueError(
            _(
                "cannot be split into options: close its quotation marks, and end it "
                "without a lone \\"
            )
        ) from None
    unknown = list(
        dict.fromkeys(
            flag
            for flag in (token.partition("=")[0] for token in tokens)
            if flag != _PATTERN_FLAG and flag not in by_flag
        )
    )
    if unknown:
        # Found in QA 54: said in English on a Chinese page, where a team bringing AIHC's
        # documented example (--enable-replace, ...) over reads it. All at once (qa109: one
        # a try, --enable-replace, then --hang-detection-startup-toleration-minutes, ...).
        raise ValueError(
            ngettext(
                "%(flags)s is not one the console runs: remove it (the console runs %(known)s)",
                "%(flags)s are not ones the console runs: remove them (the console runs %(known)s)",
                len(unknown),
            )
            % {"flags": list_words(unknown), "known": list_words([*by_flag, _PATTERN_FLAG])}
        )
    for token in tokens:
        flag, equals, value = token.partition("=")
        if flag == _PATTERN_FLAG:
            patterns.append(value)
        elif by_flag[flag] == "enabledHangDetection":
            if value not in ("true", "false") and equals:
                raise ValueError(_("%(flag)s is true or false") % {"flag": flag})
            config["enabledHangDetection"] = value != "false"  # a bare flag turns it on
        elif not value.isdigit():
            raise ValueError(_("%(flag)s needs a whole number, like %(flag)s=3") % {"flag": flag})
        else:
            config[by_flag[flag]] = int(value)
    if patterns:
        config["customFaultTolerancePattern"] = patterns
    return config


def v2_from_v1(
    body: dict[str, Any], *, roles: list[spec_module.Role] | None = None
) -> dict[str, Any]:
    """The v2 CreateJob body for a v1 body (`roles` builds a TFJob's per-role map)."""
    v2 = copy.deepcopy(body)
    job_spec = v2.pop("jobSpec")
    framework = v2.pop("jobFramework", spec_module.PYTORCH)
    command = job_spec.pop("command", "")
    if framework == spec_module.TENSORFLOW and roles:
        job_spec = role_map(job_spec, roles, framework)
    ordered: dict[str, Any] = {
        "name": v2.pop("name"),
        "queue": v2.pop("queue", "default") or "default",
        "jobType": framework,
        "command": command,
        "jobSpec": job_spec,
    }
    ftc = v2.pop("faultToleranceConfig", None)
    ordered.update(v2)
    if ftc is not None:
        ordered["faultToleranceArgs"] = fault_tolerance_args(ftc)
    return ordered


# The v2 role key of each role but TensorFlow's (V2_TF_ROLE_KEYS): Kubeflow's PyTorchJob and
# MPIJob replica names, which role_name reads back (an MPIJob's Launcher is its master); a
# custom job's roles keep their own names.
V2_ROLE_KEYS = {
    spec_module.PYTORCH: {"master": "Master", "worker": "Worker"},
    spec_module.MPI: {"master": "Launcher", "worker": "Worker"},
}


def role_map(
    job_spec: dict[str, Any], roles: list[spec_module.Role], framework: str
) -> dict[str, Any]:
    """A v2 jobSpec keyed by role, each the flat `job_spec` with its role's own replicas and
    resources (roles without instances left out), as v2 CreateJob takes it (v1_from_v2)."""
    shared = {k: v for k, v in job_spec.items() if k not in ("replicas", "resources")}
    # Shared memory is the job's, not a role's: every role's resources carry it.
    shm = [
        res
        for res in job_spec.get("resources") or []
        if res.get("name") == spec_module.SHARED_MEMORY_RESOURCE
    ]
    keys = V2_TF_ROLE_KEYS if framework == spec_module.TENSORFLOW else V2_ROLE_KEYS.get(framework)
    return {
        (keys.get(role.name, role.name) if keys is not None else role.name): {
            **copy.deepcopy(shared),
            "replicas": role.replicas,
            "resources": spec_module._role_resources(role) + copy.deepcopy(shm),
        }
        for role in roles
        # A TFJob's map has AIHC's four keys only (a role of another name is refused anyway).
        if role.replicas and (framework != spec_module.TENSORFLOW or role.name in keys)
    }


def is_role_map(job_spec: Any) -> bool:
    """A v2 jobSpec keyed by role (a TFJob's Chief/Worker/PS/Evaluator), not one JobSpec."""
    return (
        isinstance(job_spec, dict)
        and bool(job_spec)
        and "image" not in job_spec
        and all(isinstance(v, dict) for v in job_spec.values())
    )


# An MPIJob's launcher, as Kubeflow's MPIJob names it (mpiReplicaSpecs Launcher/Worker, which
# the console's own Kubernetes manifest writes for its master), is the console's MPI master:
# a role map keyed so was refused, "MPI has no role named “launcher”" (qa68).
MPI_LAUNCHER_KEY = "launcher"


def role_name(key: str, framework: str = "") -> str:
    """The console's role for a v2 role key ("PS" -> "ps"; an MPIJob's "Launcher" -> "master")."""
    names = {v2: name for name, v2 in V2_TF_ROLE_KEYS.items()}
    name = names.get(key, key.lower())
    return "master" if framework == spec_module.MPI and name == MPI_LAUNCHER_KEY else name


# What each role of a role map (TFJob) has of its own in the console; every other field of a
# role (image, envs, imageConfig, ...) the console holds once for the whole job.
PER_ROLE_FIELDS = frozenset({"replicas", "resources"})


class RoleMapError(ValueError):
    """A role map whose roles differ where the console keeps one value for the job:
    (field path, message) pairs."""

    def __init__(self, problems: list[tuple[str, str]]):
        super().__init__("; ".join(f"{path}: {message}" for path, message in problems))
        self.problems = problems


def role_map_differences(job_spec: dict[str, Any]) -> list[tuple[str, str]]:
    """Where a role of a role map gives a field of its own (another image, its own envs) that
    the console keeps once per job, as the first role gives it. Found in QA: the second
    role's envs and image were dropped without a word (and its secrets, named by no other
    role, shown back unmasked after a refusal); AIHC runs each role with its own, which the
    console cannot, so such a body is refused, as a faultToleranceArgs flag it does not run
    is, rather than run otherwise than asked. A role that leaves a field out, or gives the
    first role's value (as the console's own v2 bodies do), takes the first role's."""
    (first_key, first), *others = job_spec.items()
    problems = []
    for key, group in others:
        for name, value in group.items():
            if name not in PER_ROLE_FIELDS and value != first.get(name):
                problems.append(
                    (
                        f"jobSpec.{key}.{name}",
                        _(
                            "Every role of a job runs with the %(field)s of its first role "
                            "(%(first)s) here: give it there only, or the same on each role."
                        )
                        % {"field": name, "first": first_key},
                    )
                )
    return problems


def v1_from_v2(body: dict[str, Any], *, loose: bool = False) -> dict[str, Any]:
    """The v1 body for a v2 one. A role map (TFJob) becomes one v1 replica group (the first
    role's spec, every role's replicas) plus `console.roles` with each role's own replicas and
    resources, which the console's spec reads as the truth; roles that differ elsewhere are
    refused (RoleMapError). Values of the wrong type are passed on as they are, for
    jobs.spec.parse_document to name. `loose`: neither refused nor faultToleranceArgs read
    (to find a refused body's secrets)."""
    v2 = copy.deepcopy(body)
    job_spec = v2.pop("jobSpec", None)
    if job_spec is None:
        job_spec = {}
    if is_role_map(job_spec):
        if not loose and (problems := role_map_differences(job_spec)):
            raise RoleMapError(problems)
        groups = list(job_spec.items())
        # A custom job's keys are the user's own role names, kept as typed: lowercased, a
        # "Trainer" ran as AIHC_ROLE=trainer, and a command that tells roles apart by the
        # name it gave matched none (qa67). The role name rule then refuses it, as the
        # wizard and v1's console.roles do. TFJob's keys are AIHC's (Chief -> chief).
        custom = v2.get("jobType") == spec_module.CUSTOM
        console = v2.get("console")
        if console is None or (isinstance(console, dict) and "roles" not in console):
            v2["console"] = {
                **(console or {}),
                "roles": [
                    {
                        "name": key if custom else role_name(key, v2.get("jobType", "")),
                        "replicas": group.get("replicas", 0),
                        "resources": group.get("resources") or [],
                    }
                    for key, group in groups
                ],
            }
        replicas = [group.get("replicas", 0) for _, group in groups]
        job_spec = dict(groups[0][1])
        if all(isinstance(n, int) and not isinstance(n, bool) for n in replicas):
            job_spec["replicas"] = sum(replicas)
    command = v2.pop("command", "")
    v1: dict[str, Any] = {
        "name": v2.pop("name", None),
        "queue": v2.pop("queue", "default"),
        "jobFramework": v2.pop("jobType", spec_module.PYTORCH),
        "priority": v2.pop("priority", "normal"),
        "jobSpec": {"command": command, **job_spec} if isinstance(job_spec, dict) else job_spec,
    }
    args = v2.pop("faultToleranceArgs", None)
    v1.update(v2)
    if args == "":  # DescribeJob's answer for a job without fault tolerance settings (qa105)
        args = None
    if args is not None and not loose:
        if v1.get("faultToleranceConfig") is not None:
            raise ValueError(both_fault_tolerance_forms())  # one would be dropped
        v1["faultToleranceConfig"] = fault_tolerance_config(args)
    return v1


def v1_fault_tolerance_args(body: dict[str, Any]) -> dict[str, Any]:
    """A v1 body with `faultToleranceArgs` (AIHC's Go SDK sends it in v1 too, "one of the
    two" with faultToleranceConfig) as the body with that faultToleranceConfig, read as v2
    reads it (fault_tolerance_config); ValueError when both are given, or for a flag the
    console does not run. The API and the import both read it so (a v1 body is not taken for
    a v2 one for having it)."""
    args, config = body.get("faultToleranceArgs"), body.get("faultToleranceConfig")
    if args is None:
        return body
    if args == "" or (isinstance(config, dict) and args == fault_tolerance_args(config)):
        # GetJob's answer sent back (qa105): it gives both forms of the same settings, and ""
        # for none; the config is read.
        return {key: value for key, value in body.items() if key != "faultToleranceArgs"}
    if config is not None:
        raise ValueError(both_fault_tolerance_forms())
    body = dict(body)
    body["faultToleranceConfig"] = fault_tolerance_config(body.pop("faultToleranceArgs"))
    return body


def both_fault_tolerance_forms() -> str:
    """A body giving faultToleranceConfig and faultToleranceArgs ("one of the two", AIHC's
    Go SDK says): said on faultToleranceArgs."""
    return _("give faultToleranceConfig or faultToleranceArgs, not both")
